package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// TestAttachments: an @./notes.txt include reaches the request as text, and
// the image a read returns reaches the next request as an image block in
// the tool result; the buffer keeps only the references.
func TestAttachments(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR e2e image")
	f := &fakeAnthropic{turns: []string{
		sse("Looking.", [3]string{"toolu_img", "read", `{"label": "look", "path": "shot.png", "limit": null, "offset": null}`}),
		sse("A test image."),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "shot.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "attach.chat", "@You:\nMy notes: @./notes.txt\n")
		press(t, s, "<C-]>")
		got, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "A test image.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("buffer:\n%s\nmessages: %s", got, s.Messages())
		}
		if !strings.Contains(got, "My notes: @./notes.txt\n") || strings.Contains(got, "buy milk") || !strings.Contains(got, "@./shot.png;type=image/png") {
			t.Errorf("the buffer must hold the references only:\n%s", got)
		}
		f.mu.Lock()
		bodies := f.bodies
		f.mu.Unlock()
		if len(bodies) != 2 {
			t.Fatalf("%d requests", len(bodies))
		}
		first, _ := json.Marshal(bodies[0]["messages"])
		if !strings.Contains(string(first), `My notes: \u003cfile path=\"./notes.txt\"\u003e\nbuy milk\n\u003c/file\u003e`) &&
			!strings.Contains(string(first), `My notes: <file path=\"./notes.txt\">\nbuy milk\n</file>`) {
			t.Errorf("first request lacks the included notes: %s", first)
		}
		second, _ := json.Marshal(bodies[1]["messages"])
		want := `{"data":"` + base64.StdEncoding.EncodeToString(png) + `","media_type":"image/png","type":"base64"},"type":"image"}`
		if !strings.Contains(string(second), want) || !strings.Contains(string(second), `"tool_result"`) {
			t.Errorf("second request lacks the image in the tool result: %s", second)
		}
	})
}

// Issue 24, class 4: a .chat file from someone else names credential files
// outside the project (@~/.gitconfig) and inside a dot-folder of it
// (@./.git/config). Nothing is sent until the user allows them with
// :Flemma attach:allow — the file's own text cannot — and what is then sent
// has its credentials redacted by shape.
func TestAttachOutsideProjectAsks(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Ada\n[url \"https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/\"]\n\tinsteadOf = https://github.com/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeAnthropic{turns: []string{sse("Seen.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		if err := os.MkdirAll(filepath.Join(s.Dir, "proj", ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "proj", ".git", "config"), []byte("[http]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzXzEyMzQ1Njc4OTA=\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpenForeign(t, s, "proj/c.chat", "@You:\nsummarize @~/.gitconfig\nand @./.git/config\n")
		press(t, s, "<C-]>")
		waitIdle(t, s)
		if m := s.Messages(); !strings.Contains(m, "@~/.gitconfig (line 2), @./.git/config (line 3)") || !strings.Contains(m, ":Flemma attach:allow") {
			t.Errorf("no question naming the files:\n%s", m)
		}
		body := allowAfterAsking(t, s, f)
		for _, secret := range []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "eC1hY2Nlc3MtdG9rZW46Z2hzXzEyMzQ1Njc4OTA="} {
			if strings.Contains(string(body), secret) {
				t.Errorf("%s reached the request", secret)
			}
		}
		if !strings.Contains(string(body), "name = Ada") || !strings.Contains(string(body), "[redacted]") {
			t.Errorf("request: %s", body)
		}
	}, "HOME="+home)
}

// Issue 24, class 7: one budget per press. 100 spinning templates cost one
// template's deadline, not a hundred; 40 references to one 16 MiB file are
// read and sent once.
func TestSendBudget(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("Seen.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "spin.chat", "@You:\n"+strings.Repeat("{{ (function() while true do end end)() }}\n", 100))
		press(t, s, "<C-]>")
		waitIdle(t, s)
		var diags int
		if err := s.Lua(&diags, `return #vim.diagnostic.get(0)`); err != nil {
			t.Fatal(err)
		}
		if diags != 1 || !strings.Contains(s.Messages(), "Nothing was sent") {
			t.Errorf("%d diagnostics (want 1: the first template's); messages:\n%s", diags, s.Messages())
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "big.txt"), []byte(strings.Repeat("x", 16<<20)), 0o644); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "refs.chat", "@You:\n"+strings.Repeat("@./big.txt\n", 40))
		press(t, s, "<C-]>")
		if _, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "Seen.") }); err != nil {
			t.Fatalf("not sent:\n%s", s.Messages())
		}
		f.mu.Lock()
		body, _ := json.Marshal(f.bodies[0]["messages"])
		f.mu.Unlock()
		if n := strings.Count(string(body), "the same file as attached above"); n != 39 || len(body) > 1<<20 {
			t.Errorf("%d later references noted (want 39), request %d bytes", n, len(body))
		}
	})
}

// allowAfterAsking: nothing was sent while flemma asks about the files;
// :Flemma attach:allow sends the message (the answer is "Seen."). It
// returns the messages of that request as JSON.
func allowAfterAsking(t *testing.T, s *nvimtest.Session, f *fakeAnthropic) []byte {
	t.Helper()
	f.mu.Lock()
	n := len(f.bodies)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d request(s) sent before the user allowed the files", n)
	}
	press(t, s, ":Flemma attach:allow<CR>")
	if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Seen.") }); err != nil {
		t.Fatalf("not sent after attach:allow:\n%s", s.Messages())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := json.Marshal(f.bodies[0]["messages"])
	return body
}
