// Package toolconv is what the built-in tool servers (loadgen/memory,
// loadgen/files) read of each call beside its arguments: the conversation
// it says it was made for, in its _meta (tools.ConversationOf). A server of
// many conversations keeps nothing of one in its session, so the call is
// where it learns whose it is.
package toolconv

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/tools"
)

// Use makes s tell seen of each call it answers: the call's name, and the
// conversation it said it was made for, the zero Conversation when it said
// none. seen is called before the call is answered, from any goroutine; a
// nil seen is told nothing.
func Use(s *server.MCPServer, seen func(call string, c tools.Conversation)) {
	if seen == nil {
		return
	}
	s.Use(func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c, _ := tools.ConversationOf(req)
			seen(req.Params.Name, c)
			return next(ctx, req)
		}
	})
}
