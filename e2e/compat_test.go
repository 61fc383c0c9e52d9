package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// fakeChat is an OpenAI-compatible Chat Completions server with no key
// (Ollama, llama.cpp): turn n answers the request with n assistant messages.
type fakeChat struct {
	mu     sync.Mutex
	turns  []string
	bodies []map[string]any
	auth   []string
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	n := 0
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			n++
		}
	}
	if n >= len(f.turns) {
		http.Error(w, "no more turns", 500)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range strings.SplitAfter(f.turns[n], "\n\n") {
		fmt.Fprint(w, chunk)
		w.(http.Flusher).Flush()
	}
}

// chatSSE is a chat.completion.chunk stream: text in words, then one tool
// call whose arguments arrive in two deltas, then the usage chunk.
func chatSSE(text string, call ...string) string {
	var b strings.Builder
	chunk := func(delta map[string]any, finish any) {
		j, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "model": "qwen3",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, w := range strings.SplitAfter(text, " ") {
		chunk(map[string]any{"content": w}, nil)
	}
	finish := "stop"
	if len(call) == 3 { // id, name, arguments
		finish = "tool_calls"
		half := len(call[2]) / 2
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": call[0], "type": "function", "function": map[string]any{"name": call[1], "arguments": call[2][:half]}}}}, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": call[2][half:]}}}}, nil)
	}
	chunk(map[string]any{}, finish)
	b.WriteString(`data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":7}}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}

// A named chat_completions provider at a local server with no key answers
// a conversation with a tool call round trip, through the real host; a
// typo in its entry is reported.
func TestNamedChatCompletionsProvider(t *testing.T) {
	f := &fakeChat{turns: []string{
		chatSSE("Let me compute.", "call_c1", "calculator", `{"expression": "6*7", "label": null}`),
		chatSSE("6*7 is 42."),
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	setup := `{ provider = "ollama", tools = { auto_approve = { "calculator" } }, providers = {
		ollama = { wire = "chat_completions", base_url = "` + srv.URL + `/v1", model = "qwen3", headers = { ["X-Title"] = "flemma" } },
		lmstudio = { wire = "chat_completions", base_url = "http://localhost:1234/v1", api_key_evn = "LMSTUDIO_KEY" },
	} }`
	eachNvimEnv(t, setup, []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.bodies, f.auth = nil, nil
		f.mu.Unlock()
		if m := s.Messages(); !strings.Contains(m, "unknown option providers.lmstudio.api_key_evn (did you mean providers.lmstudio.api_key_env?)") {
			t.Errorf("the typo was not reported:\n%s", m)
		}
		mustOpen(t, s, "local.chat", question)
		press(t, s, "<C-]>")
		want := "@You:\nWhat is 6*7?\n\n@Assistant:\nLet me compute.\n\n**Tool Use:** `calculator` (`call_c1`)\n\n```json\n{\"expression\": \"6*7\", \"label\": null}\n```\n\n@You:\n\n**Tool Result:** `call_c1`\n\n```\n42\n```\n\n@Assistant:\n6*7 is 42.\n\n@You:\n"
		got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "6*7 is 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil || got != want {
			t.Fatalf("buffer:\n%s\n\nwant:\n%s\nmessages: %s", got, want, s.Messages())
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.bodies) != 2 {
			t.Fatalf("%d requests, want 2", len(f.bodies))
		}
		for i, a := range f.auth {
			if a != "" {
				t.Errorf("request %d carried Authorization %q: no key is configured", i+1, a)
			}
		}
		if f.bodies[1]["model"] != "qwen3" {
			t.Errorf("model = %v", f.bodies[1]["model"])
		}
		b, _ := json.Marshal(f.bodies[1]["messages"])
		if !strings.Contains(string(b), `{"content":"42","name":"calculator","role":"tool","tool_call_id":"call_c1"}`) {
			t.Errorf("the second request lacks the tool result: %s", b)
		}
	})
}
