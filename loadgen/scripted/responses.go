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
		if !st.itemDeltas("response.reasoning_summary_text.delta", id, index, `,"summary_index":0,"delta":`, a.thinking) {
			return
		}
		output = st.itemDone(output, index, appendReasoningItem(nil, a))
		index++
	}
	if a.text != "" {
		id := "msg_" + a.id
		st.itemAdded(index, `{"id":"`+id+`","type":"message","status":"in_progress","role":"assistant","content":[]}`)
		if !st.itemDeltas("response.output_text.delta", id, index, `,"content_index":0,"delta":`, a.text) {
			return
		}
		st.itemString("response.output_text.done", id, index, `,"content_index":0,"text":`, a.text)
		output = st.itemDone(output, index, appendMessageItem(nil, a))
		index++
	}
	for _, c := range a.calls {
		id := "fc_" + c.id
		start := append([]byte(nil), `{"id":"`+id+`","type":"function_call","status":"in_progress","call_id":"call_`+c.id+`","name":`...)
		start = event.AppendString(start, c.name)
		start = append(start, `,"arguments":""}`...)
		st.itemAdded(index, string(start))
		if !st.itemDeltas("response.function_call_arguments.delta", id, index, `,"delta":`, c.args) {
			return
		}
		output = st.itemDone(output, index, appendCallItem(nil, c))
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

// itemString writes the event name of the output item id at index, s
// its string after key (`,"delta":`). The caller flushes.
func (st *stream) itemString(name, id string, index int, key, s string) {
	st.rEvent(name)
	st.buf = st.appendItemRef(st.buf, id, index)
	st.buf = append(st.buf, key...)
	st.buf = event.AppendString(st.buf, s)
	st.buf = append(st.buf, "}\n\n"...)
}

// itemDeltas streams s as the events name of the output item id at index,
// a piece each after key, and says whether the stream goes on: false once
// a cut, a stall or the client ended it.
func (st *stream) itemDeltas(name, id string, index int, key, s string) bool {
	for _, p := range pieces(s, st.a.chunks) {
		if !st.piece() {
			return false
		}
		st.itemString(name, id, index, key, p)
		st.flush()
	}
	return true
}

// itemAdded sends response.output_item.added.
func (st *stream) itemAdded(index int, item string) {
	st.itemEvent("response.output_item.added", index, []byte(item))
}

// itemDone sends response.output_item.done and returns output with the
// item added.
func (st *stream) itemDone(output []byte, index int, item []byte) []byte {
	st.itemEvent("response.output_item.done", index, item)
	if len(output) > 0 {
		output = append(output, ',')
	}
	return append(output, item...)
}

// itemEvent sends the event name of the output item at index, the item
// whole.
func (st *stream) itemEvent(name string, index int, item []byte) {
	st.rEvent(name)
	st.buf = append(st.buf, `,"output_index":`...)
	st.buf = strconv.AppendInt(st.buf, int64(index), 10)
	st.buf = append(st.buf, `,"item":`...)
	st.buf = append(st.buf, item...)
	st.buf = append(st.buf, "}\n\n"...)
	st.flush()
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
		add(appendReasoningItem(nil, a))
	}
	if a.text != "" {
		add(appendMessageItem(nil, a))
	}
	for _, c := range a.calls {
		add(appendCallItem(nil, c))
	}
	b := appendResponse(nil, req, a, "completed", output)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// appendReasoningItem appends the answer's thinking as a completed
// reasoning output item.
func appendReasoningItem(b []byte, a *answer) []byte {
	b = append(b, `{"id":"rs_`+a.id+`","type":"reasoning","summary":[{"type":"summary_text","text":`...)
	b = event.AppendString(b, a.thinking)
	return append(b, `}],"encrypted_content":"enc_`+a.id+`"}`...)
}

// appendMessageItem appends the answer's text as a completed message
// output item.
func appendMessageItem(b []byte, a *answer) []byte {
	b = append(b, `{"id":"msg_`+a.id+`","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":`...)
	b = event.AppendString(b, a.text)
	return append(b, `,"annotations":[]}]}`...)
}

// appendCallItem appends c as a completed function_call output item.
func appendCallItem(b []byte, c call) []byte {
	b = append(b, `{"id":"fc_`+c.id+`","type":"function_call","status":"completed","call_id":"call_`+c.id+`","name":`...)
	b = event.AppendString(b, c.name)
	b = append(b, `,"arguments":`...)
	b = event.AppendString(b, c.args)
	return append(b, '}')
}
