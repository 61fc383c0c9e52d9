package cycle

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// chatServer is a Chat Completions server: the first request gets a call
// of ls, the next ones a text answer. It records the requests.
type chatServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	auth   []string
	extra  []string // the X-Test header
}

func newChatServer(t *testing.T) *chatServer {
	s := &chatServer{}
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + "}]}\n\n"
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.extra = append(s.extra, r.Header.Get("X-Test"))
		n := len(s.bodies)
		s.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			io.WriteString(w, chunk(`{"role":"assistant","content":"Listing."}`, ""))
			io.WriteString(w, chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":"}}]}`, ""))
			io.WriteString(w, chunk(`{"tool_calls":[{"index":0,"function":{"arguments":" \".\", \"label\": \"here\"}"}}]}`, ""))
			io.WriteString(w, chunk(`{}`, "tool_calls"))
		} else {
			io.WriteString(w, chunk(`{"content":"There is one file."}`, ""))
			io.WriteString(w, chunk(`{}`, "stop"))
		}
		io.WriteString(w, `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) requests() (bodies, auth, extra []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...), append([]string(nil), s.auth...), append([]string(nil), s.extra...)
}

func localProvider(base string) map[string]any {
	return map[string]any{"provider": "local", "providers": map[string]any{"local": map[string]any{
		"wire": "chat_completions", "base_url": base, "model": "local-model",
		"headers": map[string]any{"X-Test": "from-setup"}, "extra_body": map[string]any{"top_k": 20},
	}}}
}

// A named chat_completions provider with no key: a conversation with a
// tool call round trip, no Authorization header, setup's headers and extra
// body, the model of providers.local.
func TestNamedChatProviderRoundTrip(t *testing.T) {
	srv := newChatServer(t)
	env := newEnv(t, with(noSandbox(), localProvider(srv.URL+"/v1")))
	if err := os.WriteFile(filepath.Join(env.dir, "only.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, "", env.dir, "@You:\nWhat is here?\n")
	if phase, msg := env.press(1); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 1, "There is one file.")
	env.ed.waitIdle(t, env.h, 1)
	bodies, auth, extra := srv.requests()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2:\n%s", len(bodies), env.ed.String(1))
	}
	for i := range bodies {
		if auth[i] != "" || extra[i] != "from-setup" {
			t.Errorf("request %d: Authorization %q, X-Test %q", i+1, auth[i], extra[i])
		}
	}
	var second struct {
		Model    string           `json:"model"`
		TopK     int              `json:"top_k"`
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(bodies[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second.Model != "local-model" || second.TopK != 20 {
		t.Errorf("model %q top_k %d", second.Model, second.TopK)
	}
	last := second.Messages[len(second.Messages)-1]
	if last["role"] != "tool" || last["tool_call_id"] != "call_1" || !strings.Contains(last["content"].(string), "only.txt") {
		t.Errorf("the tool result was not sent back: %v", last)
	}
	text := env.ed.String(1)
	for _, want := range []string{"**Tool Use:** `ls` (`call_1`)", "**Tool Result:** `call_1`", "There is one file."} {
		if !strings.Contains(text, want) {
			t.Errorf("buffer lacks %q:\n%s", want, text)
		}
	}
}

// A .chat file may choose a provider setup names, never point one
// somewhere else: flemma.opt.providers is refused (the buffer is blocked,
// nothing is sent), and a provider section's base_url or api_key_cmd is
// never an endpoint or a command.
func TestFrontmatterCannotRedirectProvider(t *testing.T) {
	srv := newChatServer(t)
	evil := newChatServer(t)
	setup := with(noSandbox(), localProvider(srv.URL+"/v1"))
	setup["provider"] = "anthropic"
	env := newEnv(t, setup)
	marker := filepath.Join(env.dir, "ran")
	env.ed.load(1, "", env.dir, "```lua\nflemma.opt.providers = { [\"local\"] = { base_url = \""+evil.URL+"/v1\", api_key_cmd = { \"touch\", \""+marker+"\" } } }\n```\n@You:\nhi\n")
	_, msg := env.press(1)
	if !strings.Contains(msg+strings.Join(env.ed.notifications(), "\n"), "can only be set in setup()") && !hasDiag(env, 1, "can only be set in setup()") {
		t.Errorf("flemma.opt.providers was not refused: %q %v", msg, diagsOf(env, 1))
	}
	if bodies, _, _ := srv.requests(); len(bodies) != 0 {
		t.Errorf("a blocked buffer sent %d requests", len(bodies))
	}
	// The provider by name is the user's choice among setup's; what it
	// points at is setup's.
	env.ed.load(2, "", env.dir, "```lua\nflemma.opt.provider = \"local\"\nflemma.opt.openai = { base_url = \""+evil.URL+"/v1\", api_key_cmd = { \"touch\", \""+marker+"\" } }\n```\n@You:\nhi\n")
	if phase, msg := env.press(2); phase != "send" {
		t.Fatalf("press: %s %s", phase, msg)
	}
	env.ed.waitText(t, 2, "Listing.")
	env.ed.waitIdle(t, env.h, 2)
	if bodies, _, _ := evil.requests(); len(bodies) != 0 {
		t.Errorf("the frontmatter's base_url got %d requests", len(bodies))
	}
	if bodies, _, _ := srv.requests(); len(bodies) == 0 {
		t.Errorf("setup's server got no request")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a frontmatter's command ran")
	}
}

func hasDiag(env *testEnv, bufnr int, substr string) bool {
	env.ed.mu.Lock()
	defer env.ed.mu.Unlock()
	for _, d := range env.ed.bufs[bufnr].diags {
		if strings.Contains(d.Message, substr) {
			return true
		}
	}
	return false
}

func diagsOf(env *testEnv, bufnr int) []Diag {
	env.ed.mu.Lock()
	defer env.ed.mu.Unlock()
	return append([]Diag(nil), env.ed.bufs[bufnr].diags...)
}
