// Package tools is Link Harness's MCP client: every tool is an MCP server
// at an address from the environment, and Link Harness runs no tool code of
// its own.
//
// The servers are LNK_TOOL_<NAME> (offered as <name>__<call>, so a team's
// LNK_TOOL_<TEAM>_MEMORY is <team>_memory__search), and LNK_MEMORY,
// LNK_SCHEDULER, LNK_RUN, LNK_FILE and LNK_CODE. An address whose path ends
// in /sse is spoken to over the HTTP+SSE transport, any other over
// streamable HTTP. The protocol version is pinned (ProtocolVersion), so a
// start pays the initialize handshake and no discovery probe.
//
// A Set is one agent's tools in one process: each tool's list of calls,
// and the sessions kept between turns (memory, run, file, code, the
// scheduler, the task and namespace servers, a team's memory), one for all
// of the agent's conversations, each ended once unused for Idle or MaxAge
// after it started. A Turn is what one turn offers and the sessions it opened
// of the other tools, ended with it. A session starts only when the model
// calls its tool, or when a tool was never listed.
//
// Every call says the conversation it was made for in its request's _meta
// (MetaThread, MetaAgent), since a kept session serves every conversation
// of the agent: a tool server reads it there without the call's arguments
// (ConversationOf), and one that fronts others passes it on.
//
// Every call is bounded: by its server's Timeout (LNK_TOOL_<NAME>_TIMEOUT),
// else Options.Call (DefaultCall, 2 minutes); past it the call's request is
// ended, which is MCP's cancellation over HTTP, and the model is answered
// that the tool did not answer. Every response is read through a limit of
// MaxAnswerBytes a message (a JSON body, or one event of a stream), since
// the MCP client reads a message whole before any of it is kept.
//
// # tool-lists.json
//
// The lists are derived, and kept in the agent's home so that a restart with
// a tool down offers the same tools and the same prompt:
//
//	{"version":1,"tools":[
//	  {"name":"memory","address":"sha256:<hex of the address>",
//	   "instructions":"<initialize's instructions, at most 2 KB>",
//	   "calls":[{"name":"search","description":"…","schema":{…}}, …]},
//	  …]}
//
// Tools in order of name, each tool's calls in order of name. The file is
// read once a process, written only when its bytes would change, and holds
// only the tools the environment names now; an entry whose address hash is
// not the address's now is not used. The address is hashed since it carries
// the proxy's secret.
//
// # tools.json
//
// A conversation narrowed to fewer tools keeps the list in tools.json beside
// its events: {"tools":["memory","file__read"]}, each entry a whole tool or
// one call; or its store keeps it, where the store narrows in one step
// (Narrowing). A later list narrows it again and never widens it (Narrow).
package tools
