package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// goldenJSON indents a JSON body (key order kept) and compares it.
func goldenJSON(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	golden(t, name, buf.Bytes())
}

// sse builds an SSE body.
type sse struct{ strings.Builder }

// event writes an "event:" line and the JSON data of obj.
func (s *sse) event(obj map[string]any) *sse {
	s.WriteString("event: " + obj["type"].(string) + "\n")
	return s.data(obj)
}

// data writes a data-only event.
func (s *sse) data(obj any) *sse {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	s.WriteString("data: " + string(b) + "\n\n")
	return s
}

type obj = map[string]any

// Anthropic stream pieces.
func (s *sse) aStart(id string, input int) *sse {
	return s.event(obj{"type": "message_start", "message": obj{"id": id, "type": "message", "role": "assistant",
		"model": "claude-test", "content": []any{}, "stop_reason": nil,
		"usage": obj{"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}})
}

func (s *sse) aText(index int, chunks ...string) *sse {
	s.event(obj{"type": "content_block_start", "index": index, "content_block": obj{"type": "text", "text": ""}})
	for _, c := range chunks {
		s.event(obj{"type": "content_block_delta", "index": index, "delta": obj{"type": "text_delta", "text": c}})
	}
	return s.event(obj{"type": "content_block_stop", "index": index})
}

func (s *sse) aTool(index int, id, name string, argChunks ...string) *sse {
	s.event(obj{"type": "content_block_start", "index": index, "content_block": obj{"type": "tool_use", "id": id, "name": name, "input": obj{}}})
	for _, c := range argChunks {
		s.event(obj{"type": "content_block_delta", "index": index, "delta": obj{"type": "input_json_delta", "partial_json": c}})
	}
	return s.event(obj{"type": "content_block_stop", "index": index})
}

func (s *sse) aThinking(index int, sig string, chunks ...string) *sse {
	s.event(obj{"type": "content_block_start", "index": index, "content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
	for _, c := range chunks {
		s.event(obj{"type": "content_block_delta", "index": index, "delta": obj{"type": "thinking_delta", "thinking": c}})
	}
	if sig != "" {
		s.event(obj{"type": "content_block_delta", "index": index, "delta": obj{"type": "signature_delta", "signature": sig}})
	}
	return s.event(obj{"type": "content_block_stop", "index": index})
}

func (s *sse) aRedacted(index int, data string) *sse {
	s.event(obj{"type": "content_block_start", "index": index, "content_block": obj{"type": "redacted_thinking", "data": data}})
	return s.event(obj{"type": "content_block_stop", "index": index})
}

func (s *sse) aStop(reason string, output int) *sse {
	s.event(obj{"type": "message_delta", "delta": obj{"stop_reason": reason, "stop_sequence": nil}, "usage": obj{"output_tokens": output}})
	return s.event(obj{"type": "message_stop"})
}

// captured is the request a test server received.
type captured struct {
	mu     sync.Mutex
	method string
	path   string // with the query
	header http.Header
	body   []byte
	count  int
}

func (c *captured) get() (method, path string, header http.Header, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.method, c.path, c.header, c.body
}

// server serves body (an SSE stream) with the given status and content
// type for every request, and records the last request.
func server(t *testing.T, status int, contentType, body string) (*httptest.Server, *captured) {
	t.Helper()
	c := &captured{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.method, c.path, c.header, c.body = r.Method, r.URL.RequestURI(), r.Header.Clone(), b
		c.count++
		c.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

// sseServer serves an SSE body with status 200.
func sseServer(t *testing.T, body string) (*httptest.Server, *captured) {
	return server(t, http.StatusOK, "text/event-stream", body)
}

// testEnv is a Getenv with fake credentials.
func testEnv(k string) string {
	switch k {
	case "ANTHROPIC_API_KEY":
		return "sk-ant-test-secret"
	case "OPENAI_API_KEY":
		return "sk-openai-test-secret"
	case "VERTEX_AI_ACCESS_TOKEN":
		return "ya29.test-secret"
	case "GOOGLE_CLOUD_PROJECT":
		return "test-project"
	}
	return ""
}

// newTest returns the named provider pointed at base.
func newTest(t *testing.T, name, base string) Provider {
	t.Helper()
	p, err := New(name, Config{BaseURL: base, Getenv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	inner := p
	if c, ok := p.(*configured); ok {
		inner = c.inner
	}
	if v, ok := inner.(*vertex); ok {
		n := 0
		v.newID = func(name string) string { n++; return "urn:flemma:tool:" + name + ":test" + string(rune('0'+n)) }
	}
	return p
}

// collect streams req and returns the events and the error.
func collect(ctx context.Context, p Provider, req Request) ([]Event, error) {
	var evs []Event
	err := p.Stream(ctx, req, func(e Event) { evs = append(evs, e) })
	return evs, err
}

// write feeds events to a Writer after existing lines and returns the
// buffer text after Finish(false).
func write(existing []string, evs []Event) string {
	w := NewWriter(existing)
	for _, e := range evs {
		w.Add(e)
	}
	return strings.Join(append(append([]string(nil), existing...), w.Finish(false)...), "\n") + "\n"
}

// hello is a one-message request.
func hello() Request {
	return Request{Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Hello"}}}}}
}

// chatLines reads testdata/chat/<name> as buffer lines.
func chatLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "chat", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// chatRequest builds a request from testdata/chat/<name> for provider.
func chatRequest(t *testing.T, name, provider string) Request {
	t.Helper()
	sys, msgs, err := FromDocument(buffer.Parse(chatLines(t, name)), provider)
	if err != nil {
		t.Fatal(err)
	}
	return Request{System: sys, Messages: msgs, Tools: testTools()}
}

// testTools are tool definitions in the shapes of the built-ins (strict,
// all properties required, optional ones nullable) plus a namespaced one.
func testTools() []ToolDef {
	str := obj{"type": "string"}
	return []ToolDef{
		{Name: "read", Description: "Read a file.", Strict: true, InputSchema: obj{
			"type": "object", "additionalProperties": false, "required": []any{"label", "limit", "offset", "path"},
			"properties": obj{"label": str, "limit": obj{"type": []any{"number", "null"}}, "offset": obj{"type": []any{"number", "null"}}, "path": str}}},
		{Name: "bash", Description: "Run a shell command <in the sandbox> & report.", Strict: true, InputSchema: obj{
			"type": "object", "additionalProperties": false, "required": []any{"command", "label", "timeout"},
			"properties": obj{"command": str, "label": str, "timeout": obj{"type": []any{"number", "null"}}}}},
		{Name: "mcp:edit", Description: "Edit a file (MCP).", InputSchema: obj{
			"type": "object", "required": []any{"path", "oldText", "newText"},
			"properties": obj{"path": str, "oldText": str, "newText": str}}},
	}
}

// parseOK parses buffer text and fails on any diagnostic.
func parseOK(t *testing.T, text string) *buffer.Document {
	t.Helper()
	doc := buffer.Parse(strings.Split(strings.TrimSuffix(text, "\n"), "\n"))
	for _, d := range doc.Diagnostics {
		t.Errorf("diagnostic in written buffer: %s\n%s", d, text)
	}
	return doc
}
