package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// cancelWait bounds how long a notifications/cancelled is given to be sent.
const cancelWait = 5 * time.Second

// sendCancelled tells the server, with a notifications/cancelled naming
// the request, that a call whose context ended is given up: on the
// protocol version spoken here (ProtocolVersion), ending the request's
// HTTP stream is not a cancellation, and the tool would work on for
// nobody. It is sent before the call returns, best effort within
// cancelWait: a turn ends its sessions once its calls return, and a
// notification sent after would find the session gone.
func sendCancelled(ctx context.Context, send func(context.Context, mcp.JSONRPCNotification) error, req transport.JSONRPCRequest) {
	if req.Method != string(mcp.MethodToolsCall) {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{
				AdditionalFields: map[string]any{"requestId": req.ID, "reason": context.Cause(ctx).Error()},
			},
		},
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	_ = send(ctx, n)
}

// sendRequest sends req on tr, and then a notifications/cancelled for it
// when it was given up (see sendCancelled).
func sendRequest(ctx context.Context, tr transport.Interface, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := tr.SendRequest(ctx, req)
	if err != nil && ctx.Err() != nil {
		sendCancelled(ctx, tr.SendNotification, req)
	}
	return resp, err
}

// cancellingHTTP is the streamable HTTP transport, sending a
// notifications/cancelled for each call given up (see sendCancelled).
type cancellingHTTP struct{ *transport.StreamableHTTP }

func (c cancellingHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return sendRequest(ctx, c.StreamableHTTP, req)
}

// cancellingSSE is the SSE transport, sending a notifications/cancelled
// for each call given up (see sendCancelled).
type cancellingSSE struct{ *transport.SSE }

func (c cancellingSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return sendRequest(ctx, c.SSE, req)
}
