package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
		// Mistral's reasoning models stream delta.content as a list of
		// parts: the answer of magistral-medium-2507 vanished whole.
		{name: "mistral_magistral", stop: "end_turn", usage: &Usage{InputTokens: 12, OutputTokens: 58}},
		// mistral-medium-3-5 with reasoning_effort: thinking parts, then
		// plain strings, a reference part, and a call.
		{name: "mistral_reasoning_effort", stop: "tool_use", usage: &Usage{InputTokens: 88, OutputTokens: 42}},
		// R1-style reasoning inline, its tags split across chunks.
		{name: "think_tags", stop: "end_turn", usage: &Usage{InputTokens: 9, OutputTokens: 31}},
		// Gemini 3 through Google's OpenAI-compatible endpoint: the first
		// of two parallel calls carries the thought signature.
		{name: "gemini_signature", stop: "tool_use", usage: &Usage{InputTokens: 120, OutputTokens: 25, ThinkingTokens: 145}},
		// A chunk that is not JSON and one with a content part no server
		// documents: the rest is kept, the response is marked cut.
		{name: "unreadable", stop: "end_turn", usage: &Usage{InputTokens: 5, OutputTokens: 4},
			cut: "Response incomplete: none of its tool calls was run. 2 pieces of the stream could not be read and are missing (the raw text is in flemma's log)."},
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

// reasoningConversation has reasoning on four assistant messages: an
// earlier answer, an earlier tool call, and a call of the current turn.
func reasoningConversation() []Message {
	think := func(c string) Part { return Part{Kind: PartThinking, Thinking: &Thinking{Content: c}} }
	call := func(id, name, in string) Part {
		return Part{Kind: PartToolUse, ToolUse: &ToolUse{ID: id, Name: name, Input: json.RawMessage(in)}}
	}
	result := func(id, c string) Part {
		return Part{Kind: PartToolResult, ToolResult: &ToolResult{ToolUseID: id, Content: c}}
	}
	user := func(t string) Part { return Part{Kind: PartText, Text: t} }
	return []Message{
		{Role: RoleUser, Parts: []Part{user("old question")}},
		{Role: RoleAssistant, Parts: []Part{think("old thoughts"), {Kind: PartText, Text: "old answer"}}},
		{Role: RoleUser, Parts: []Part{user("list files")}},
		{Role: RoleAssistant, Parts: []Part{think("use ls"), call("call_1", "ls", `{"path":"."}`)}},
		{Role: RoleUser, Parts: []Part{result("call_1", "a.go")}},
		{Role: RoleAssistant, Parts: []Part{think("one file"), {Kind: PartText, Text: "a.go is there."}}},
		{Role: RoleUser, Parts: []Part{user("read it")}},
		{Role: RoleAssistant, Parts: []Part{think("read a.go"), call("call_2", "read", `{"path":"a.go"}`)}},
		{Role: RoleUser, Parts: []Part{result("call_2", "package a")}},
	}
}

// DeepSeek's thinking mode refuses a request in which an earlier
// assistant message with tool calls lacks its reasoning_content (the old
// rule sent it only in the current turn: the next question after a tool
// loop was a 400); reasoning of answers without calls before the current
// turn is not sent.
func TestChatReasoningRoundTrip(t *testing.T) {
	b, _ := json.Marshal(chatMessages("", reasoningConversation(), "deepseek", dialectOf("https://api.deepseek.com", ""), false))
	got := string(b)
	for _, no := range []string{"old thoughts", "one file"} {
		if strings.Contains(got, no) {
			t.Errorf("the reasoning of an earlier answer without calls was sent (%q): %s", no, got)
		}
	}
	for _, want := range []string{
		`{"reasoning_content":"use ls","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\".\"}","name":"ls"},"id":"call_1","type":"function"}]},{"content":"a.go","name":"ls","role":"tool","tool_call_id":"call_1"}`,
		`{"reasoning_content":"read a.go","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.go\"}","name":"read"},"id":"call_2","type":"function"}]}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("messages = %s\nwant to contain %s", got, want)
		}
	}
}

// Mistral refuses reasoning_content (422 extra_forbidden): its reasoning is
// never sent back; providers.<name>.reasoning overrides what the host
// implies either way.
func TestChatReasoningPerServer(t *testing.T) {
	for _, tc := range []struct {
		base, option string
		sent         bool
	}{
		{"https://api.mistral.ai/v1", "", false},
		{"https://api.deepseek.com", "", true},
		{"http://localhost:11434/v1", "", true},
		{"https://generativelanguage.googleapis.com/v1beta/openai", "", false},
		{"http://localhost:4000/v1", "none", false},
		{"https://api.mistral.ai/v1", "reasoning_content", true},
	} {
		b, _ := json.Marshal(chatMessages("", reasoningConversation(), "srv", dialectOf(tc.base, tc.option), false))
		if got := strings.Contains(string(b), "reasoning_content"); got != tc.sent {
			t.Errorf("%s (reasoning %q): reasoning_content sent %v, want %v: %s", tc.base, tc.option, got, tc.sent, b)
		}
	}
}

// Gemini 3 through Google's OpenAI-compatible endpoint: the thought
// signature read from a call goes back on that call; a current-turn call
// without one (another provider's) carries Google's placeholder; signatures
// of another provider are not sent.
func TestChatGeminiSignatures(t *testing.T) {
	msgs := reasoningConversation()
	msgs[3].Parts = append([]Part{{Kind: PartThinking, Thinking: &Thinking{Signature: "SIG-1", Provider: "gemini"}}}, msgs[3].Parts...)
	msgs[7].Parts = append([]Part{{Kind: PartThinking, Thinking: &Thinking{Signature: "SIG-X", Provider: "vertex"}}}, msgs[7].Parts...)
	d := dialectOf("https://generativelanguage.googleapis.com/v1beta/openai/", "")
	b, _ := json.Marshal(chatMessages("", msgs, "gemini", d, true))
	got := string(b)
	for _, want := range []string{
		`"extra_content":{"google":{"thought_signature":"SIG-1"}},"function":{"arguments":"{\"path\":\".\"}","name":"ls"}`,
		`"extra_content":{"google":{"thought_signature":"skip_thought_signature_validator"}},"function":{"arguments":"{\"path\":\"a.go\"}","name":"read"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("messages = %s\nwant to contain %s", got, want)
		}
	}
	if strings.Contains(got, "SIG-X") || strings.Contains(got, "reasoning_content") {
		t.Errorf("another provider's signature or reasoning_content was sent to Google: %s", got)
	}
	// Elsewhere no extra_content is ever sent.
	b, _ = json.Marshal(chatMessages("", msgs, "gemini", dialectOf("https://openrouter.ai/api/v1", ""), true))
	if strings.Contains(string(b), "extra_content") {
		t.Errorf("extra_content sent to a server that is not Google's: %s", b)
	}
}

// The signature read from a stream, written to the buffer, parsed back and
// sent: byte for byte the one Google sent.
func TestChatGeminiSignatureRoundTrip(t *testing.T) {
	srv, c := sseServer(t, chatStream(t, "chat_gemini_signature"))
	p := newChat(t, srv.URL+"/v1beta/openai", nil)
	evs, err := collect(context.Background(), p, modelReq(hello(), "gemini-3-pro-preview"))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter([]string{"@You:", "Hello"})
	for _, e := range evs {
		w.Add(e)
	}
	text := strings.Join(append([]string{"@You:", "Hello"}, w.Finish(false)...), "\n") + "\n" +
		"**Tool Result:** `function-call-4412`\n\n```\na.go\n```\n\n**Tool Result:** `function-call-4413`\n\n```\nnone\n```\n"
	_, msgs, err := FromDocument(parseOK(t, text), Signer("ollama", ""))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(chatMessages("", msgs, Signer("ollama", ""), dialectOf("https://generativelanguage.googleapis.com/v1beta/openai", ""), true))
	if !strings.Contains(string(b), `"extra_content":{"google":{"thought_signature":"CpwCAdHtim9sigA=="}},"function":{"arguments":"{\"path\":\".\"}","name":"ls"}`) {
		t.Errorf("the signature did not go back on its call: %s", b)
	}
	_ = c
}

// A failed response keeps the reasoning that arrived and reports the usage
// its error chunk carried (billed: the cost must count it).
func TestChatErrorKeepsReasoningAndUsage(t *testing.T) {
	srv, _ := sseServer(t, chatStream(t, "chat_error_usage"))
	evs, err := collect(context.Background(), newChat(t, srv.URL, nil), modelReq(hello(), "deepseek/deepseek-v3.2"))
	if err == nil || !strings.Contains(err.Error(), "Upstream provider disconnected") {
		t.Fatalf("err = %v", err)
	}
	var usage *Usage
	w := NewWriter([]string{"@You:", "Hello"})
	for _, e := range evs {
		if e.Kind == EventUsage {
			usage = e.Usage
		}
		w.Add(e)
	}
	if usage == nil || *usage != (Usage{InputTokens: 1200, OutputTokens: 7}) {
		t.Errorf("usage = %+v, want the error chunk's 1200 in / 7 out", usage)
	}
	got := strings.Join(w.FinishError(err), "\n")
	want := "\n@Assistant:\n<thinking>\nFirst, list the files.\n</thinking>\n\n<!-- flemma:aborted: Response interrupted by an error: ollama: Upstream provider disconnected -->\n\n@You:\n"
	if got != want {
		t.Errorf("lines:\n%q\nwant\n%q", got, want)
	}
}

// A <C-c> in the middle of reasoning keeps it, and the usage reported so
// far.
func TestChatCancelKeepsReasoning(t *testing.T) {
	body := strings.SplitAfterN(chatStream(t, "chat_reasoning"), "\n\n", 4)
	srv := stallServer(t, strings.Join(body[:3], ""))
	ctx, cancel := context.WithCancel(context.Background())
	w := NewWriter([]string{"@You:", "Hello"})
	p := newChat(t, srv.URL, nil)
	err := p.Stream(ctx, modelReq(hello(), "deepseek-reasoner"), func(e Event) {
		w.Add(e)
		if e.Kind == EventThinking && strings.Contains(e.Text, "391") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	got := strings.Join(w.FinishError(err), "\n")
	if !strings.Contains(got, "<thinking>\n17 times 23: 17*20 = 340, 17*3 = 51, so 391.\n</thinking>") || !strings.Contains(got, AbortedByUser) {
		t.Errorf("lines:\n%s", got)
	}
}

// stallServer sends body and then nothing until the client goes away.
func stallServer(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}
