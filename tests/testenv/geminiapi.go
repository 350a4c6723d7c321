package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// GeminiRequest is what the fake Gemini API reads of a generateContent or
// streamGenerateContent request.
type GeminiRequest struct {
	Model    string // from the path: models/{model}:streamGenerateContent
	Stream   bool   // streamGenerateContent
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

type geminiPart struct {
	Text             string `json:"text,omitempty"`
	FunctionCall     any    `json:"functionCall,omitempty"`
	FunctionResponse any    `json:"functionResponse,omitempty"`
}

// HasTool says whether the request declares the function name.
func (r GeminiRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// Text is all the text of the conversation.
func (r GeminiRequest) Text() string {
	var b strings.Builder
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.Text != "" {
				b.WriteString(p.Text + "\n")
			}
		}
	}
	return b.String()
}

// ToolResults counts the functionResponse parts of the conversation: how
// many tool calls the CLI has already carried out.
func (r GeminiRequest) ToolResults() int {
	n := 0
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				n++
			}
		}
	}
	return n
}

// GeminiReply is the fake Gemini API's answer: an error status with the
// API's google.rpc.Status body, or a streamed response of blocks.
type GeminiReply struct {
	Status  int    // 0: answer with Blocks
	Message string // the error's message; a default per status when empty
	// RetryDelay, for a 429: the google.rpc.RetryInfo retryDelay of the
	// body ("3600s") and the Retry-After header, as the API sends them.
	RetryDelay string
	Blocks     []APIBlock
}

// GeminiAPI is a scripted Gemini API (generativelanguage.googleapis.com)
// on 127.0.0.1: each POST /v1beta/models/{model}:streamGenerateContent
// (?alt=sse) or :generateContent is answered by script, streamed as
// server-sent events the way the real API streams them.
type GeminiAPI struct {
	scripted
	script func(GeminiRequest) GeminiReply
}

// NewGeminiAPI starts the fake API answering with script; it stops when t
// ends.
func NewGeminiAPI(t testing.TB, script func(GeminiRequest) GeminiReply) *GeminiAPI {
	t.Helper()
	api := &GeminiAPI{script: script}
	api.start(t, "the fake Gemini API", api.serve)
	return api
}

// URL is the base URL to give the CLI (GOOGLE_GEMINI_BASE_URL).
func (api *GeminiAPI) URL() string { return api.srv.URL }

// Usage the fake Gemini API reports for every response.
const (
	GeminiPromptTokens     = 1000
	GeminiCandidatesTokens = 40
	GeminiCachedTokens     = 200
)

func (api *GeminiAPI) serve(w http.ResponseWriter, r *http.Request) {
	api.record(r)
	n := api.next()
	if n > MaxAPIRequests {
		api.problem("more than %d requests", MaxAPIRequests)
		writeGeminiError(w, GeminiReply{Status: http.StatusInternalServerError, Message: "the test's request budget is spent"})
		return
	}
	model, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	if r.Method != http.MethodPost || !ok || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("x-goog-api-key") == "" && r.URL.Query().Get("key") == "" {
		api.problem("request %d carries no API key", n)
	}
	switch method {
	case "countTokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"totalTokens":100}`)
		return
	case "generateContent", "streamGenerateContent":
	default:
		http.NotFound(w, r)
		return
	}
	req := GeminiRequest{Model: model, Stream: method == "streamGenerateContent"}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil {
		api.problem("request %d does not decode: %v", n, err)
		writeGeminiError(w, GeminiReply{Status: http.StatusBadRequest, Message: err.Error()})
		return
	}
	if req.Stream && r.URL.Query().Get("alt") != "sse" {
		api.problem("request %d streams without alt=sse", n)
	}
	api.scriptMu.Lock()
	reply := api.script(req)
	api.scriptMu.Unlock()
	if reply.Status != 0 {
		writeGeminiError(w, reply)
		return
	}
	resp := geminiResponse(model, n, reply.Blocks)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	// The text in two chunks, then the rest with the finish reason and
	// usage, as the API streams it.
	for _, chunk := range splitGeminiResponse(resp) {
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func geminiResponse(model string, n int, blocks []APIBlock) map[string]any {
	var parts []map[string]any
	for _, b := range blocks {
		if b.Tool != "" {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": b.Tool, "args": b.Input}})
		} else {
			parts = append(parts, map[string]any{"text": b.Text})
		}
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{
			"promptTokenCount":        GeminiPromptTokens,
			"candidatesTokenCount":    GeminiCandidatesTokens,
			"cachedContentTokenCount": GeminiCachedTokens,
			"totalTokenCount":         GeminiPromptTokens + GeminiCandidatesTokens,
		},
		"modelVersion": model,
		"responseId":   fmt.Sprintf("resp_test_%d", n),
	}
}

// splitGeminiResponse cuts a response into stream chunks: a first chunk
// with the first half of a leading text part, then the whole rest with the
// finish reason and usage.
func splitGeminiResponse(resp map[string]any) []map[string]any {
	cand := resp["candidates"].([]any)[0].(map[string]any)
	parts := cand["content"].(map[string]any)["parts"].([]map[string]any)
	if len(parts) == 0 {
		return []map[string]any{resp}
	}
	text, ok := parts[0]["text"].(string)
	if !ok || len(text) < 2 {
		return []map[string]any{resp}
	}
	half := len(text) / 2
	first := map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text[:half]}}},
			"index":   0,
		}},
		"modelVersion": resp["modelVersion"],
		"responseId":   resp["responseId"],
	}
	rest := append([]map[string]any{{"text": text[half:]}}, parts[1:]...)
	cand["content"].(map[string]any)["parts"] = rest
	return []map[string]any{first, resp}
}

// writeGeminiError writes the API's error body (google.rpc.Status); a 429
// carries the quota that was exceeded and, with RetryDelay, when to retry.
func writeGeminiError(w http.ResponseWriter, reply GeminiReply) {
	status, msg := reply.Status, reply.Message
	rpc, details := "UNKNOWN", []any{}
	switch status {
	case http.StatusBadRequest:
		rpc = "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		rpc = "UNAUTHENTICATED"
		if msg == "" {
			msg = "API key not valid. Please pass a valid API key."
		}
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
			"domain": "googleapis.com", "metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
		})
	case http.StatusTooManyRequests:
		rpc = "RESOURCE_EXHAUSTED"
		if msg == "" {
			msg = "You exceeded your current quota, please check your plan and billing details."
			if reply.RetryDelay != "" {
				msg += " Please retry in " + reply.RetryDelay + "."
			}
		}
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
				"quotaId":     "GenerateContentPaidTierInputTokensPerModelPerMinute",
				"quotaDimensions": map[string]string{
					"location": "global", "model": "gemini-2.5-pro",
				},
				"quotaValue": "2000000",
			}},
		})
		if reply.RetryDelay != "" {
			details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": reply.RetryDelay})
			w.Header().Set("Retry-After", strings.TrimSuffix(reply.RetryDelay, "s"))
		}
	case http.StatusInternalServerError:
		rpc = "INTERNAL"
	case http.StatusServiceUnavailable:
		rpc = "UNAVAILABLE"
		if msg == "" {
			msg = "The model is overloaded. Please try again later."
		}
	}
	if msg == "" {
		msg = "scripted failure"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": status, "message": msg, "status": rpc, "details": details,
	}})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	w.Write(body)
}
