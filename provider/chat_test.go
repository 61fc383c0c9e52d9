package provider

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newChat is a named chat_completions provider at base, with no credential.
func newChat(t *testing.T, base string, mod func(*Config)) Provider {
	t.Helper()
	cfg := Config{Wire: "chat_completions", BaseURL: base, Getenv: testEnv, Keys: &Keyring{}}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New("ollama", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chatStream(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "stream", name+".sse"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func modelReq(req Request, model string) Request {
	req.Params.Model = model
	return req
}

// TestChatStreams: the recorded streams under testdata/stream, written into
// the buffer (golden files testdata/writer/chat_*.chat).
func TestChatStreams(t *testing.T) {
	for _, tc := range []struct {
		name, stop, cut string
		usage           *Usage
	}{
		{name: "tool_deltas", stop: "tool_use", usage: &Usage{InputTokens: 120, OutputTokens: 31}},
		{name: "parallel_tools", stop: "tool_use", usage: &Usage{InputTokens: 44, OutputTokens: 60, CacheReadTokens: 256}},
		{name: "reasoning", stop: "end_turn", usage: &Usage{InputTokens: 20, OutputTokens: 45, ThinkingTokens: 38}},
		{name: "reasoning_field", stop: "end_turn"},
		{name: "length", stop: "max_tokens", usage: &Usage{InputTokens: 50, OutputTokens: 64},
			cut: "Response cut at the output limit (max_tokens): none of its tool calls was run. The input of write (call_w) is incomplete."},
		{name: "bad_args", stop: "tool_use",
			cut: "Response ended inside a tool call: none of its tool calls was run. The input of bash (call_bad) is incomplete."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := sseServer(t, chatStream(t, "chat_"+tc.name))
			evs, err := collect(context.Background(), newChat(t, srv.URL, nil), modelReq(hello(), "qwen3"))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			var stop string
			var usage *Usage
			for _, e := range evs {
				switch e.Kind {
				case EventDone:
					stop = e.StopReason
				case EventUsage:
					usage = e.Usage
				}
			}
			if stop != tc.stop {
				t.Errorf("stop = %q, want %q", stop, tc.stop)
			}
			if (usage == nil) != (tc.usage == nil) || usage != nil && *usage != *tc.usage {
				t.Errorf("usage = %+v, want %+v", usage, tc.usage)
			}
			w := NewWriter([]string{"@You:", "Hello"})
			for _, e := range evs {
				w.Add(e)
			}
			if got := w.Cut(); got != tc.cut {
				t.Errorf("Cut() = %q\nwant    %q", got, tc.cut)
			}
			text := strings.Join(append([]string{"@You:", "Hello"}, w.Finish(false)...), "\n") + "\n"
			parseOK(t, text)
			golden(t, "writer/chat_"+tc.name+".chat", []byte(text))
		})
	}
}

func TestChatErrorChunk(t *testing.T) {
	srv, _ := sseServer(t, chatStream(t, "chat_error"))
	evs, err := collect(context.Background(), newChat(t, srv.URL, nil), modelReq(hello(), "m"))
	var pe *Error
	if !errors.As(err, &pe) || pe.Error() != "ollama: Provider returned error" || !pe.Retryable {
		t.Fatalf("err = %v (%#v), want a retryable *Error with the server's message", err, pe)
	}
	for _, e := range evs {
		if e.Kind == EventDone {
			t.Errorf("a failed response reported done")
		}
	}
}

// A stream that ends with no finish_reason is an error, not an answer.
func TestChatCutStream(t *testing.T) {
	body := strings.SplitAfterN(chatStream(t, "chat_tool_deltas"), "\n\n", 4)
	srv, _ := sseServer(t, strings.Join(body[:3], ""))
	_, err := collect(context.Background(), newChat(t, srv.URL, nil), modelReq(hello(), "m"))
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "ended before it was complete") {
		t.Fatalf("err = %v, want the stream-cut error", err)
	}
}

// TestChatRequest: the body for a conversation with tools, thinking of two
// providers, an error result, extra_body and headers; no key configured
// means no Authorization header.
func TestChatRequest(t *testing.T) {
	srv, c := sseServer(t, chatStream(t, "chat_reasoning_field"))
	p := newChat(t, srv.URL+"/v1", func(cfg *Config) {
		cfg.Headers = map[string]string{"HTTP-Referer": "https://flemma.dev", "X-Title": "flemma"}
		cfg.ExtraBody = map[string]any{"top_k": 20, "options": map[string]any{"num_ctx": 32768}, "temperature": 0.2}
	})
	req := chatRequest(t, "tools.chat", "ollama")
	req.Params = Params{Model: "qwen3", MaxTokens: 4000, Thinking: "low"}
	if _, err := collect(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	_, path, h, body := c.get()
	if path != "/v1/chat/completions" {
		t.Errorf("path = %q", path)
	}
	if v := h.Get("Authorization"); v != "" {
		t.Errorf("a keyless provider sent Authorization %q", v)
	}
	if h.Get("HTTP-Referer") != "https://flemma.dev" || h.Get("X-Title") != "flemma" {
		t.Errorf("custom headers missing: %v", h)
	}
	goldenJSON(t, "request/chat.json", body)
}

// The credential from api_key_env, in the configured header (Azure's
// api-key) with the api-version query of the base URL.
func TestChatAzure(t *testing.T) {
	srv, c := sseServer(t, chatStream(t, "chat_reasoning_field"))
	p := newChat(t, srv.URL+"/openai/deployments/gpt-4o?api-version=2024-10-21", func(cfg *Config) {
		cfg.Key = &KeySource{Env: []string{"OPENAI_API_KEY"}}
		cfg.KeyHeader = "api-key"
	})
	if _, err := collect(context.Background(), p, modelReq(hello(), "gpt-4o")); err != nil {
		t.Fatal(err)
	}
	_, path, h, _ := c.get()
	if path != "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21" {
		t.Errorf("path = %q", path)
	}
	if h.Get("api-key") != "sk-openai-test-secret" || h.Get("Authorization") != "" {
		t.Errorf("headers = %v, want the key in api-key only", h)
	}
}

func TestChatNoModel(t *testing.T) {
	srv, c := sseServer(t, "")
	_, err := collect(context.Background(), newChat(t, srv.URL, nil), hello())
	if err == nil || !strings.Contains(err.Error(), "no model: set providers.ollama.model") {
		t.Errorf("err = %v", err)
	}
	if c.count != 0 {
		t.Errorf("a request was sent without a model")
	}
}

// A conversation whose reasoning was written by this provider (unsigned)
// sends it back as reasoning_content in the current turn only.
func TestChatReasoningRoundTrip(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "old question"}}},
		{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Thinking: &Thinking{Content: "old thoughts"}}, {Kind: PartText, Text: "old answer"}}},
		{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "list files"}}},
		{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Thinking: &Thinking{Content: "use ls"}},
			{Kind: PartToolUse, ToolUse: &ToolUse{ID: "call_1", Name: "ls", Input: json.RawMessage(`{"path":"."}`)}}}},
		{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ToolResult: &ToolResult{ToolUseID: "call_1", Content: "a.go"}}}},
	}
	b, _ := json.Marshal(chatMessages("", msgs, "ollama"))
	got := string(b)
	if strings.Contains(got, "old thoughts") {
		t.Errorf("an earlier turn's reasoning was sent: %s", got)
	}
	want := `{"reasoning_content":"use ls","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\".\"}","name":"ls"},"id":"call_1","type":"function"}]},{"content":"a.go","name":"ls","role":"tool","tool_call_id":"call_1"}`
	if !strings.Contains(got, want) {
		t.Errorf("messages = %s\nwant to contain %s", got, want)
	}
}
