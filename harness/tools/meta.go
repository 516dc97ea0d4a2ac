package tools

import "github.com/mark3labs/mcp-go/mcp"

// The keys of a tools/call request's _meta that say the conversation the
// call was made for. Part of what a tool server is sent (API.md, "What a
// tool server receives"): each call carries both, since a kept session
// serves every conversation of its agent and holds nothing of one.
const (
	MetaThread = "dev.lnk/thread" // the thread's name, as the message to the harness named it
	MetaAgent  = "dev.lnk/agent"  // the agent's name
)

// Conversation is the conversation a call was made for.
type Conversation struct {
	Agent  string
	Thread string
}

// ConversationOf returns the conversation a call says it was made for, and
// whether it says one: both keys present, each a string, the thread not
// empty. It is for tool servers, which read it without the call's
// arguments.
func ConversationOf(req mcp.CallToolRequest) (Conversation, bool) {
	m := req.Params.Meta
	if m == nil {
		return Conversation{}, false
	}
	thread, ok1 := m.AdditionalFields[MetaThread].(string)
	agent, ok2 := m.AdditionalFields[MetaAgent].(string)
	if !ok1 || !ok2 || thread == "" {
		return Conversation{}, false
	}
	return Conversation{Agent: agent, Thread: thread}, true
}

// callMeta is the _meta of a call made for thread: agent is the Set's
// agent's name, made an interface value once, so a call makes only the
// map and the thread's.
func callMeta(agent any, thread string) *mcp.Meta {
	return &mcp.Meta{AdditionalFields: map[string]any{MetaThread: thread, MetaAgent: agent}}
}
