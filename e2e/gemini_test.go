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

// fakeGemini is the Gemini API (generativelanguage.googleapis.com): it
// records the path and key of each request and streams turns[n].
type fakeGemini struct {
	mu    sync.Mutex
	turns []string
	paths []string
	keys  []string
	auth  []string
	body  []map[string]any
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	n := len(f.paths)
	f.paths = append(f.paths, r.URL.RequestURI())
	f.keys = append(f.keys, r.Header.Get("x-goog-api-key"))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.body = append(f.body, body)
	f.mu.Unlock()
	if n >= len(f.turns) {
		http.Error(w, `{"error":{"code":500,"message":"no more turns","status":"INTERNAL"}}`, 500)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, f.turns[n])
}

func geminiChunk(finish string, parts ...string) string {
	fin := ""
	if finish != "" {
		fin = `,"finishReason":"` + finish + `"`
	}
	return `data: {"candidates":[{"content":{"role":"model","parts":[` + strings.Join(parts, ",") + `]}` + fin + `}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":5}}` + "\n\n"
}

// The Gemini API with an API key: `provider = "gemini"` and
// $GEMINI_API_KEY, the Vertex wire at generativelanguage; a signed call
// and its result go round, the signature back on the call.
func TestGeminiAPIKeyProvider(t *testing.T) {
	f := &fakeGemini{turns: []string{
		geminiChunk("", `{"thought":true,"text":"Compute it."}`) +
			geminiChunk("STOP", `{"functionCall":{"name":"calculator","args":{"expression":"6*7"}},"thoughtSignature":"Z2VtaW5pLXNpZw=="}`),
		geminiChunk("STOP", `{"text":"6*7 is 42."}`),
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	setup := `{ provider = "gemini", model = "gemini-3-flash-preview", tools = { auto_approve = { "calculator" } },
		providers = { gemini = { base_url = "` + srv.URL + `" } } }`
	eachNvimEnv(t, setup, []string{"GEMINI_API_KEY=AIza-test-key-123456", "ANTHROPIC_API_KEY="}, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.paths, f.keys, f.auth, f.body = nil, nil, nil, nil
		f.mu.Unlock()
		mustOpen(t, s, "gemini.chat", question)
		press(t, s, "<C-]>")
		got, err := s.Wait(20*time.Second, func(x string) bool { return strings.Contains(x, "6*7 is 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		if !strings.Contains(got, `<thinking gemini:signature="Z2VtaW5pLXNpZw==">`) {
			t.Errorf("the signed thinking is not the Gemini API's:\n%s", got)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.paths) != 2 {
			t.Fatalf("%d requests", len(f.paths))
		}
		for i := range f.paths {
			if f.paths[i] != "/v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse" || f.keys[i] != "AIza-test-key-123456" || f.auth[i] != "" {
				t.Errorf("request %d: %s key %q auth %q", i+1, f.paths[i], f.keys[i], f.auth[i])
			}
		}
		b, _ := json.Marshal(f.body[1]["contents"])
		if !strings.Contains(string(b), `"thoughtSignature":"Z2VtaW5pLXNpZw=="`) {
			t.Errorf("the signature did not go back: %s", b)
		}
	})
}

// Without a key, the user is told which variables, before anything is
// written.
func TestGeminiAPIKeyMissing(t *testing.T) {
	eachNvimEnv(t, `{ provider = "gemini" }`, nil, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "nokey.chat", question)
		press(t, s, "<C-]>")
		waitMessage(t, s, "gemini: no credential: set GEMINI_API_KEY or GOOGLE_API_KEY in the environment Neovim starts from. Nothing was sent.")
		waitText(t, s, strings.TrimSuffix(question, "\n"))
	})
}
