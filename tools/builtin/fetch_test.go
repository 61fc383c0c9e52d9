package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/tools"
)

// local allows the loopback test servers (a local documentation server is
// what tools.fetch.allow_private is for).
var local = tools.FetchLimits{AllowPrivate: true}

func TestFetchHTMLAsMarkdown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>T</title><script>alert(1)</script></head><body>
<h1>Release notes</h1><p>Version <b>2.0</b> adds <a href="/docs/fetch">fetch</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	}))
	defer srv.Close()
	got, err := FetchURL(context.Background(), srv.URL+"/notes", local)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"URL: " + srv.URL + "/notes", "Status: 200 OK", "# Release notes", "Version **2.0** adds [fetch](" + srv.URL + "/docs/fetch).", "- one"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "alert(1)") {
		t.Errorf("a script reached the text:\n%s", got)
	}
}

func TestFetchTextAndLimits(t *testing.T) {
	big := strings.Repeat("0123456789", 400_000) // 4 MB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "just text")
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a":1}`)
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, big)
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case "/missing":
			http.Error(w, "no such page", http.StatusNotFound)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path, want, err string
		lim             tools.FetchLimits
	}{
		{"/plain", "just text", "", local},
		{"/json", `{"a":1}`, "", local},
		{"/big", "only the first 1000 bytes were read (tools.fetch.max_bytes)", "", tools.FetchLimits{AllowPrivate: true, MaxBytes: 1000}},
		{"/png", "", "image/png is not text", local},
		{"/missing", "", "404 Not Found: no such page", local},
		{"/slow", "", "no complete answer within 200ms (tools.fetch.timeout)", tools.FetchLimits{AllowPrivate: true, Timeout: 200 * time.Millisecond}},
	} {
		got, err := FetchURL(context.Background(), srv.URL+tc.path, tc.lim)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %v\n%.300s", tc.path, err, got)
		}
		if tc.path == "/big" && len(got) > 2000 {
			t.Errorf("/big: %d bytes returned past the cap", len(got))
		}
	}
}

// Attacks: nothing but the public internet is reached unless setup allows
// it — loopback, private, link-local (the cloud metadata address),
// unspecified, IPv6 forms of them, a name resolving to one of them among
// public ones; no other scheme; no credentials in the URL; env proxies are
// not used (they would resolve past the check).
func TestFetchRefusesNonPublic(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret admin page") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	names := map[string][]string{
		"localhost":         {"127.0.0.1"},
		"intranet.example":  {"10.1.2.3"},
		"mixed.example":     {"93.184.216.34", "192.168.1.10"},
		"metadata.example":  {"169.254.169.254"},
		"cgnat.example":     {"100.64.0.7"},
		"mapped.example":    {"::ffff:127.0.0.1"},
		"nat64.example":     {"64:ff9b::a00:1"},
		"sixtofour.example": {"2002:c0a8:0101::1"},
		"ula.example":       {"fd00::1"},
		"zero.example":      {"0.0.0.0"},
	}
	resolver := func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, s := range names[host] {
			out = append(out, netip.MustParseAddr(s))
		}
		if out == nil {
			return nil, errors.New("no such host")
		}
		return out, nil
	}
	lim := tools.FetchLimits{Resolver: resolver, Timeout: 5 * time.Second}
	for _, u := range []string{
		srv.URL, "http://127.0.0.1:" + port, "http://[::1]:" + port, "http://[::ffff:127.0.0.1]:" + port, "http://0.0.0.0:" + port,
		"http://169.254.169.254/latest/meta-data/", "http://localhost:" + port, "http://intranet.example/", "http://mixed.example/",
		"http://metadata.example/", "http://cgnat.example/", "http://mapped.example/", "http://nat64.example/", "http://sixtofour.example/",
		"http://ula.example/", "http://zero.example/", "http://2130706433:" + port + "/", "http://0x7f.0.0.1:" + port + "/",
	} {
		got, err := FetchURL(context.Background(), u, lim)
		if err == nil || strings.Contains(got, "secret admin page") {
			t.Errorf("%s was fetched: %q", u, got)
			continue
		}
		if !strings.Contains(err.Error(), "not fetched") && !strings.Contains(err.Error(), "no such host") {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"file:///etc/passwd", `only http and https URLs are fetched, not "file"`},
		{"ftp://example.com/x", `not "ftp"`},
		{"https://user:pw@example.com/", "carries credentials"},
		{"/relative", "only http and https"},
	} {
		if _, err := FetchURL(context.Background(), tc.url, lim); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.url, err)
		}
	}
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	if got, err := FetchURL(context.Background(), srv.URL, local); err != nil || !strings.Contains(got, "secret admin page") {
		t.Errorf("with a proxy in the environment (not used): %v", err)
	}
}

// DNS rebinding: every connection resolves and checks again; a name that
// answered a public address first and a private one later is refused at
// the later connection.
func TestFetchDNSRebinding(t *testing.T) {
	answers := []string{"93.184.216.34", "127.0.0.1"}
	n := 0
	g := &dialGuard{resolver: func(context.Context, string) ([]netip.Addr, error) {
		a := netip.MustParseAddr(answers[min(n, len(answers)-1)])
		n++
		return []netip.Addr{a}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := g.dial(ctx, "tcp", "rebind.example:80"); err != nil && strings.Contains(err.Error(), "not fetched") {
		t.Fatalf("the public answer was refused: %v", err)
	}
	if _, err := g.dial(ctx, "tcp", "rebind.example:80"); err == nil || !strings.Contains(err.Error(), "127.0.0.1, a loopback address: not fetched") {
		t.Errorf("the rebound answer: %v", err)
	}
}

// Redirects: followed on the same host (at most the limit), reported and
// not followed to another host (that fetch is approved on its own), never
// to another scheme.
func TestFetchRedirects(t *testing.T) {
	var other *httptest.Server
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "arrived")
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	defer srv.Close()
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other host") }))
	defer other.Close()
	other.URL = strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host name
	if got, err := FetchURL(context.Background(), srv.URL+"/same", local); err != nil || !strings.Contains(got, "arrived") || !strings.Contains(got, "URL: "+srv.URL+"/final") {
		t.Errorf("same host: %v %q", err, got)
	}
	for path, want := range map[string]string{
		"/away": "redirected to another host, " + other.URL + "/x: not followed",
		"/file": "only http and https URLs are fetched",
		"/loop": "more than 5 redirects",
	} {
		if got, err := FetchURL(context.Background(), srv.URL+path, local); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(got, "other host") {
			t.Errorf("%s: %v %q", path, err, got)
		}
	}
}

// The tool: disabled by default, marked side_effects (a call in a file
// never runs by a policy), and its output is what the executor makes of
// any tool's (sanitized, redacted, truncated).
func TestFetchTool(t *testing.T) {
	s := Fetch().Spec()
	if s.Enabled || s.Name != "fetch" || len(s.Capabilities) != 1 || s.Capabilities[0] != tools.CapSideEffects {
		t.Errorf("spec %+v", s)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "ok \x1b]52;c;ZXZpbA==\x07 done")
	}))
	defer srv.Close()
	reg := tools.NewRegistry()
	reg.MustAdd(Fetch())
	ex := &tools.Executor{Registry: reg}
	res := ex.Run(context.Background(), tools.Call{ID: "f1", Tool: "fetch", Env: &tools.Env{Fetch: local}}, []byte(`{"url":"`+srv.URL+`","label":null}`))
	if res.IsError || !strings.Contains(res.Content, "ok") || strings.Contains(res.Content, "\x1b") {
		t.Errorf("result %+v", res)
	}
}

// TestFetchedText: which bodies are read as HTML, as text, or refused, by
// their media type (and by their bytes when they have none).
func TestFetchedText(t *testing.T) {
	final, _ := url.Parse("https://example.org/a/b")
	for _, tt := range []struct {
		ctype, body, want, err string
	}{
		{"text/html; charset=utf-8", `<p>Hi <a href="/x">x</a></p>`, "Hi [x](https://example.org/x)", ""},
		{"application/xhtml+xml", `<p><b>b</b></p>`, "**b**", ""},
		{"", `<!doctype html><p><i>i</i></p>`, "*i*", ""},
		{"text/plain", "<p>not html</p>", "<p>not html</p>", ""},
		{"text/markdown", "# h", "# h", ""},
		{"text/plain; charset=iso-8859-1", "caf\xe9", "café", ""},
		{"application/json", `{"a":1}`, `{"a":1}`, ""},
		{"application/ld+json", `{}`, `{}`, ""},
		{"application/xml", `<a/>`, `<a/>`, ""},
		{"image/svg+xml", `<svg/>`, `<svg/>`, ""},
		{"application/javascript", `f()`, `f()`, ""},
		{"", "plain bytes", "plain bytes", ""},
		{"", "\xff\xfe", "", "fetch https://example.org/a/b: (none) is not text (2 bytes)"},
		{"application/octet-stream", "text", "", "application/octet-stream is not text (4 bytes)"},
		{"image/png", "\x89PNG", "", "image/png is not text"},
		{"application/jsonx", "{}", "", "application/jsonx is not text"},
	} {
		got, err := fetchedText([]byte(tt.body), tt.ctype, final)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q %q: %q, %v; want error %q", tt.ctype, tt.body, got, err, tt.err)
			}
			continue
		}
		if err != nil || strings.TrimSpace(got) != tt.want {
			t.Errorf("%q %q: %q, %v; want %q", tt.ctype, tt.body, got, err, tt.want)
		}
	}
}

// TestFetchBounds: setup's limits, the defaults where it sets none (or a
// value below 1).
func TestFetchBounds(t *testing.T) {
	for _, tt := range []struct {
		lim     tools.FetchLimits
		b, r    int
		timeout time.Duration
	}{
		{tools.FetchLimits{}, DefaultFetchMaxBytes, DefaultFetchRedirects, DefaultFetchTimeout},
		{tools.FetchLimits{MaxBytes: -1, MaxRedirects: -1, Timeout: -time.Second}, DefaultFetchMaxBytes, DefaultFetchRedirects, DefaultFetchTimeout},
		{tools.FetchLimits{MaxBytes: 10, MaxRedirects: 1, Timeout: time.Second}, 10, 1, time.Second},
	} {
		if b, timeout, r := fetchBounds(tt.lim); b != tt.b || r != tt.r || timeout != tt.timeout {
			t.Errorf("%+v: %d, %s, %d", tt.lim, b, timeout, r)
		}
	}
}
