package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// listServer answers model lists as the servers document them, records
// the requests' paths and credential headers.
type listServer struct {
	mu    sync.Mutex
	paths []string
	auth  []string
	route map[string]string // path → body (200); others 404
}

func (l *listServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.paths = append(l.paths, r.URL.RequestURI())
	l.auth = append(l.auth, r.Header.Get("Authorization")+"|"+r.Header.Get("x-api-key")+"|"+r.Header.Get("x-goog-api-key"))
	body, ok := l.route[r.URL.Path]
	l.mu.Unlock()
	if !ok {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(body))
}

func TestListModels(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-list-openai", "ANTHROPIC_API_KEY": "sk-ant-list", "GEMINI_API_KEY": "AIza-list", "OR_KEY": "or-list-key"}[k]
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		route map[string]string
		base  string // appended to the server's URL
		want  string
		auth  string
	}{
		{"ollama", Config{Wire: "chat_completions"}, map[string]string{
			"/api/tags": `{"models":[{"name":"qwen3:8b","model":"qwen3:8b","size":5225376047},{"name":"llama3.1:8b"}]}`}, "/v1",
			"llama3.1:8b,qwen3:8b", "||"},
		{"openrouter", Config{Wire: "chat_completions", Key: &KeySource{Env: []string{"OR_KEY"}}}, map[string]string{
			"/api/v1/models": `{"data":[{"id":"openai/gpt-5.5","name":"GPT-5.5"},{"id":"anthropic/claude-fable-5"}]}`}, "/api/v1",
			"anthropic/claude-fable-5,openai/gpt-5.5", "Bearer or-list-key||"},
		{"openai", Config{}, map[string]string{"/v1/models": `{"object":"list","data":[{"id":"gpt-5.5","object":"model"},{"id":"gpt-5.4-mini"}]}`}, "",
			"gpt-5.4-mini,gpt-5.5", "Bearer sk-list-openai||"},
		{"anthropic", Config{}, map[string]string{"/v1/models": `{"data":[{"type":"model","id":"claude-fable-5","display_name":"Claude Fable 5"}],"has_more":false}`}, "",
			"claude-fable-5", "|sk-ant-list|"},
		{"gemini", Config{}, map[string]string{"/v1beta/models": `{"models":[{"name":"models/gemini-3.5-flash","supportedGenerationMethods":["generateContent","countTokens"]},{"name":"models/text-embedding-005","supportedGenerationMethods":["embedContent"]}]}`}, "",
			"gemini-3.5-flash", "||AIza-list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := &listServer{route: tc.route}
			srv := httptest.NewServer(ls)
			defer srv.Close()
			cfg := tc.cfg
			cfg.BaseURL, cfg.Getenv, cfg.Keys = srv.URL+tc.base, env, &Keyring{}
			ids, err := ListModels(context.Background(), tc.name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(ids, ","); got != tc.want {
				t.Errorf("ids = %s, want %s (requests %v)", got, tc.want, ls.paths)
			}
			if ls.auth[len(ls.auth)-1] != tc.auth {
				t.Errorf("credential headers %q, want %q", ls.auth[len(ls.auth)-1], tc.auth)
			}
		})
	}
	if _, err := ListModels(context.Background(), "vertex", Config{}); !errors.Is(err, ErrNoListing) {
		t.Errorf("vertex: %v", err)
	}
}

// A listing never runs a credential command (it could prompt) and never
// asks a server that needs a key without one: a provider whose key comes
// only from a command not yet run, or from a variable that is not set, is
// not asked at all.
func TestListModelsNeverRunsTheCommand(t *testing.T) {
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		http.Error(w, `{"error":{"message":"missing key"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	marker := t.TempDir() + "/ran"
	for _, src := range []*KeySource{{Cmd: []string{"sh", "-c", "touch " + marker + "; echo k"}}, {Env: []string{"UNSET_KEY"}}} {
		cfg := Config{Wire: "chat_completions", BaseURL: srv.URL + "/v1", Keys: &Keyring{}, Getenv: func(string) string { return "" }, Key: src}
		if _, err := ListModels(context.Background(), "srv", cfg); !errors.Is(err, ErrNoCredential) {
			t.Errorf("%+v: err = %v", src, err)
		}
	}
	if _, err := ListModels(context.Background(), "anthropic", Config{BaseURL: srv.URL, Keys: &Keyring{}, Getenv: func(string) string { return "" }}); !errors.Is(err, ErrNoCredential) {
		t.Errorf("anthropic without a key: %v", err)
	}
	if fileExists(marker) {
		t.Error("the listing ran the credential command")
	}
	if asked != 0 {
		t.Errorf("the server was asked %d times without a key", asked)
	}
}

// A list that is not one, or too big, is an error, not a crash.
func TestListModelsBadAnswers(t *testing.T) {
	for _, body := range []string{`<html>oops</html>`, `{"object":"list"}`, `{"data":[{"id":"` + strings.Repeat("x", listMaxBody) + `"}]}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		_, err := ListModels(context.Background(), "srv", Config{Wire: "chat_completions", BaseURL: srv.URL + "/v1", Keys: &Keyring{}})
		srv.Close()
		if err == nil {
			t.Errorf("%.40s: no error", body)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
