package provider

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// tokenStream is a 2,000-token answer as text events of one token each,
// with a line break every ~12 tokens and a tool call at the end.
func tokenStream() []Event {
	words := []string{"The", " build", " fails", " on", " line", " 3", " of", " main", ".go", ",", " because", " `fmtx`"}
	evs := make([]Event, 0, 2002)
	for i := range 2000 {
		w := words[i%len(words)]
		if i%12 == 11 {
			w += "\n"
		}
		evs = append(evs, text(w))
	}
	evs = append(evs, tool("toolu_bench", "bash", `{"command":"go build ./...","label":"building","timeout":null}`), done("tool_use"))
	return evs
}

// BenchmarkWriter writes a 2,000-token response.
func BenchmarkWriter(b *testing.B) {
	evs := tokenStream()
	existing := []string{"@You:", "Why does the build fail?"}
	b.ReportAllocs()
	for b.Loop() {
		w := NewWriter(existing)
		for _, e := range evs {
			w.Add(e)
		}
		if len(w.Finish(false)) < 100 {
			b.Fatal("short output")
		}
	}
}

// BenchmarkWriterFlush also takes Lines every 20 events, as a caller
// flushing to the buffer does.
func BenchmarkWriterFlush(b *testing.B) {
	evs := tokenStream()
	existing := []string{"@You:", "Why does the build fail?"}
	b.ReportAllocs()
	for b.Loop() {
		w := NewWriter(existing)
		for i, e := range evs {
			w.Add(e)
			if i%20 == 19 {
				_ = w.Lines()
			}
		}
		_ = w.Finish(false)
	}
}

// BenchmarkAnthropicStream parses a 2,000-token SSE stream end to end
// through an in-memory transport (no network).
func BenchmarkAnthropicStream(b *testing.B) {
	s := new(sse).aStart("msg_bench", 100)
	chunks := make([]string, 2000)
	for i := range chunks {
		chunks[i] = " token"
	}
	body := s.aText(0, chunks...).aTool(1, "toolu_b", "bash", `{"command": "ls"}`).aStop("tool_use", 2000).String()
	p, _ := New("anthropic", Config{Getenv: testEnv, HTTPClient: &http.Client{Transport: staticTransport(body)}})
	benchStream(b, p, hello(), body)
}

// benchStream streams req from p (whose transport serves body) and wants
// at least 2,000 events.
func benchStream(b *testing.B, p Provider, req Request, body string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		n := 0
		if err := p.Stream(context.Background(), req, func(Event) { n++ }); err != nil || n < 2000 {
			b.Fatal(err, n)
		}
	}
}

type staticTransport string

func (s staticTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(s))), Request: r}, nil
}

// BenchmarkChatStream parses a 2,000-chunk Chat Completions stream end to
// end: string content (the common case), and Mistral's content part lists
// with thinking (issue 29: every documented shape decoded, think tags
// split), through an in-memory transport.
func BenchmarkChatStream(b *testing.B) {
	for _, tc := range []struct{ name, delta string }{
		{"string", `"content":" token"`},
		{"mistral_parts", `"content":[{"type":"thinking","thinking":[{"type":"text","text":" step"}]},{"type":"text","text":" token"}]`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var s strings.Builder
			for i := 0; i < 2000; i++ {
				s.WriteString(`data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{` + tc.delta + `},"finish_reason":null}]}` + "\n\n")
			}
			s.WriteString(`data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2000}}` + "\n\ndata: [DONE]\n\n")
			body := s.String()
			p, _ := New("srv", Config{Wire: "chat_completions", Keys: &Keyring{}, HTTPClient: &http.Client{Transport: staticTransport(body)}})
			benchStream(b, p, modelReq(hello(), "m"), body)
		})
	}
}

// BenchmarkOpenAIStream parses a 2,000-delta Responses stream (text, then
// a function call) end to end through an in-memory transport.
func BenchmarkOpenAIStream(b *testing.B) {
	chunks := make([]string, 2000)
	for i := range chunks {
		chunks[i] = " token"
	}
	s := new(sse).oStart("resp_bench").oMessage(0, "msg_b", chunks...).oCall(1, "fc_b", "call_b", "bash", `{"command":`, ` "ls"}`)
	s.event(obj{"type": "response.completed", "response": obj{"id": "resp_bench", "status": "completed",
		"usage": obj{"input_tokens": 100, "output_tokens": 2000, "input_tokens_details": obj{"cached_tokens": 0}}}})
	body := s.String()
	p, _ := New("openai", Config{Getenv: testEnv, HTTPClient: &http.Client{Transport: staticTransport(body)}})
	benchStream(b, p, hello(), body)
}

// BenchmarkVertexStream parses a 2,000-chunk streamGenerateContent stream
// (thought, text, then a function call) through an in-memory transport.
func BenchmarkVertexStream(b *testing.B) {
	s := new(sse).data(vChunk("", nil, vPart(obj{"thought": true, "text": "Thinking first."})))
	for range 2000 {
		s.data(vChunk("", nil, vPart(obj{"text": " token"})))
	}
	s.data(vChunk("STOP", obj{"promptTokenCount": 100, "candidatesTokenCount": 2000, "thoughtsTokenCount": 5},
		vPart(obj{"functionCall": obj{"name": "bash", "args": obj{"command": "ls"}}, "thoughtSignature": "c2ln"})))
	body := s.String()
	p, _ := New("vertex", Config{Getenv: testEnv, HTTPClient: &http.Client{Transport: staticTransport(body)}})
	benchStream(b, p, hello(), body)
}
