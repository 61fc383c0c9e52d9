package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestErrorShapes(t *testing.T) {
	cases := []struct {
		name, provider string
		status         int
		ctype, body    string
		header         map[string]string
		want           string // exact Error()
		retry          bool
	}{
		{name: "401 JSON", provider: "anthropic", status: 401, ctype: "application/json",
			body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			want: "anthropic: 401 invalid x-api-key" + " — the key came from $ANTHROPIC_API_KEY: check its value, or choose another source with providers.anthropic.api_key_env or api_key_cmd (Neovim's environment is fixed when it starts)"},
		{name: "429 with retry hint", provider: "anthropic", status: 429, ctype: "application/json",
			header: map[string]string{"Retry-After": "20"},
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your rate limit."}}`,
			want:   "anthropic: 429 This request would exceed your rate limit. (retry after 20s)", retry: true},
		{name: "529 overloaded", provider: "anthropic", status: 529, ctype: "application/json",
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			want: "anthropic: 529 Overloaded", retry: true},
		{name: "pretty-printed 401", provider: "openai", status: 401, ctype: "application/json",
			body: "{\n    \"error\": {\n        \"message\": \"Missing bearer authentication in header.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": null,\n        \"code\": null\n    }\n}\n",
			want: "openai: 401 Missing bearer authentication in header." + " — the key came from $OPENAI_API_KEY: check its value, or choose another source with providers.openai.api_key_env or api_key_cmd (Neovim's environment is fixed when it starts)"},
		{name: "key echoed back is redacted", provider: "openai", status: 401, ctype: "application/json",
			body: `{"error":{"message":"Incorrect API key provided: sk-openai-test-secret.","type":"invalid_request_error"}}`,
			want: "openai: 401 Incorrect API key provided: [redacted]." + " — the key came from $OPENAI_API_KEY: check its value, or choose another source with providers.openai.api_key_env or api_key_cmd (Neovim's environment is fixed when it starts)"},
		{name: "HTML 502 page", provider: "openai", status: 502, ctype: "text/html",
			body: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>edge-proxy</center>\n</body>\n</html>\n",
			want: "openai: 502 Bad Gateway", retry: true},
		{name: "HTML 500 without title", provider: "vertex", status: 500, ctype: "text/html",
			body: "<!DOCTYPE html><html><body><h1>Server  Error</h1>\n<p>Please try again &amp; wait.</p></body></html>",
			want: "vertex: 500 Server Error Please try again & wait.", retry: true},
		{name: "plain-text proxy error", provider: "anthropic", status: 503, ctype: "text/plain",
			body: "upstream connect error or disconnect/reset before headers.\n  reset reason: overflow\n",
			want: "anthropic: 503 upstream connect error or disconnect/reset before headers. reset reason: overflow", retry: true},
		{name: "empty body", provider: "openai", status: 500, ctype: "text/plain", want: "openai: 500 Internal Server Error", retry: true},
		{name: "vertex array error", provider: "vertex", status: 400, ctype: "application/json",
			body: `[{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"description":"Unknown name \"fooBar\""}]}]}}]`,
			want: `vertex: 400 Invalid JSON payload received. (INVALID_ARGUMENT); Unknown name "fooBar"`},
		{name: "context too long gets a hint", provider: "anthropic", status: 400, ctype: "application/json",
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			want: "anthropic: 400 prompt is too long: 210000 tokens > 200000 maximum — the conversation is too long for this model; shorten it or start a new chat"},
		{name: "200 with a JSON error body", provider: "openai", status: 200, ctype: "application/json",
			body: `{"error":{"message":"The model 'gpt-x' does not exist","type":"invalid_request_error"}}`,
			want: "openai: The model 'gpt-x' does not exist"},
		{name: "200 with an HTML page", provider: "anthropic", status: 200, ctype: "text/html",
			body: "<html><head><title>Sign in to the proxy</title></head><body>…</body></html>",
			want: "anthropic: unexpected response: Sign in to the proxy"},
		{name: "in-stream error event", provider: "anthropic", status: 200, ctype: "text/event-stream",
			body: new(sse).aStart("msg_e", 5).aText(0, "Partial").String() +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			want: "anthropic: overloaded_error — Overloaded", retry: true},
		{name: "refusal", provider: "anthropic", status: 200, ctype: "text/event-stream",
			body: new(sse).aStart("msg_r", 5).aThinking(0, "c2ln", "Hmm.").aStop("refusal", 3).String(),
			want: "anthropic: Response blocked by Anthropic (refusal)"},
		{name: "stream cut short", provider: "anthropic", status: 200, ctype: "text/event-stream",
			body: new(sse).aStart("msg_c", 5).aText(0, "Half an ans").String(),
			want: "anthropic: the response ended before it was complete (connection closed)", retry: true},
		{name: "openai error event", provider: "openai", status: 200, ctype: "text/event-stream",
			body: new(sse).oStart("resp_e").data(obj{"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached", "param": nil}).String(),
			want: "openai: stream error (code: rate_limit_exceeded): Rate limit reached", retry: true},
		{name: "openai bare error event", provider: "openai", status: 200, ctype: "text/event-stream",
			body: "event: error\ndata: {\"type\":\"error\"}\n\n",
			want: "openai: stream error"},
		{name: "openai response.failed", provider: "openai", status: 200, ctype: "text/event-stream",
			body: new(sse).oStart("resp_f").event(obj{"type": "response.failed", "response": obj{"status": "failed", "error": obj{"code": "server_error", "message": "The server had an error."}}}).String(),
			want: "openai: The server had an error.", retry: true},
		{name: "vertex in-stream error", provider: "vertex", status: 200, ctype: "text/event-stream",
			body: new(sse).data(obj{"error": obj{"code": 429, "message": "Resource exhausted, try later.", "status": "RESOURCE_EXHAUSTED"}}).String(),
			want: "vertex: Resource exhausted, try later. (RESOURCE_EXHAUSTED)", retry: true},
		{name: "vertex safety block", provider: "vertex", status: 200, ctype: "text/event-stream",
			body: new(sse).data(vChunk("", nil, obj{"thought": true, "text": "Considering."})).data(vChunk("SAFETY", nil)).String(),
			want: "vertex: Response blocked by Vertex AI (SAFETY)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := collect(context.Background(), newTest(t, tc.provider, srv.URL), hello())
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if pe.Error() != tc.want {
				t.Errorf("Error() = %q\nwant      %q", pe.Error(), tc.want)
			}
			if pe.Retryable != tc.retry {
				t.Errorf("Retryable = %v, want %v", pe.Retryable, tc.retry)
			}
			if tc.status != 200 && pe.Status != tc.status {
				t.Errorf("Status = %d, want %d", pe.Status, tc.status)
			}
			if strings.Contains(err.Error(), "test-secret") {
				t.Errorf("the credential leaked: %v", err)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, name := range []string{"anthropic", "openai", "vertex"} {
		_, err := collect(context.Background(), newTest(t, name, "http://"+addr), hello())
		var pe *Error
		if !errors.As(err, &pe) || !pe.Retryable || pe.Error() != name+": cannot connect: connection refused by "+addr {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// slowServer sends response headers and one event, then stalls until the
// client goes away.
func slowServer(t *testing.T, first string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTimeout(t *testing.T) {
	srv := slowServer(t, new(sse).aStart("msg_slow", 1).String())
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := collect(ctx, newTest(t, "anthropic", srv.URL), hello())
	var pe *Error
	if !errors.As(err, &pe) || !pe.Retryable || !errors.Is(err, context.DeadlineExceeded) || pe.Error() != "anthropic: the request timed out (send.timeouts.total)" {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	// Config.Timeout bounds the request too.
	p, _ := New("openai", Config{BaseURL: slowServer(t, "").URL, Getenv: testEnv, Timeout: 100 * time.Millisecond})
	_, err = collect(context.Background(), p, hello())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("Config.Timeout: err = %v", err)
	}
}

// Cancelling mid-stream returns context.Canceled, and the Writer turns what
// arrived into a valid buffer tail with the abort marker.
func TestCancelMidStream(t *testing.T) {
	srv := slowServer(t, new(sse).aStart("msg_cancel", 9).String()+
		`event: content_block_start`+"\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
		`event: content_block_delta`+"\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Working on it: first"}}`+"\n\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWriter([]string{"@You:", "Go"})
	done := make(chan error, 1)
	go func() {
		done <- newTest(t, "anthropic", srv.URL).Stream(ctx, hello(), func(e Event) {
			w.Add(e)
			if e.Kind == EventText {
				cancel() // the user presses <C-c>
			}
		})
	}()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Stream returned %v (%T), want context.Canceled", err, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
	got := strings.Join(append([]string{"@You:", "Go"}, w.FinishError(context.Canceled)...), "\n")
	want := "@You:\nGo\n\n@Assistant:\nWorking on it: first\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\n@You:\n"
	if got != want {
		t.Errorf("buffer after cancel:\n%q\nwant\n%q", got, want)
	}
	doc := parseOK(t, got)
	if m := doc.Messages[1]; m.AbortMarker() == nil || m.AbortMarker().Message != AbortedByUser {
		t.Errorf("the assistant message does not end with the abort marker")
	}
}

func TestMissingCredential(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"anthropic", "anthropic: no credential: set ANTHROPIC_API_KEY in the environment Neovim starts from"},
		{"openai", "openai: no credential: set OPENAI_API_KEY in the environment Neovim starts from"},
		{"vertex", "vertex: no credential: set VERTEX_AI_ACCESS_TOKEN or VERTEX_ACCESS_TOKEN in the environment Neovim starts from, or make the command work: the credential command `flemma-test-no-such-command` was not found on $PATH (api_key_cmd)"},
	} {
		cfg := Config{Getenv: func(string) string { return "" }}
		if tc.name == "vertex" { // the built-in source with a command that cannot run
			src := DefaultKeySource("vertex")
			src.Cmd = []string{"flemma-test-no-such-command"}
			cfg.Key = &src
		}
		p, _ := New(tc.name, cfg)
		err := p.Stream(context.Background(), hello(), func(Event) {})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

func TestCredentials(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "x", "VERTEX_ACCESS_TOKEN": "y", "ANTHROPIC_API_KEY": "  "}[k]
	}
	for _, tc := range []struct {
		name    string
		present bool
		source  string
	}{
		{"anthropic", false, "ANTHROPIC_API_KEY"},
		{"openai", true, "OPENAI_API_KEY"},
		{"vertex", true, "VERTEX_ACCESS_TOKEN"},
		{"replay", true, "replay file (no credential needed)"},
		{"nope", false, ""},
	} {
		present, source := Credentials(tc.name, env)
		if present != tc.present || source != tc.source {
			t.Errorf("Credentials(%q) = %v, %q; want %v, %q", tc.name, present, source, tc.present, tc.source)
		}
	}
}

func TestNew(t *testing.T) {
	for _, name := range []string{"anthropic", "gemini", "openai", "vertex"} {
		p, err := New(name, Config{})
		if err != nil || p.Name() != name {
			t.Errorf("New(%q) = %v, %v", name, p, err)
		}
	}
	_, err := New("palm", Config{})
	if err == nil || err.Error() != `unknown provider "palm" (known: anthropic, copilot, gemini, openai, replay, vertex)` {
		t.Errorf("New(palm) err = %v", err)
	}
	if _, err := New("replay", Config{}); err == nil {
		t.Error("replay without a file must fail")
	}
}
