package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// OpenAIRequest is what the scripted OpenAI APIs (Responses, Chat
// Completions) read of a request, the same for both wire formats.
type OpenAIRequest struct {
	Model       string
	Stream      bool
	Tools       []string // the names of the tools offered
	Texts       []string // every text of the conversation, instructions and system prompt included
	ToolOutputs []string // the outputs of the tool calls the CLI has carried out, in order
}

// HasTool says whether the request offers the tool name.
func (r OpenAIRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// Text is all the text of the conversation.
func (r OpenAIRequest) Text() string { return strings.Join(r.Texts, "\n") }

// OpenAICall is a tool call of a scripted answer; Args are the function's
// arguments, sent as JSON.
type OpenAICall struct {
	Name string
	Args map[string]any
}

// OpenAIReply is a scripted answer: an error status with the provider's
// error body (and headers such as Retry-After), or a streamed message of
// text and tool calls.
type OpenAIReply struct {
	Status    int
	ErrorType string // error.type of the body
	ErrorCode string // error.code of the body
	Message   string // error.message; a default for the status when empty
	Header    map[string]string
	Extra     map[string]any // more fields of the error object (resets_at, plan_type...)

	Text  string
	Calls []OpenAICall
}

// OpenAI usage the scripted APIs report for every answer.
const (
	OpenAIInputTokens  = 210
	OpenAICachedTokens = 64
	OpenAIOutputTokens = 42
)

// RateLimitReply is a 429 as OpenAI sends it when a rate limit is hit: the
// error body names the limit and when to try again, and Retry-After says
// the same in seconds.
func RateLimitReply(retryAfter time.Duration) OpenAIReply {
	secs := int(retryAfter / time.Second)
	return OpenAIReply{
		Status:    http.StatusTooManyRequests,
		ErrorType: "requests",
		ErrorCode: "rate_limit_exceeded",
		Message: fmt.Sprintf("Rate limit reached for gpt-test in organization org-test on requests per min (RPM): "+
			"Limit 3, Used 3, Requested 1. Please try again in %ds.", secs),
		Header: map[string]string{
			"Retry-After":                    strconv.Itoa(secs),
			"x-ratelimit-limit-requests":     "3",
			"x-ratelimit-remaining-requests": "0",
			"x-ratelimit-reset-requests":     fmt.Sprintf("%ds", secs),
		},
	}
}

// AuthFailedReply is a 401 as OpenAI sends it for a wrong API key.
func AuthFailedReply() OpenAIReply {
	return OpenAIReply{
		Status:    http.StatusUnauthorized,
		ErrorType: "invalid_request_error",
		ErrorCode: "invalid_api_key",
		Message:   "Incorrect API key provided: sk-test-*****-key. You can find your API key at https://platform.openai.com/account/api-keys.",
	}
}

// openAIServer is the part the scripted OpenAI APIs share: a listener on
// 127.0.0.1, the script, the request log and the problems found.
type openAIServer struct {
	scripted
	script func(OpenAIRequest) OpenAIReply
	path   string // the endpoint, e.g. /v1/responses
	decode func([]byte) (OpenAIRequest, error)
	stream func(w http.ResponseWriter, req OpenAIRequest, n int, reply OpenAIReply)
}

func startOpenAIServer(t testing.TB, s *openAIServer) {
	t.Helper()
	s.start(t, "the scripted API", s.serve)
}

// URL is the base URL to give the CLI, with the /v1 the OpenAI clients
// expect in it.
func (s *openAIServer) URL() string { return s.srv.URL + "/v1" }

func (s *openAIServer) serve(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	if r.Method != http.MethodPost || r.URL.Path != s.path {
		// A side request of the CLI (a model list, telemetry): not ours.
		http.NotFound(w, r)
		return
	}
	n := s.next()
	if n > MaxAPIRequests {
		s.problem("more than %d requests", MaxAPIRequests)
		writeOpenAIError(w, OpenAIReply{Status: http.StatusInternalServerError, ErrorType: "server_error",
			Message: "the test's request budget is spent"})
		return
	}
	body := make([]byte, 0, 4096)
	buf := make([]byte, 32<<10)
	rd := http.MaxBytesReader(w, r.Body, 16<<20)
	for {
		k, err := rd.Read(buf)
		body = append(body, buf[:k]...)
		if err != nil {
			break
		}
	}
	req, err := s.decode(body)
	if err != nil {
		s.problem("request %d does not decode: %v", n, err)
		writeOpenAIError(w, OpenAIReply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", Message: err.Error()})
		return
	}
	s.scriptMu.Lock()
	reply := s.script(req)
	s.scriptMu.Unlock()
	if reply.Status != 0 {
		writeOpenAIError(w, reply)
		return
	}
	if !req.Stream {
		s.problem("request %d is not streamed", n)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s.stream(w, req, n, reply)
}

func writeOpenAIError(w http.ResponseWriter, reply OpenAIReply) {
	msg := reply.Message
	if msg == "" {
		msg = fmt.Sprintf("scripted failure: %d %s", reply.Status, http.StatusText(reply.Status))
	}
	errBody := map[string]any{"message": msg, "type": reply.ErrorType, "param": nil, "code": nil}
	if reply.ErrorCode != "" {
		errBody["code"] = reply.ErrorCode
	}
	for k, v := range reply.Extra {
		errBody[k] = v
	}
	body, _ := json.Marshal(map[string]any{"error": errBody})
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req_test")
	w.WriteHeader(reply.Status)
	w.Write(body)
}

// sse writes server-sent events, each flushed at once.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) sse {
	f, _ := w.(http.Flusher)
	return sse{w, f}
}

// event writes one event; an empty name writes a data line alone.
func (s sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s sse) raw(line string) {
	fmt.Fprintf(s.w, "data: %s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

// halves splits s in two, as the APIs stream arguments and text in deltas.
func halves(s string) []string {
	h := len(s) / 2
	return []string{s[:h], s[h:]}
}

// ResponsesAPI is a scripted OpenAI Responses API on 127.0.0.1: each POST
// /v1/responses is answered by the script, streamed as server-sent events
// the way the API streams them (response.created, output items with their
// deltas, response.completed with the usage).
type ResponsesAPI struct{ *openAIServer }

// NewResponsesAPI starts the API answering with script; it stops when t
// ends.
func NewResponsesAPI(t testing.TB, script func(OpenAIRequest) OpenAIReply) *ResponsesAPI {
	t.Helper()
	s := &openAIServer{script: script, path: "/v1/responses", decode: decodeResponsesRequest, stream: streamResponse}
	startOpenAIServer(t, s)
	return &ResponsesAPI{s}
}

func decodeResponsesRequest(body []byte) (OpenAIRequest, error) {
	var raw struct {
		Model        string            `json:"model"`
		Stream       bool              `json:"stream"`
		Instructions string            `json:"instructions"`
		Input        []json.RawMessage `json:"input"`
		Tools        []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return OpenAIRequest{}, err
	}
	req := OpenAIRequest{Model: raw.Model, Stream: raw.Stream}
	if raw.Instructions != "" {
		req.Texts = append(req.Texts, raw.Instructions)
	}
	for _, t := range raw.Tools {
		name := t.Name
		if name == "" {
			name = t.Type // a built-in tool such as web_search
		}
		req.Tools = append(req.Tools, name)
	}
	for _, in := range raw.Input {
		var item struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(in, &item); err != nil {
			return OpenAIRequest{}, err
		}
		switch item.Type {
		case "function_call_output", "custom_tool_call_output":
			req.ToolOutputs = append(req.ToolOutputs, contentText(item.Output))
		case "message", "":
			req.Texts = append(req.Texts, contentText(item.Content))
		}
	}
	return req, nil
}

// contentText is the text of a content field: a string, or parts with text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func streamResponse(w http.ResponseWriter, req OpenAIRequest, n int, reply OpenAIReply) {
	s := newSSE(w)
	model := req.Model
	if model == "" {
		model = "gpt-test"
	}
	id := fmt.Sprintf("resp_test_%d", n)
	seq := 0
	send := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		s.event(typ, data)
	}
	base := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "model": model,
		"status": "in_progress", "output": []any{}}
	send("response.created", map[string]any{"response": base})
	send("response.in_progress", map[string]any{"response": base})
	var output []any
	idx := 0
	if reply.Text != "" {
		itemID := fmt.Sprintf("msg_test_%d", n)
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"id": itemID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": idx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, d := range halves(reply.Text) {
			send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": idx, "content_index": 0, "delta": d})
		}
		send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": idx, "content_index": 0, "text": reply.Text})
		part := map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}
		send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": idx, "content_index": 0, "part": part})
		item := map[string]any{"id": itemID, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for i, c := range reply.Calls {
		itemID := fmt.Sprintf("fc_test_%d_%d", n, i)
		callID := fmt.Sprintf("call_test_%d_%d", n, i)
		args, _ := json.Marshal(c.Args)
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"id": itemID, "type": "function_call", "status": "in_progress", "name": c.Name, "call_id": callID, "arguments": ""}})
		for _, d := range halves(string(args)) {
			send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": idx, "delta": d})
		}
		send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": idx, "arguments": string(args)})
		item := map[string]any{"id": itemID, "type": "function_call", "status": "completed", "name": c.Name, "call_id": callID, "arguments": string(args)}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	done := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "model": model,
		"status": "completed", "output": output,
		"usage": map[string]any{
			"input_tokens": OpenAIInputTokens, "input_tokens_details": map[string]any{"cached_tokens": OpenAICachedTokens},
			"output_tokens": OpenAIOutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": OpenAIInputTokens + OpenAIOutputTokens,
		}}
	send("response.completed", map[string]any{"response": done})
}
