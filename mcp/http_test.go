package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A url server is spoken to over streamable HTTP, with setup's headers on
// every request.
func TestStreamableHTTP(t *testing.T) {
	var unauthorized atomic.Int32
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer setup-token" {
			unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	reg := tools.NewRegistry()
	m := New(reg, t.Logf)
	t.Cleanup(m.Close)
	if err := m.Configure(map[string]ServerConfig{"remote": {URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer setup-token"}}}, nil); err != nil {
		t.Fatal(err)
	}
	m.Ensure(context.Background())
	if st := m.Status()[0]; st.Status != StatusReady || st.Transport != "http: "+srv.URL {
		t.Fatalf("%+v", st)
	}
	if res := run(t, reg, "mcp:remote:echo", `{"text":"over http"}`); res.Content != "echo: over http" {
		t.Fatalf("%+v", res)
	}
	if n := unauthorized.Load(); n != 0 {
		t.Errorf("%d requests came without setup's header", n)
	}
}

// A url server that refuses (no token) fails with the reason.
func TestStreamableHTTPRefused(t *testing.T) {
	oldMax := MaxRestarts
	MaxRestarts = 0
	t.Cleanup(func() { MaxRestarts = oldMax })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	m := New(tools.NewRegistry(), t.Logf)
	t.Cleanup(m.Close)
	_ = m.Configure(map[string]ServerConfig{"remote": {URL: srv.URL}}, nil)
	m.Ensure(context.Background())
	if st := m.Status()[0]; st.Status != StatusFailed || st.Reason == "" {
		t.Fatalf("%+v", st)
	}
}
