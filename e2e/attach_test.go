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
