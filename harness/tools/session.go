package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ProtocolVersion is the MCP revision asked for in initialize. Pinned, so a
// start is the handshake alone, with no discovery probe first.
const ProtocolVersion = mcp.ProtocolVersion20251125

// clientInfo is how Link Harness names itself to a tool.
var clientInfo = mcp.Implementation{Name: "link-harness", Version: "1"}

// session is one MCP session with one tool: started, initialized, its calls
// listed. It is safe for concurrent use; calls go out at once.
type session struct {
	server  Server
	c       *client.Client
	cancel  context.CancelFunc // ends what the session's transport holds open
	started time.Time
	list    *List

	// kept sessions only; guarded by the Set's mu.
	lastUsed time.Time
	inflight int
	retired  bool // no new call takes it; closed when the last one ends
	timer    *time.Timer

	closeOnce sync.Once
}

// openSession starts a session with s, initializes it and lists its calls,
// within limit. Past it, the start is given up and its connection closed,
// so whatever started the tool can end the start.
func openSession(ctx context.Context, s Server, hc *http.Client, limit time.Duration, now time.Time) (*session, error) {
	life, cancel := context.WithCancel(context.Background())
	var tr transport.Interface
	var err error
	if s.sse() {
		var sse *transport.SSE
		sse, err = transport.NewSSE(s.URL, transport.WithHTTPClient(hc), transport.WithEndpointTimeout(limit))
		tr = cancellingSSE{sse}
	} else {
		var sh *transport.StreamableHTTP
		sh, err = transport.NewStreamableHTTP(s.URL, transport.WithHTTPBasicClient(hc))
		tr = cancellingHTTP{sh}
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("tools: %s: %w", s.Name, err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	ss := &session{server: s, c: c, cancel: cancel, started: now, lastUsed: now}

	type started struct {
		list *List
		err  error
	}
	done := make(chan started, 1)
	sctx, scancel := context.WithTimeout(life, limit)
	defer scancel()
	go func() {
		l, err := ss.start(sctx, life)
		done <- started{l, err}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			ss.close()
			return nil, r.err
		}
		ss.list = r.list
		return ss, nil
	case <-t.C:
		ss.close()
		return nil, fmt.Errorf("%w: %s did not start and list its calls in %v", ErrUnavailable, s.Name, limit)
	case <-ctx.Done():
		ss.close()
		return nil, ctx.Err()
	}
}

func (ss *session) start(ctx, life context.Context) (*List, error) {
	if err := ss.c.Start(life); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, ss.server.Name, err)
	}
	var req mcp.InitializeRequest
	req.Params.ProtocolVersion = ProtocolVersion
	req.Params.ClientInfo = clientInfo
	init, err := ss.c.Initialize(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: initialize: %v", ErrUnavailable, ss.server.Name, err)
	}
	res, err := ss.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: tools/list: %v", ErrUnavailable, ss.server.Name, err)
	}
	return listOf(ss.server, init.Instructions, res.Tools)
}

// call makes one call on the session, its _meta meta.
func (ss *session) call(ctx context.Context, name string, args []byte, meta *mcp.Meta) (*mcp.CallToolResult, error) {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = rawArgs(args)
	req.Params.Meta = meta
	return ss.c.CallTool(ctx, req)
}

// close ends the session: the transport says so to the server (a DELETE
// for streamable HTTP) and lets go of its connection.
func (ss *session) close() {
	ss.closeOnce.Do(func() {
		ss.c.Close()
		ss.cancel()
	})
}

// ended tells whether an error says the server has ended the session, so
// the call never reached the tool and may be made again on a new one.
func ended(err error) bool {
	return errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, transport.ErrTransportClosed)
}
