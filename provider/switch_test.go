package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// loopFrom streams a recorded response of one provider that ends with a
// tool call, writes it into a buffer and answers the call: the buffer of a
// tool loop that provider started.
func loopFrom(t *testing.T, provider, stream, result string) *buffer.Document {
	t.Helper()
	return parseOK(t, loopText(t, provider, stream, result))
}

// loopText is loopFrom's buffer text.
func loopText(t *testing.T, provider, stream, result string) string {
	t.Helper()
	streams := map[string]map[string]string{"anthropic": anthropicStreams(), "openai": openaiStreams(), "vertex": vertexStreams()}
	srv, _ := sseServer(t, streams[provider][stream])
	evs, err := collect(context.Background(), newTest(t, provider, srv.URL), hello())
	if err != nil {
		t.Fatal(err)
	}
	text := write([]string{"@You:", "Hello"}, evs)
	doc := parseOK(t, text)
	var b strings.Builder
	b.WriteString(text)
	for _, u := range doc.ToolUses() {
		b.WriteString("**Tool Result:** `" + u.ID + "`\n\n```\n" + result + "\n```\n\n")
	}
	return b.String()
}

// bodyFor builds the request body of target for a buffer.
func bodyFor(t *testing.T, doc *buffer.Document, target string, p Params) string {
	t.Helper()
	sys, msgs, err := FromDocument(doc, target)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{System: sys, Messages: msgs, Tools: testTools(), Params: p}
	var b []byte
	switch target {
	case "anthropic":
		b, err = anthropicBody(req)
	case "openai":
		b, err = openaiBody(req)
	case "vertex":
		b, err = vertexBody(req, "vertex")
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Switching provider in the middle of a tool loop (:Flemma switch, or a
// frontmatter that names another provider) must not produce a request the
// new provider rejects: no other provider's signatures or reasoning items,
// tool ids it accepts, Anthropic's thinking off when the turn that made
// the calls has none of its own, Gemini 3's signature on calls it did not
// make.
func TestSwitchMidToolLoop(t *testing.T) {
	origins := []struct {
		provider, stream string
		secrets          []string // what only the origin may see
	}{
		{"anthropic", "thinking_then_tool", []string{"c2lnLXRvb2w=", "redacted_thinking"}},
		{"openai", "reasoning_then_tool", []string{"gAAAA-encrypted-test-one", `"type":"reasoning"`, "rs_o4"}},
		{"vertex", "thought_text_call", []string{"dGhvdWdodC1zaWctMQ=="}},
	}
	for _, o := range origins {
		doc := loopFrom(t, o.provider, o.stream, "a.go\nb.go")
		for _, target := range []string{"anthropic", "openai", "vertex"} {
			if target == o.provider {
				continue
			}
			t.Run(o.provider+"_to_"+target, func(t *testing.T) {
				body := bodyFor(t, doc, target, Params{Thinking: "high"})
				for _, s := range o.secrets {
					if strings.Contains(body, s) {
						t.Errorf("the %s request carries %s's %q:\n%s", target, o.provider, s, body)
					}
				}
				if strings.Contains(body, exactPrefix) {
					t.Errorf("a wrapped signature leaked: %s", body)
				}
				var ids, answered []string
				switch target {
				case "anthropic":
					var raw struct {
						Thinking any `json:"thinking"`
						Messages []struct {
							Content []map[string]any `json:"content"`
						} `json:"messages"`
					}
					json.Unmarshal([]byte(body), &raw)
					if raw.Thinking != nil {
						t.Errorf("thinking on for a loop %s started: the API wants the calling turn to start with its own thinking", o.provider)
					}
					for _, m := range raw.Messages {
						for _, c := range m.Content {
							switch c["type"] {
							case "tool_use":
								ids = append(ids, c["id"].(string))
							case "tool_result":
								answered = append(answered, c["tool_use_id"].(string))
							case "thinking", "redacted_thinking":
								t.Errorf("a native %s block from %s", c["type"], o.provider)
							}
						}
					}
				case "openai":
					var b struct {
						Input []map[string]any `json:"input"`
					}
					json.Unmarshal([]byte(body), &b)
					for _, it := range b.Input {
						switch it["type"] {
						case "function_call":
							ids = append(ids, it["call_id"].(string))
						case "function_call_output":
							answered = append(answered, it["call_id"].(string))
						case "reasoning":
							t.Errorf("a reasoning item from %s", o.provider)
						}
					}
				case "vertex":
					var b struct {
						Contents []struct {
							Role  string           `json:"role"`
							Parts []map[string]any `json:"parts"`
						} `json:"contents"`
					}
					json.Unmarshal([]byte(body), &b)
					calls := 0
					for _, c := range b.Contents {
						for i, p := range c.Parts {
							if _, ok := p["functionCall"]; ok {
								calls++
								if i == firstCall(c.Parts) && p["thoughtSignature"] != vertexForeignSignature {
									t.Errorf("Gemini 3 rejects a call without a thought signature: %v", p)
								}
							}
						}
					}
					if calls != 1 {
						t.Errorf("%d function calls, want 1:\n%s", calls, body)
					}
					return // Gemini pairs results by name, not id
				}
				if len(ids) != 1 || len(answered) != 1 || ids[0] != answered[0] || !validToolID(ids[0]) {
					t.Errorf("tool ids %v, results for %v: want one valid id, answered", ids, answered)
				}
			})
		}
	}
}

func firstCall(parts []map[string]any) int {
	for i, p := range parts {
		if _, ok := p["functionCall"]; ok {
			return i
		}
	}
	return -1
}

// Within one provider nothing changes: Anthropic keeps thinking on in its
// own loop, and a Gemini signature rides on its own call.
func TestSameProviderLoopKeepsThinking(t *testing.T) {
	doc := loopFrom(t, "anthropic", "thinking_then_tool", "ok")
	body := bodyFor(t, doc, "anthropic", Params{Thinking: "high"})
	if !strings.Contains(body, `"thinking":{"display":"summarized","type":"adaptive"}`) || !strings.Contains(body, `"signature":"c2lnLXRvb2w="`) {
		t.Errorf("Anthropic's own loop lost thinking or its signature:\n%s", body)
	}
	doc = loopFrom(t, "vertex", "thought_text_call", "ok")
	body = bodyFor(t, doc, "vertex", Params{})
	if !strings.Contains(body, `"thoughtSignature":"dGhvdWdodC1zaWctMQ=="`) || strings.Contains(body, vertexForeignSignature) {
		t.Errorf("Gemini's own signature is not the one sent:\n%s", body)
	}
	// A loop Anthropic started whose signature was lost (the user removed
	// it) is sent like another provider's: thinking off, the old thinking
	// as text.
	text := loopText(t, "anthropic", "thinking_then_tool", "ok")
	text = strings.Replace(text, `<thinking anthropic:signature="c2lnLXRvb2w=">`, "<thinking>", 1)
	body = bodyFor(t, parseOK(t, text), "anthropic", Params{Thinking: "high"})
	if strings.Contains(body, `"thinking":{`) || !strings.Contains(body, `<thinking>\nI should list the directory.\n</thinking>`) {
		t.Errorf("unsigned loop:\n%s", body)
	}
}

// An empty tool result is never sent empty: Anthropic rejects an empty
// error result ("content cannot be empty if is_error is true"), and an
// empty success leaves the model guessing.
func TestEmptyToolResults(t *testing.T) {
	for _, isErr := range []bool{true, false} {
		msgs := []Message{
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Go"}}},
			{Role: RoleAssistant, Parts: []Part{{Kind: PartToolUse, ToolUse: &ToolUse{ID: "toolu_1", Name: "bash", Input: json.RawMessage(`{}`)}}}},
			{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ToolResult: &ToolResult{ToolUseID: "toolu_1", Content: " \n", IsError: isErr}}}},
		}
		want := "(no output)"
		if isErr {
			want = "(error without message)"
		}
		req := Request{Messages: msgs}
		a, _ := anthropicBody(req)
		o, _ := openaiBody(req)
		v, _ := vertexBody(req, "vertex")
		for name, b := range map[string]string{"anthropic": string(a), "openai": string(o), "vertex": string(v)} {
			if !strings.Contains(b, want) {
				t.Errorf("%s (error %v) does not send %q:\n%s", name, isErr, want, b)
			}
		}
		if isErr && !strings.Contains(string(a), `"content":"(error without message)","is_error":true`) {
			t.Errorf("anthropic error result: %s", a)
		}
	}
}
