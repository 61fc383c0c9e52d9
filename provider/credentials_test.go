package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyScript writes a script that counts its runs in a file and prints
// "key-<run>" (or fails with a secret on stderr when fail is set).
func keyScript(t *testing.T, body string) (argv []string, runs func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := filepath.Join(dir, "key.sh")
	src := "#!/bin/sh\nn=$(cat " + count + " 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > " + count + "\n" + body + "\n"
	if err := os.WriteFile(script, []byte(src), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{script, "show", "flemma"}, func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func noEnv(string) string { return "" }

// The command's first line is the key; it is cached for CacheTTL (the
// injected clock) and run again after.
func TestKeyCommandCache(t *testing.T) {
	argv, runs := keyScript(t, `echo "key-$n"; echo "second line"`)
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	kr := &Keyring{Now: clock.now}
	src := KeySource{Cmd: argv, CacheTTL: time.Hour}
	get := func() string {
		t.Helper()
		c, err := kr.Get(context.Background(), "openai", src, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Source != "the command `"+argv[0]+"`" {
			t.Errorf("source = %q", c.Source)
		}
		return c.Value
	}
	if v := get(); v != "key-1" {
		t.Fatalf("key = %q, want key-1", v)
	}
	clock.add(59 * time.Minute)
	if v := get(); v != "key-1" || runs() != 1 {
		t.Errorf("within the TTL: key %q after %d runs, want the cached key-1 after 1", v, runs())
	}
	clock.add(2 * time.Minute)
	if v := get(); v != "key-2" || runs() != 2 {
		t.Errorf("after the TTL: key %q after %d runs, want key-2 after 2", v, runs())
	}
}

// A failing command is reported by name and exit code; its stderr (which
// may hold a secret) is not.
func TestKeyCommandFailure(t *testing.T) {
	argv, _ := keyScript(t, `echo "s3cret-on-stderr" >&2; exit 3`)
	_, err := (&Keyring{}).Get(context.Background(), "openai", KeySource{Cmd: argv}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "failed (exit code 3)") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v", err)
	}
	argv, _ = keyScript(t, `echo ""`)
	_, err = (&Keyring{}).Get(context.Background(), "openai", KeySource{Cmd: argv}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("empty output: err = %v", err)
	}
	argv, _ = keyScript(t, `exec sleep 30`)
	_, err = (&Keyring{}).Get(context.Background(), "openai", KeySource{Cmd: argv, Timeout: 100 * time.Millisecond}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 100ms") {
		t.Errorf("timeout: err = %v", err)
	}
}

// unauthorized answers 401 unless the request carries want.
func unauthorized(t *testing.T, want string, stream string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, auth)
		mu.Unlock()
		if auth != "Bearer "+want {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// Vertex: an expired token in the environment gives a 401; gcloud (here
// a script) gives a fresh one and the request is sent once more.
func TestVertexTokenRefreshOn401(t *testing.T) {
	argv, runs := keyScript(t, `echo "ya29.fresh-$n"`)
	stream := new(sse).data(vChunk("STOP", obj{"promptTokenCount": 3, "candidatesTokenCount": 1}, obj{"text": "Hi"})).String()
	srv, seen := unauthorized(t, "ya29.fresh-1", stream)
	env := func(k string) string {
		if k == "VERTEX_AI_ACCESS_TOKEN" {
			return "ya29.expired"
		}
		return testEnv(k)
	}
	src := DefaultKeySource("vertex")
	src.Cmd = argv
	p, err := New("vertex", Config{BaseURL: srv.URL, Getenv: env, Key: &src, Keys: &Keyring{}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(context.Background(), p, hello())
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := strings.Join(*seen, ","); got != "Bearer ya29.expired,Bearer ya29.fresh-1" {
		t.Errorf("authorizations sent: %s", got)
	}
	if runs() != 1 || len(evs) == 0 {
		t.Errorf("gcloud ran %d times, %d events", runs(), len(evs))
	}
	// The next request uses the cached fresh token at once.
	if _, err := collect(context.Background(), p, hello()); err != nil || len(*seen) != 3 || runs() != 1 {
		t.Errorf("second request: err %v, %d requests, %d runs", err, len(*seen), runs())
	}
}

// A command's key that stays refused: one retry with a new run, then the
// error names the command (never the key).
func TestCommandKey401Wording(t *testing.T) {
	argv, runs := keyScript(t, `echo "bad-key-$n"`)
	srv, seen := unauthorized(t, "good", "")
	p := newChat(t, srv.URL, func(c *Config) { c.Key = &KeySource{Cmd: argv} })
	_, err := collect(context.Background(), p, modelReq(hello(), "m"))
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 401 {
		t.Fatalf("err = %v", err)
	}
	want := "ollama: 401 Request had invalid authentication credentials. (UNAUTHENTICATED) — the key came from the command `" + argv[0] + "` (providers.ollama.api_key_cmd), run again and refused again: check what it prints"
	if pe.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", pe.Error(), want)
	}
	if strings.Contains(pe.Error(), "bad-key") || runs() != 2 || len(*seen) != 2 {
		t.Errorf("key in the message, or %d runs / %d requests (want 2/2)", runs(), len(*seen))
	}
}

// A keyless provider that meets a 401 says that no key was sent.
func TestKeyless401Wording(t *testing.T) {
	srv, seen := unauthorized(t, "good", "")
	_, err := collect(context.Background(), newChat(t, srv.URL, nil), modelReq(hello(), "m"))
	if err == nil || !strings.HasSuffix(err.Error(), "— no key was sent: set providers.ollama.api_key_env or api_key_cmd") || len(*seen) != 1 || (*seen)[0] != "" {
		t.Errorf("err = %v, authorizations %q", err, *seen)
	}
}

func TestCredentialStatus(t *testing.T) {
	argv, runs := keyScript(t, `echo k`)
	for _, tc := range []struct {
		name    string
		cfg     Config
		present bool
		desc    string
	}{
		{"ollama", Config{Wire: "chat_completions", Key: &KeySource{}}, true, "none needed (no api_key_env or api_key_cmd configured)"},
		{"openrouter", Config{Key: &KeySource{Env: []string{"OPENROUTER_API_KEY"}}}, false, "$OPENROUTER_API_KEY"},
		{"openai", Config{Key: &KeySource{Env: []string{"OPENAI_API_KEY"}}}, true, "$OPENAI_API_KEY"},
		{"pass", Config{Key: &KeySource{Cmd: argv}}, true, "the command `" + argv[0] + "`"},
		{"gone", Config{Key: &KeySource{Cmd: []string{"flemma-test-no-such-command"}}}, false,
			"the command `flemma-test-no-such-command` (api_key_cmd); `flemma-test-no-such-command` is not on $PATH"},
	} {
		tc.cfg.Getenv = testEnv
		present, desc := CredentialStatus(tc.name, tc.cfg)
		if present != tc.present || desc != tc.desc {
			t.Errorf("%s: %v %q, want %v %q", tc.name, present, desc, tc.present, tc.desc)
		}
	}
	if runs() != 0 {
		t.Errorf("CredentialStatus ran the command")
	}
}

// Headers and extra_body on a built-in provider (Anthropic's anthropic-beta
// and a parameter), merged without reordering the big trailing keys;
// what flemma builds itself cannot be replaced.
func TestCustomHeadersAndBody(t *testing.T) {
	srv, c := sseServer(t, new(sse).aStart("m", 1).aText(0, "ok").aStop("end_turn", 1).String())
	p, err := New("anthropic", Config{BaseURL: srv.URL, Getenv: testEnv, Keys: &Keyring{},
		Headers:   map[string]string{"anthropic-beta": "context-1m-2025-08-07"},
		ExtraBody: map[string]any{"metadata": obj{"user_id": "u1"}, "thinking": obj{"display": "omitted"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(context.Background(), p, hello()); err != nil {
		t.Fatal(err)
	}
	_, _, h, body := c.get()
	if h.Get("anthropic-beta") != "context-1m-2025-08-07" || h.Get("x-api-key") != "sk-ant-test-secret" {
		t.Errorf("headers: %v", h)
	}
	s := string(body)
	if !strings.HasPrefix(s, `{"metadata":{"user_id":"u1"},`) || !strings.HasSuffix(s, `"role":"user"}]}`) {
		t.Errorf("body order: %s", s)
	}
	if !strings.Contains(s, `"display":"omitted"`) || !strings.Contains(s, `"type":"adaptive"`) && !strings.Contains(s, `"budget_tokens"`) {
		t.Errorf("thinking not merged key by key: %s", s)
	}

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ExtraBody: map[string]any{"messages": []any{}}}, "providers.anthropic.extra_body.messages: flemma sets"},
		{Config{ExtraBody: map[string]any{"model": "x"}}, "providers.anthropic.extra_body.model: flemma sets"},
		{Config{Headers: map[string]string{"X-Api-Key": "literal"}}, `providers.anthropic.headers["X-Api-Key"]: this header carries the credential`},
		{Config{Headers: map[string]string{"Authorization": "Bearer x"}}, `providers.anthropic.headers["Authorization"]`},
	} {
		if _, err := New("anthropic", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: err = %v, want %q", err, tc.want)
		}
	}
}

// Attack: a 401 (or any error) whose body echoes a configured header's
// token or the key shows [redacted] in the error the user, the log and
// the buffer's abort marker see (issue 24, item 13).
func TestErrorEchoingHeaderTokenIsRedacted(t *testing.T) {
	const token = "hdr-tok-9f8e7d6c5b4a"
	for _, status := range []int{http.StatusUnauthorized, http.StatusInternalServerError} {
		_, url := startScript(t, reply{status: status, body: `{"error":{"message":"bad token ` + token + ` for header X-Api-Token: Bearer ` + token + `"}}`})
		p := newChat(t, url, func(c *Config) { c.Headers = map[string]string{"X-Api-Token": "Bearer " + token} })
		_, err := collect(context.Background(), p, modelReq(hello(), "m"))
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%d: error shows the header's token: %s", status, err)
		}
	}
}
