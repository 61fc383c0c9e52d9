package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// The fetch tool, enabled in setup: a call the model makes to a host that
// a fetch(<host>) rule approves runs in the host and its page arrives as
// Markdown; a call to another host asks. (The page server is on loopback,
// which setup's allow_private lets fetch reach.)
func TestFetchTool(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><h1>Changelog</h1><p>Version <b>3</b> is out.</p></body></html>`)
	}))
	t.Cleanup(page.Close)
	other := strings.Replace(page.URL, "127.0.0.1", "localhost", 1)
	f := &stepServer{steps: []step{
		{status: http.StatusOK, body: sse("", [3]string{"toolu_f1", "fetch", `{"url": "` + page.URL + `/changes", "label": null}`})},
		{status: http.StatusOK, body: sse("Version 3 is out.", [3]string{"toolu_f2", "fetch", `{"url": "` + other + `/x", "label": null}`})},
	}}
	extra := `, tools = { fetch = { enabled = true, allow_private = true }, auto_approve = { "$default", "fetch(127.0.0.1)" } }`
	eachNvimSteps(t, f, extra, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "fetch.chat", question)
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "toolu_f1")
		if isErr || !strings.Contains(body, "# Changelog") || !strings.Contains(body, "Version **3** is out.") || !strings.Contains(body, "URL: "+page.URL+"/changes") {
			t.Errorf("fetch result (error %v):\n%s", isErr, body)
		}
		// Another host: the call waits for the user.
		if got, err := s.Wait(20*time.Second, func(x string) bool {
			return strings.Contains(x, "**Tool Result:** `toolu_f2`") && strings.Contains(x, "status=pending")
		}); err != nil {
			t.Fatalf("the call to another host did not ask:\n%s\nmessages: %s", got, s.Messages())
		}
		reqs := f.requests()
		b := fmt.Sprint(reqs[0]["tools"])
		if !strings.Contains(b, "fetch") {
			t.Errorf("the fetch tool was not offered: %s", b)
		}
	})
}

// Off by default: the model is not offered fetch.
func TestFetchToolOffByDefault(t *testing.T) {
	f := &stepServer{steps: []step{{status: http.StatusOK, body: sse("Hi.")}}}
	eachNvimSteps(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "nofetch.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, question+"\n@Assistant:\nHi.\n\n@You:\n")
		if b := fmt.Sprint(f.requests()[0]["tools"]); strings.Contains(b, "name:fetch") {
			t.Errorf("fetch offered by default: %s", b)
		}
	})
}
