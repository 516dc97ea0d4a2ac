package scripted

import (
	"net/http"
	"strconv"

	"lnk.dev/linkharness/store/event"
)

// responses streams the answer as OpenAI's Responses API does: typed
// events, each numbered, an output item for the reasoning, the message and
// each function call, and response.completed with the whole output and the
// counts. There is no [DONE]: response.completed ends it.
func (st *stream) responses(req *request) {
	a := st.a
	st.rEvent("response.created")
	st.buf = append(st.buf, `,"response":`...)
	st.buf = appendResponse(st.buf, req, a, "in_progress", nil)
	st.buf = append(st.buf, "}\n\n"...)
	st.flush()

	var output []byte // the items done, for response.completed
	index := 0
	if a.thinking != "" {
		id := "rs_" + a.id
		st.itemAdded(index, `{"id":"`+id+`","type":"reasoning","summary":[]}`)
		for _, p := range pieces(a.thinking, a.chunks) {
			if !st.piece() {
				return
			}
			st.rEvent("response.reasoning_summary_text.delta")
			st.buf = st.appendItemRef(st.buf, id, index)
			st.buf = append(st.buf, `,"summary_index":0,"delta":`...)
			st.buf = event.AppendString(st.buf, p)
			st.buf = append(st.buf, "}\n\n"...)
			st.flush()
		}
		item := append([]byte(nil), `{"id":"`+id+`","type":"reasoning","summary":[{"type":"summary_text","text":`...)
		item = event.AppendString(item, a.thinking)
		item = append(item, `}],"encrypted_content":"enc_`+a.id+`"}`...)
		output = st.itemDone(output, index, item)
		index++
	}
	if a.text != "" {
		id := "msg_" + a.id
		st.itemAdded(index, `{"id":"`+id+`","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		for _, p := range pieces(a.text, a.chunks) {
			if !st.piece() {
				return
			}
			st.rEvent("response.output_text.delta")
			st.buf = st.appendItemRef(st.buf, id, index)
			st.buf = append(st.buf, `,"content_index":0,"delta":`...)
			st.buf = event.AppendString(st.buf, p)
			st.buf = append(st.buf, "}\n\n"...)
			st.flush()
		}
		st.rEvent("response.output_text.done")
		st.buf = st.appendItemRef(st.buf, id, index)
		st.buf = append(st.buf, `,"content_index":0,"text":`...)
		st.buf = event.AppendString(st.buf, a.text)
		st.buf = append(st.buf, "}\n\n"...)
		item := append([]byte(nil), `{"id":"`+id+`","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":`...)
		item = event.AppendString(item, a.text)
		item = append(item, `,"annotations":[]}]}`...)
		output = st.itemDone(output, index, item)
		index++
	}
	for _, c := range a.calls {
		id := "fc_" + c.id
		start := append([]byte(nil), `{"id":"`+id+`","type":"function_call","status":"in_progress","call_id":"call_`+c.id+`","name":`...)
		start = event.AppendString(start, c.name)
		start = append(start, `,"arguments":""}`...)
		st.itemAdded(index, string(start))
		for _, p := range pieces(c.args, a.chunks) {
			if !st.piece() {
				return
			}
			st.rEvent("response.function_call_arguments.delta")
			st.buf = st.appendItemRef(st.buf, id, index)
			st.buf = append(st.buf, `,"delta":`...)
			st.buf = event.AppendString(st.buf, p)
			st.buf = append(st.buf, "}\n\n"...)
			st.flush()
		}
		item := append([]byte(nil), `{"id":"`+id+`","type":"function_call","status":"completed","call_id":"call_`+c.id+`","name":`...)
		item = event.AppendString(item, c.name)
		item = append(item, `,"arguments":`...)
		item = event.AppendString(item, c.args)
		item = append(item, '}')
		output = st.itemDone(output, index, item)
		index++
	}
	if !st.piece() {
		return
	}
	st.rEvent("response.completed")
	st.buf = append(st.buf, `,"response":`...)
	st.buf = appendResponse(st.buf, req, a, "completed", output)
	st.buf = append(st.buf, "}\n\n"...)
	st.flush()
}

// rEvent begins a Responses API event, up to its sequence number.
func (st *stream) rEvent(name string) {
	st.buf = append(st.buf, "event: "...)
	st.buf = append(st.buf, name...)
	st.buf = append(st.buf, "\ndata: {\"type\":\""...)
	st.buf = append(st.buf, name...)
	st.buf = append(st.buf, `","sequence_number":`...)
	st.buf = strconv.AppendInt(st.buf, int64(st.seq), 10)
	st.seq++
}

func (st *stream) appendItemRef(b []byte, id string, index int) []byte {
	b = append(b, `,"item_id":"`...)
	b = append(b, id...)
	b = append(b, `","output_index":`...)
	return strconv.AppendInt(b, int64(index), 10)
}

func (st *stream) itemAdded(index int, item string) {
	st.rEvent("response.output_item.added")
	st.buf = append(st.buf, `,"output_index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, `,"item":`...)
	st.buf = append(st.buf, item...)
	st.buf = append(st.buf, "}\n\n"...)
	st.flush()
}

// itemDone sends response.output_item.done and returns output with the
// item added.
func (st *stream) itemDone(output []byte, index int, item []byte) []byte {
	st.rEvent("response.output_item.done")
	st.buf = append(st.buf, `,"output_index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, `,"item":`...)
	st.buf = append(st.buf, item...)
	st.buf = append(st.buf, "}\n\n"...)
	st.flush()
	if len(output) > 0 {
		output = append(output, ',')
	}
	return append(output, item...)
}

// appendResponse appends a Response object: its output and usage only
// once completed.
func appendResponse(b []byte, req *request, a *answer, status string, output []byte) []byte {
	b = append(b, `{"id":"resp_`...)
	b = append(b, a.id...)
	b = append(b, `","object":"response","created_at":0,"status":"`...)
	b = append(b, status...)
	b = append(b, `","model":`...)
	b = event.AppendString(b, req.model)
	b = append(b, `,"output":[`...)
	b = append(b, output...)
	b = append(b, `],"usage":`...)
	if status != "completed" {
		return append(b, "null}"...)
	}
	u := a.usage
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.Input+u.CacheRead, 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, u.CacheRead, 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = strconv.AppendInt(b, u.Input+u.CacheRead+u.Output, 10)
	return append(b, "}}"...)
}

// writeResponsesWhole writes the answer as one Response object, as the
// Responses API does without "stream".
func writeResponsesWhole(w http.ResponseWriter, req *request, a *answer) {
	var output []byte
	add := func(item []byte) {
		if len(output) > 0 {
			output = append(output, ',')
		}
		output = append(output, item...)
	}
	if a.thinking != "" {
		item := append([]byte(nil), `{"id":"rs_`+a.id+`","type":"reasoning","summary":[{"type":"summary_text","text":`...)
		item = event.AppendString(item, a.thinking)
		add(append(item, `}],"encrypted_content":"enc_`+a.id+`"}`...))
	}
	if a.text != "" {
		item := append([]byte(nil), `{"id":"msg_`+a.id+`","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":`...)
		item = event.AppendString(item, a.text)
		add(append(item, `,"annotations":[]}]}`...))
	}
	for _, c := range a.calls {
		item := append([]byte(nil), `{"id":"fc_`+c.id+`","type":"function_call","status":"completed","call_id":"call_`+c.id+`","name":`...)
		item = event.AppendString(item, c.name)
		item = append(item, `,"arguments":`...)
		item = event.AppendString(item, c.args)
		add(append(item, '}'))
	}
	b := appendResponse(nil, req, a, "completed", output)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}
