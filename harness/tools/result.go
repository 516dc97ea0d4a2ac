package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"lnk.dev/linkharness/store/event"
)

// MaxResultBytes is the most of a tool's answer kept, so one answer cannot
// fill the window. Part of the event format: a result's text is at most
// this long, and marked truncated when cut.
const MaxResultBytes = 32 << 10

// Result is a tool's answer to one call, as its result event keeps it.
type Result struct {
	Text      string // at most MaxResultBytes
	Error     string // why the call has no answer, or that the tool answered with an error
	Truncated bool   // Text was cut to MaxResultBytes
}

// Event is r's result event, the answer to call c at now, its text and
// error kept to MaxResultBytes.
func (r Result) Event(now time.Time, c event.Call) event.Event {
	text, cut := Cut(r.Text)
	errText, _ := Cut(r.Error)
	return event.Event{Time: now, Type: event.TypeResult, CallID: c.ID, Name: c.Name, Text: text, Error: errText, Truncated: cut || r.Truncated}
}

// Cut cuts text to MaxResultBytes on a character's boundary, and says
// whether it did.
func Cut(text string) (string, bool) {
	if len(text) <= MaxResultBytes {
		return text, false
	}
	return cutText(text, MaxResultBytes), true
}

// resultOf turns a tool's answer into text: each text part as it is, the
// other parts named, structured content when there is no text.
func resultOf(r *mcp.CallToolResult) Result {
	var b strings.Builder
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
	}
	for _, c := range r.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			sep()
			b.WriteString(c.Text)
		case mcp.ImageContent:
			sep()
			fmt.Fprintf(&b, "[an image, %s, %d bytes of base64]", c.MIMEType, len(c.Data))
		case mcp.AudioContent:
			sep()
			fmt.Fprintf(&b, "[audio, %s, %d bytes of base64]", c.MIMEType, len(c.Data))
		case mcp.ResourceLink:
			sep()
			fmt.Fprintf(&b, "[a resource: %s]", c.URI)
		case mcp.EmbeddedResource:
			sep()
			switch rc := c.Resource.(type) {
			case mcp.TextResourceContents:
				fmt.Fprintf(&b, "[a resource: %s]\n%s", rc.URI, rc.Text)
			case mcp.BlobResourceContents:
				fmt.Fprintf(&b, "[a resource: %s, %s, %d bytes of base64]", rc.URI, rc.MIMEType, len(rc.Blob))
			}
		}
	}
	if b.Len() == 0 && r.StructuredContent != nil {
		if j, err := json.Marshal(r.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	text, cut := Cut(b.String())
	res := Result{Text: text, Truncated: cut}
	if r.IsError {
		res.Error = "the tool answered with an error"
	}
	return res
}

// rawArgs is a call's arguments as sent: the model's JSON object, or {}.
func rawArgs(args []byte) json.RawMessage {
	if len(strings.TrimSpace(string(args))) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}
