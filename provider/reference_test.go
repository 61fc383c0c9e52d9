package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// TestReferenceFixtures checks the parsers and FromDocument against the Lua
// Flemma's recorded fixtures when $FLEMMA_REFERENCE_FIXTURES names their
// directory. They are reference data outside this repository (AGPL), read
// only, never copied in; the test is skipped without them.
func TestReferenceFixtures(t *testing.T) {
	dir := os.Getenv("FLEMMA_REFERENCE_FIXTURES")
	if dir == "" {
		t.Skip("set FLEMMA_REFERENCE_FIXTURES to the Lua Flemma fixtures directory to run")
	}
	streams, _ := filepath.Glob(filepath.Join(dir, "tool_calling", "*stream*.txt"))
	top, _ := filepath.Glob(filepath.Join(dir, "*_stream.txt"))
	streams = append(streams, top...)
	for _, path := range streams {
		base := filepath.Base(path)
		var name string
		switch {
		case strings.HasPrefix(base, "anthropic"):
			name = "anthropic"
		case strings.HasPrefix(base, "openai"):
			name = "openai"
		case strings.HasPrefix(base, "vertex"):
			name = "vertex"
		default:
			continue // Chat Completions: not a provider of this project
		}
		t.Run(base, func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srv, _ := sseServer(t, string(body))
			evs, err := collect(context.Background(), newTest(t, name, srv.URL), hello())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			text := write([]string{"@You:", "Hello"}, evs)
			parseOK(t, text)
			t.Logf("\n%s", text)
		})
	}
	errs, _ := filepath.Glob(filepath.Join(dir, "openai_*_error.txt"))
	for _, path := range errs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			body, _ := os.ReadFile(path)
			srv, _ := server(t, 200, "text/plain", string(body)) // as the reference serves them: status unseen
			_, err := collect(context.Background(), newTest(t, "openai", srv.URL), hello())
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			t.Logf("%v", err)
		})
	}
	chats, _ := filepath.Glob(filepath.Join(dir, "tool_calling", "*.chat"))
	for _, path := range chats {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, _ := os.ReadFile(path)
			doc := buffer.Parse(strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
			for _, p := range []string{"anthropic", "openai", "vertex"} {
				sys, msgs, err := FromDocument(doc, p)
				if err != nil {
					t.Logf("%s: %v", p, err)
					continue
				}
				req := Request{System: sys, Messages: msgs, Tools: testTools()}
				for _, build := range []func(Request) ([]byte, error){anthropicBody, openaiBody, func(r Request) ([]byte, error) { return vertexBody(r, "vertex") }} {
					if _, err := build(req); err != nil {
						t.Errorf("%s: %v", p, err)
					}
				}
			}
		})
	}
}
