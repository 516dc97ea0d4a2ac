// Package mcptest is a client of an MCP server in the test's own process,
// for the tests of the built-in tool servers (loadgen/memory,
// loadgen/files): started and initialized in one call, each tool called in
// one more, a failure to call failing the test.
package mcptest

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"lnk.dev/linkharness/harness/tools"
)

// Client calls the tools of one server for one test. It is not safe for
// concurrent use.
type Client struct {
	t testing.TB
	c *client.Client

	// Conv is the conversation each call says it was made for, in its
	// _meta as Link Harness sends it; the zero Conversation says none.
	Conv tools.Conversation
}

// Start starts a client of s in this process and initializes it, and
// returns it with what s answered to the initialize request. The client
// is closed once the test ends.
func Start(t testing.TB, s *server.MCPServer) (*Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	t.Cleanup(func() { c.Close() })
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{t: t, c: c}, res
}

// Call calls the tool name with args and returns the text of its result
// and whether the result is an error.
func (c *Client) Call(name string, args map[string]any) (string, bool) {
	c.t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	if c.Conv != (tools.Conversation{}) {
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{tools.MetaThread: c.Conv.Thread, tools.MetaAgent: c.Conv.Agent}}
	}
	res, err := c.c.CallTool(context.Background(), req)
	if err != nil {
		c.t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range res.Content {
		if tc, ok := p.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}
