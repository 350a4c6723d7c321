package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// ChatAPI is a scripted OpenAI Chat Completions API on 127.0.0.1: each POST
// /v1/chat/completions is answered by the script, streamed as server-sent
// chunks the way the API streams them (deltas of text and tool calls, a
// finish reason, a last chunk with the usage, then [DONE]).
type ChatAPI struct{ *openAIServer }

// NewChatAPI starts the API answering with script; it stops when t ends.
func NewChatAPI(t testing.TB, script func(OpenAIRequest) OpenAIReply) *ChatAPI {
	t.Helper()
	s := &openAIServer{script: script, path: "/v1/chat/completions", decode: decodeChatRequest, stream: streamChat}
	startOpenAIServer(t, s)
	return &ChatAPI{s}
}

func decodeChatRequest(body []byte) (OpenAIRequest, error) {
	var raw struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return OpenAIRequest{}, err
	}
	req := OpenAIRequest{Model: raw.Model, Stream: raw.Stream}
	for _, t := range raw.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	for _, m := range raw.Messages {
		if m.Role == "tool" {
			req.ToolOutputs = append(req.ToolOutputs, contentText(m.Content))
			continue
		}
		req.Texts = append(req.Texts, contentText(m.Content))
	}
	return req, nil
}

func streamChat(w http.ResponseWriter, req OpenAIRequest, n int, reply OpenAIReply) {
	s := newSSE(w)
	model := req.Model
	if model == "" {
		model = "gpt-test"
	}
	id := fmt.Sprintf("chatcmpl-test-%d", n)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if reply.Text != "" {
		for _, d := range halves(reply.Text) {
			chunk(map[string]any{"content": d}, nil)
		}
	}
	for i, c := range reply.Calls {
		args, _ := json.Marshal(c.Args)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_test_%d_%d", n, i),
			"type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, d := range halves(string(args)) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": d}}}}, nil)
		}
	}
	finish := "stop"
	if len(reply.Calls) > 0 {
		finish = "tool_calls"
	}
	chunk(map[string]any{}, finish)
	s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
		"choices": []any{}, "usage": map[string]any{
			"prompt_tokens": OpenAIInputTokens, "completion_tokens": OpenAIOutputTokens,
			"total_tokens":          OpenAIInputTokens + OpenAIOutputTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": OpenAICachedTokens},
		}})
	s.raw("[DONE]")
}
