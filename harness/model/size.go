package model

// bodySize is about how many bytes req's body takes in any provider's
// format, a little over for escapes, so the body is made at once rather
// than grown through its doublings. Text that needs many escapes can still
// make it grow. The messages req's Prefix holds in format count as its
// bytes.
func bodySize(req *Request, format string) int {
	const (
		request = 512 // the keys and values around the messages
		each    = 96  // a message's, a call's, a result's or a tool's keys
	)
	n := request + len(req.Model) + len(req.System) + len(req.CacheKey)
	for i := range req.Tools {
		t := &req.Tools[i]
		n += each + len(t.Name) + len(t.Description) + len(t.Schema)
	}
	first := 0
	if p := kept(req, format); p != nil {
		n += len(p.bytes) + len(cacheControl)
		first = p.n
	}
	for i := first; i < len(req.Messages); i++ {
		m := &req.Messages[i]
		n += each + len(m.Text) + len(m.Thinking)
		for j := range m.Calls {
			c := &m.Calls[j]
			n += each + len(c.ID) + len(c.Name) + 2*len(c.Args) // OpenAI's arguments are a string of JSON
		}
		for j := range m.Results {
			r := &m.Results[j]
			n += each + len(r.CallID) + len(r.Name) + len(r.Text)
		}
	}
	return n + n/8
}
