package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// CompatRequest is what the fake OpenAI-compatible API reads of a
// POST /v1/chat/completions request.
type CompatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// HasTool says whether the request offers the tool name.
func (r CompatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// Text is all the text of the conversation.
func (r CompatRequest) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s + "\n")
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			b.WriteString(p.Text + "\n")
		}
	}
	return b.String()
}

// ToolResults counts the tool messages of the conversation: how many tool
// calls the CLI has already carried out.
func (r CompatRequest) ToolResults() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

// CompatReply is the fake API's answer: an error status with OpenAI's error
// body, or a streamed completion of blocks.
type CompatReply struct {
	Status int
	// For a 429: RetryAfter, the seconds of the Retry-After header (0: no
	// header), and ResetIn, when the limit resets, as OpenAI's message and
	// x-ratelimit-reset-requests header say it ("1h0m0s").
	RetryAfter int
	ResetIn    string
	Blocks     []APIBlock
}

// CompatAPI is a scripted OpenAI-compatible Chat Completions API on
// 127.0.0.1: each POST /v1/chat/completions is answered by script, streamed
// as server-sent events the way OpenAI's API streams them (chunks, a usage
// chunk, data: [DONE]).
type CompatAPI struct {
	scripted
	script func(CompatRequest) CompatReply
}

// NewCompatAPI starts the fake API answering with script; it stops when t
// ends.
func NewCompatAPI(t testing.TB, script func(CompatRequest) CompatReply) *CompatAPI {
	t.Helper()
	api := &CompatAPI{script: script}
	api.start(t, "the fake OpenAI-compatible API", api.serve)
	return api
}

// URL is the base URL to give the client (baseURL), with /v1.
func (api *CompatAPI) URL() string { return api.srv.URL + "/v1" }

// Usage the fake API reports for every completion.
const (
	CompatPromptTokens     = 900
	CompatCompletionTokens = 25
	CompatCachedTokens     = 100
)

func (api *CompatAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.record(r)
	n := api.next()
	if n > MaxAPIRequests {
		api.problem("more than %d requests", MaxAPIRequests)
		writeCompatError(w, CompatReply{Status: http.StatusInternalServerError})
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		api.problem("request %d carries no bearer token", n)
	}
	var req CompatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
		api.problem("request %d does not decode: %v", n, err)
		writeCompatError(w, CompatReply{Status: http.StatusBadRequest})
		return
	}
	api.scriptMu.Lock()
	reply := api.script(req)
	api.scriptMu.Unlock()
	if reply.Status != 0 {
		writeCompatError(w, reply)
		return
	}
	if !req.Stream {
		api.problem("request %d is not streamed", n)
	}
	streamCompletion(w, req.Model, n, reply.Blocks)
}

// streamCompletion writes one completion as OpenAI streams it: a role
// chunk, the text in two deltas, each tool call's name then its arguments
// in two deltas, the finish reason, the usage chunk, [DONE].
func streamCompletion(w http.ResponseWriter, model string, n int, blocks []APIBlock) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	id := fmt.Sprintf("chatcmpl-test%d", n)
	send := func(choices []any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
			"system_fingerprint": "fp_test", "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": finish}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	finish, tool := "stop", 0
	for _, b := range blocks {
		if b.Tool == "" {
			half := len(b.Text) / 2
			for _, part := range []string{b.Text[:half], b.Text[half:]} {
				send(delta(map[string]any{"content": part}, nil), nil)
			}
			continue
		}
		finish = "tool_calls"
		args, _ := json.Marshal(b.Input)
		half := len(args) / 2
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": tool, "id": fmt.Sprintf("call_test_%d_%d", n, tool),
			"type": "function", "function": map[string]any{"name": b.Tool, "arguments": ""}}}}, nil), nil)
		for _, part := range []string{string(args[:half]), string(args[half:])} {
			send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": tool, "function": map[string]any{"arguments": part}}}}, nil), nil)
		}
		tool++
	}
	send(delta(map[string]any{}, finish), nil)
	send([]any{}, map[string]any{
		"prompt_tokens": CompatPromptTokens, "completion_tokens": CompatCompletionTokens,
		"total_tokens":          CompatPromptTokens + CompatCompletionTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": CompatCachedTokens},
	})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// writeCompatError writes OpenAI's error body; a 429 carries the rate limit
// headers OpenAI sends and the time to retry in its message.
func writeCompatError(w http.ResponseWriter, reply CompatReply) {
	msg, typ, code := "The server had an error while processing your request.", "server_error", any(nil)
	switch reply.Status {
	case http.StatusBadRequest:
		msg, typ = "Invalid request.", "invalid_request_error"
	case http.StatusUnauthorized:
		msg, typ, code = "Incorrect API key provided: sk-test-*****-key.", "invalid_request_error", "invalid_api_key"
	case http.StatusTooManyRequests:
		msg, typ, code = "Rate limit reached for requests.", "requests", "rate_limit_exceeded"
		if reply.ResetIn != "" {
			msg = "Rate limit reached for requests. Please try again in " + reply.ResetIn + "."
			w.Header().Set("x-ratelimit-reset-requests", reply.ResetIn)
		}
		if reply.RetryAfter > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(reply.RetryAfter))
		}
		w.Header().Set("x-ratelimit-limit-requests", "500")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "req_test")
	w.WriteHeader(reply.Status)
	w.Write(body)
}
