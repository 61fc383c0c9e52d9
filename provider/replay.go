package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The replay provider answers from a script instead of a network: it is the
// Anthropic client whose HTTP transport serves the script's bytes, so the
// request is built and the response parsed by exactly the code that talks
// to Anthropic.
//
// Script format (a text file, conventionally *.sse):
//
//	# comment lines and "key: value" settings, before the first turn
//	delay: 20ms
//	=== turn ===
//	event: message_start
//	data: {"type":"message_start",…}
//
//	…the Anthropic SSE body of the first response…
//	=== turn ===
//	…the body of the second response…
//
// A line "=== turn ===" starts a turn; the turn is the SSE body served
// verbatim, up to the next such line. A request gets the turn whose index
// (0-based) is the number of assistant messages it already contains, so a
// conversation replays turn 1, 2, … as it grows, and re-sending the same
// buffer replays the same turn. The only setting is delay, a pause before
// each SSE event (Go duration syntax, default 0) that makes the stream
// visibly stream.
func init() {
	// New makes a replay itself (no credential, no custom client).
	registerWire(Wire{Name: "replay", Builtin: true, New: func(_ string, cfg Config) Provider { return newReplay(cfg) }})
}

func newReplay(cfg Config) Provider {
	c := cfg
	c.HTTPClient = &http.Client{Transport: &replayTransport{file: cfg.ReplayFile}}
	c.BaseURL = "http://replay.invalid"
	return &anthropic{cfg: c, name: "replay", keyless: true}
}

// replaySeparator starts a turn in a replay script.
const replaySeparator = "=== turn ==="

// replayScript is a parsed replay file.
type replayScript struct {
	delay time.Duration
	turns [][]byte
}

// parseReplay reads a replay script.
func parseReplay(b []byte) (*replayScript, error) {
	s := &replayScript{}
	lines := strings.SplitAfter(string(b), "\n")
	var cur *bytes.Buffer
	for i, line := range lines {
		bare := strings.TrimRight(line, " \t\r\n")
		if bare == replaySeparator {
			if cur != nil {
				s.turns = append(s.turns, cur.Bytes())
			}
			cur = &bytes.Buffer{}
			continue
		}
		if cur != nil {
			cur.WriteString(line)
			continue
		}
		if bare == "" || strings.HasPrefix(bare, "#") {
			continue
		}
		key, value, ok := strings.Cut(bare, ":")
		switch strings.TrimSpace(key) {
		case "delay":
			d, err := time.ParseDuration(strings.TrimSpace(value))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("line %d: bad delay %q (want a duration such as 20ms)", i+1, strings.TrimSpace(value))
			}
			s.delay = d
		default:
			if !ok {
				return nil, fmt.Errorf("line %d: expected %q or a setting (delay: 20ms) before the first turn", i+1, replaySeparator)
			}
			return nil, fmt.Errorf("line %d: unknown setting %q", i+1, strings.TrimSpace(key))
		}
	}
	if cur != nil {
		s.turns = append(s.turns, cur.Bytes())
	}
	if len(s.turns) == 0 {
		return nil, fmt.Errorf("no turns (each turn starts with a line %q)", replaySeparator)
	}
	return s, nil
}

// replayTransport serves the turn a request asks for.
type replayTransport struct{ file string }

func (t *replayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return nil, &Error{Provider: "replay", Message: "bad request body: " + err.Error()}
		}
	}
	turn := 0
	for _, m := range body.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	name := filepath.Base(t.file)
	raw, err := os.ReadFile(t.file)
	if err != nil {
		return nil, &Error{Provider: "replay", Message: "cannot read the replay file: " + err.Error()}
	}
	script, err := parseReplay(raw)
	if err != nil {
		return nil, &Error{Provider: "replay", Message: name + ": " + err.Error()}
	}
	if turn >= len(script.turns) {
		return nil, &Error{Provider: "replay", Message: fmt.Sprintf("%s has no turn %d (it has %d): the conversation went past the script", name, turn+1, len(script.turns))}
	}
	var rc io.ReadCloser = io.NopCloser(bytes.NewReader(script.turns[turn]))
	if script.delay > 0 {
		rc = slowBody(req, script.turns[turn], script.delay)
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    rc,
		Request: req,
	}, nil
}

// slowBody serves an SSE body one event at a time, pausing before each, and
// stops with the request's context.
func slowBody(req *http.Request, body []byte, delay time.Duration) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		ctx := req.Context()
		timer := time.NewTimer(delay)
		defer timer.Stop()
		for len(body) > 0 {
			n := bytes.Index(body, []byte("\n\n"))
			if n < 0 {
				n = len(body)
			} else {
				n += 2
			}
			select {
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			case <-timer.C:
			}
			if _, err := pw.Write(body[:n]); err != nil {
				return // reader closed
			}
			body = body[n:]
			timer.Reset(delay)
		}
		pw.Close()
	}()
	return pr
}
