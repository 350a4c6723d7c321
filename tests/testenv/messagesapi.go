package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// MaxAPIRequests bounds what one scenario may ask of the fake API: a CLI
// that loops gets errors and the test fails, it never spins.
const MaxAPIRequests = 30

// APIRequest is what the fake API reads of a Messages API request.
type APIRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// HasTool says whether the request offers the tool name.
func (r APIRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// text is all the text of the conversation.
func (r APIRequest) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			b.WriteString(s + "\n")
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		for _, bl := range blocks {
			b.WriteString(bl.Text + "\n")
		}
	}
	return b.String()
}

// ToolResults counts the tool_result blocks of the conversation: how many
// tool calls the CLI has already carried out.
func (r APIRequest) ToolResults() int {
	n := 0
	for _, m := range r.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				n++
			}
		}
	}
	return n
}

// APIBlock is one content block of a scripted answer: text, or a tool call.
type APIBlock struct {
	Text  string
	Tool  string
	Input map[string]any
}

// APIReply is the fake API's answer: an error status with its body, or a
// streamed message of blocks.
type APIReply struct {
	Status    int
	ErrorType string
	Blocks    []APIBlock
}

// MessagesAPI is a scripted Anthropic Messages API on 127.0.0.1: each
// POST /v1/messages is answered by script, streamed as server-sent events
// the way the real API streams them.
type MessagesAPI struct {
	scripted
	script func(APIRequest) APIReply
}

// NewMessagesAPI starts the fake API answering with script; it stops when
// t ends.
func NewMessagesAPI(t testing.TB, script func(APIRequest) APIReply) *MessagesAPI {
	t.Helper()
	api := &MessagesAPI{script: script}
	api.start(t, "the fake API", api.serve)
	return api
}

// URL is the base URL to give the CLI (ANTHROPIC_BASE_URL).
func (api *MessagesAPI) URL() string { return api.srv.URL }

func (api *MessagesAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.record(r)
	n := api.next()
	if n > MaxAPIRequests {
		api.problem("more than %d requests", MaxAPIRequests)
		writeAPIError(w, http.StatusInternalServerError, "api_error", "the test's request budget is spent")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":100}`)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		http.NotFound(w, r)
		return
	}
	var req APIRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
		api.problem("request %d does not decode: %v", n, err)
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	api.scriptMu.Lock()
	reply := api.script(req)
	api.scriptMu.Unlock()
	if reply.Status != 0 {
		writeAPIError(w, reply.Status, reply.ErrorType, "scripted failure")
		return
	}
	if !req.Stream {
		api.problem("request %d is not streamed", n)
	}
	streamMessage(w, req.Model, n, reply.Blocks)
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(status)
	w.Write(body)
}

// Usage the fake API reports for every message.
const (
	APIInputTokens  = 120
	APIOutputTokens = 30
)

// streamMessage writes one assistant message as the API streams it:
// message_start, each block's start, deltas and stop, message_delta with the
// stop reason and usage, message_stop.
func streamMessage(w http.ResponseWriter, model string, n int, blocks []APIBlock) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	send("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_test_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": APIInputTokens, "output_tokens": 1},
	}})
	stop := "end_turn"
	for i, b := range blocks {
		if b.Tool != "" {
			stop = "tool_use"
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{
				"type": "tool_use", "id": fmt.Sprintf("toolu_test_%d_%d", n, i), "name": b.Tool, "input": map[string]any{}}})
			input, _ := json.Marshal(b.Input)
			// Split the arguments in two deltas, as the API streams them.
			half := len(input) / 2
			for _, part := range []string{string(input[:half]), string(input[half:])} {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		} else {
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": APIOutputTokens}})
	send("message_stop", map[string]any{})
}
