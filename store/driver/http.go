package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// HTTP is the Transport to a driver behind lnk store-bridge: each call is
// POST {base}/store/v1/{method} with the agent's key as bearer. It is safe
// for concurrent use.
type HTTP struct {
	base   string
	bearer string
	client *http.Client
}

// NewHTTP returns the transport to the bridge at base (http://host:port),
// proving each call with key. A nil client means http.DefaultClient.
func NewHTTP(base string, key []byte, client *http.Client) *HTTP {
	if client == nil {
		client = http.DefaultClient
	}
	return &HTTP{base: strings.TrimSuffix(base, "/"), bearer: "Bearer " + string(key), client: client}
}

// Call posts one call.
func (h *HTTP) Call(ctx context.Context, method string, params []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/store/v1/"+method, bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("driver bridge %s: %w", h.base, err)
	}
	req.Header.Set("Authorization", h.bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("driver bridge %s: %s: %w", h.base, method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxLine+1))
	if err != nil {
		return nil, fmt.Errorf("driver bridge %s: %s: reading the answer: %w", h.base, method, err)
	}
	if len(body) > MaxLine {
		return nil, fmt.Errorf("driver bridge %s: %s: an answer over %d bytes", h.base, method, MaxLine)
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error, e.Code = fmt.Sprintf("status %s: %.200q", resp.Status, body), codeOther
	}
	return nil, &CallError{Driver: "bridge " + h.base, Method: method, Code: e.Code, Message: e.Error}
}

// Close closes idle connections.
func (h *HTTP) Close() error {
	h.client.CloseIdleConnections()
	return nil
}
