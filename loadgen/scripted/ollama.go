package scripted

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"lnk.dev/linkharness/store/event"
)

// createdAt is the time every Ollama line says it was made: fixed, so the
// same request gets the same bytes.
const createdAt = `"created_at":"2026-01-01T00:00:00Z"`

// ollama streams the answer as Ollama's /api/chat does: one JSON object a
// line, the thinking and the text a piece a line, each tool call whole in a
// line of its own, and a last line with done and the counts.
func (st *stream) ollama(req *request) {
	a := st.a
	if !st.ollamaPieces(req, `"content":"","thinking":`, a.thinking) || !st.ollamaPieces(req, `"content":`, a.text) {
		return
	}
	for _, c := range a.calls {
		if !st.piece() {
			return
		}
		st.ollamaStart(req)
		st.buf = append(st.buf, `"content":"","tool_calls":[`...)
		st.buf = appendOllamaCall(st.buf, c)
		st.buf = append(st.buf, "]},\"done\":false}\n"...)
		st.flush()
	}
	if !st.piece() {
		return
	}
	st.ollamaStart(req)
	st.buf = append(st.buf, `"content":""},"done":true,"done_reason":"stop"`...)
	st.buf = appendOllamaCounts(st.buf, a.usage)
	st.buf = append(st.buf, "}\n"...)
	st.flush()
}

// ollamaPieces streams s a piece a line, each piece after key (the
// message's field that carries it), and says whether the stream goes on:
// false once a cut, a stall or the client ended it.
func (st *stream) ollamaPieces(req *request, key, s string) bool {
	for _, p := range pieces(s, st.a.chunks) {
		if p == "" {
			break
		}
		if !st.piece() {
			return false
		}
		st.ollamaStart(req)
		st.buf = append(st.buf, key...)
		st.buf = event.AppendString(st.buf, p)
		st.buf = append(st.buf, "},\"done\":false}\n"...)
		st.flush()
	}
	return true
}

// ollamaStart begins a line, up to the message's fields.
func (st *stream) ollamaStart(req *request) {
	st.buf = append(st.buf, `{"model":`...)
	st.buf = event.AppendString(st.buf, req.model)
	st.buf = append(st.buf, ","+createdAt+`,"message":{"role":"assistant",`...)
}

// appendOllamaCall appends a tool call as Ollama sends one: no id, the
// arguments an object.
func appendOllamaCall(b []byte, c call) []byte {
	b = append(b, `{"function":{"name":`...)
	b = event.AppendString(b, c.name)
	b = append(b, `,"arguments":`...)
	b = append(b, c.args...)
	return append(b, "}}"...)
}

// appendOllamaCounts appends the last line's counts. Ollama reports no
// cache: prompt_eval_count is the prompt tokens it evaluated.
func appendOllamaCounts(b []byte, u Usage) []byte {
	b = append(b, `,"total_duration":0,"load_duration":0,"prompt_eval_count":`...)
	b = strconv.AppendInt(b, u.Input, 10)
	b = append(b, `,"prompt_eval_duration":0,"eval_count":`...)
	b = strconv.AppendInt(b, u.Output, 10)
	return append(b, `,"eval_duration":0`...)
}

// writeOllamaWhole writes the answer in one object, as /api/chat does with
// "stream": false.
func writeOllamaWhole(w http.ResponseWriter, req *request, a *answer) {
	b := append([]byte(nil), `{"model":`...)
	b = event.AppendString(b, req.model)
	b = append(b, ","+createdAt+`,"message":{"role":"assistant","content":`...)
	b = event.AppendString(b, a.text)
	if a.thinking != "" {
		b = append(b, `,"thinking":`...)
		b = event.AppendString(b, a.thinking)
	}
	if len(a.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range a.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendOllamaCall(b, c)
		}
		b = append(b, ']')
	}
	b = append(b, `},"done":true,"done_reason":"stop"`...)
	b = appendOllamaCounts(b, a.usage)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// serveShow answers Ollama's /api/show for the models the script
// describes: the trained window in model_info, and num_ctx in parameters
// when the model is set to run with one. Another model is not found, as
// Ollama says of a model it has not pulled.
func (s *Server) serveShow(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, "only POST")
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "the body is not JSON: "+err.Error())
		return
	}
	name := string(v.GetStringBytes("model"))
	if name == "" {
		name = string(v.GetStringBytes("name"))
	}
	var m *Model
	if s.script != nil {
		for i := range s.script.Models {
			if s.script.Models[i].Name == name {
				m = &s.script.Models[i]
				break
			}
		}
	}
	if m == nil {
		writeJSONError(w, http.StatusNotFound, "model '"+name+"' not found")
		return
	}
	arch, _, _ := strings.Cut(name, ":")
	b := append([]byte(nil), `{"modelfile":"","parameters":`...)
	params := "temperature 0.6"
	if m.NumCtx > 0 {
		params += "\nnum_ctx " + strconv.Itoa(m.NumCtx)
	}
	b = event.AppendString(b, params)
	b = append(b, `,"template":"","details":{"format":"gguf","family":`...)
	b = event.AppendString(b, arch)
	b = append(b, `},"model_info":{"general.architecture":`...)
	b = event.AppendString(b, arch)
	if m.ContextLength > 0 {
		b = append(b, ',')
		b = event.AppendString(b, arch+".context_length")
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(m.ContextLength), 10)
	}
	b = append(b, `},"capabilities":["completion","tools"]}`+"\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
