package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// Anthropic's signature covers the thinking text: a signed block must go
// back byte for byte, whatever the text holds — or the next request fails
// with "invalid signature". Each case streams a signed block, writes it
// into a buffer, parses the buffer and builds the next request.
func TestSignedThinkingRoundTrip(t *testing.T) {
	cases := map[string]string{
		"plain":                            "The user greets me.",
		"leading and trailing blank lines": "\n\nFirst.\n\nLast.\n\n",
		"spaces around":                    "  indented start\ntrailing spaces   ",
		"CRLF":                             "line one\r\nline two\r\n",
		"lone CR":                          "progress 10%\rprogress 100%",
		"closing tag line":                 "I must not write\n</thinking>\nhere.",
		"closing tag with CR":              "</thinking>\r\nafter",
		"escaped closing tags":             "\\</thinking>\n\\\\</thinking>\n\\",
		"opening tags":                     "<thinking>\n<thinking anthropic:signature=\"x\">\n<thinking redacted>\n<thinking vertex:signature=\"y\"/>",
		"structure":                        "@You:\n@Assistant:\n**Tool Use:** `bash` (`t1`)\n\n```json\n{}\n```\n**Tool Result:** `t1`\n<!-- flemma:aborted: x -->",
		"fences":                           "```json\n{\"a\": 1}\n```\n````\nstill open\n",
		"tabs and unicode":                 "\tcafé — 東京 🙂\t",
		"control characters":               "bell\a esc\x1b[31mred\x1b[0m nul\x00 del\x7f",
		"invalid UTF-8":                    "bad \xff\xfe bytes",
		"only whitespace":                  "   \n\t\n",
		"one newline":                      "\n",
		"empty":                            "",
	}
	const sig = "EqQBCkgIARABGAIiQL+/c2lnbmF0dXJl/w=="
	for name, thought := range cases {
		t.Run(name, func(t *testing.T) {
			for _, interrupted := range []bool{false, true} {
				stream := new(sse).aStart("msg_rt", 10).aThinking(0, sig, thought).aText(1, "Answer.")
				if !interrupted {
					stream.aStop("end_turn", 20)
				}
				srv, _ := sseServer(t, stream.String())
				evs, _ := collect(context.Background(), newTest(t, "anthropic", srv.URL), hello())
				w := NewWriter([]string{"Hello"})
				for _, e := range evs {
					w.Add(e)
				}
				lines := w.Finish(interrupted)
				text := "@You:\nHello\n" + strings.Join(lines, "\n") + "\nNext question.\n"
				if buffer.Sanitize(text) != text {
					t.Fatalf("the buffer holds what a terminal would interpret:\n%q", text)
				}
				doc := parseOK(t, text)
				if len(doc.Messages) != 3 || len(doc.ToolUses()) != 0 {
					t.Fatalf("the thinking made structure: %d messages, %d tool uses\n%s", len(doc.Messages), len(doc.ToolUses()), text)
				}
				sys, msgs, err := FromDocument(doc, "anthropic")
				if err != nil {
					t.Fatal(err)
				}
				b, err := anthropicBody(Request{System: sys, Messages: msgs})
				if err != nil {
					t.Fatal(err)
				}
				var body struct {
					Messages []struct {
						Content []struct {
							Type      string  `json:"type"`
							Thinking  *string `json:"thinking"`
							Signature string  `json:"signature"`
						} `json:"content"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(b, &body); err != nil {
					t.Fatal(err)
				}
				c := body.Messages[1].Content[0]
				// What arrived is the stream's JSON string, decoded (invalid
				// UTF-8 cannot travel in JSON: it arrives as U+FFFD).
				var want string
				raw, _ := json.Marshal(thought)
				json.Unmarshal(raw, &want)
				if c.Type != "thinking" || c.Thinking == nil || *c.Thinking != want || c.Signature != sig {
					t.Errorf("interrupted %v: sent %s %q sig %q\nwant %q sig %q\nbuffer:\n%s", interrupted, c.Type, deref(c.Thinking), c.Signature, want, sig, text)
				}
				// Another provider gets the text the buffer shows, no
				// signature of any form.
				ob := bodyFor(t, doc, "openai", Params{})
				if strings.Contains(ob, `"signature":`) || strings.Contains(ob, exactPrefix) || strings.Contains(ob, "EqQB") {
					t.Errorf("openai request carries the signature: %s", ob)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// Text the buffer can hold is written as it is, readable; only text it
// cannot carries its exact form in the signature.
func TestSignedThinkingShown(t *testing.T) {
	cases := []struct{ thought, want string }{
		{"\n\nPlan.\n", "<thinking anthropic:signature=\"s\">\n\n\nPlan.\n\n</thinking>"},
		{"a\n</thinking>\nb", "<thinking anthropic:signature=\"s\">\na\n\\</thinking>\nb\n</thinking>"},
		{"one\r\ntwo", "<thinking anthropic:signature=\"" + exactSignature("one\r\ntwo", "s") + "\">\none\ntwo\n</thinking>"},
	}
	for _, tc := range cases {
		w := NewWriter(nil)
		w.Add(Event{Kind: EventThinking, Text: tc.thought})
		w.Add(Event{Kind: EventThinkingSignature, Signature: "s", Provider: "anthropic"})
		w.Add(Event{Kind: EventText, Text: "Ok."})
		got := strings.Join(w.Finish(false), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("thinking %q written as:\n%s\nwant:\n%s", tc.thought, got, tc.want)
		}
	}
	// A signature that only looks wrapped is passed on as it is.
	for _, s := range []string{exactPrefix + "!!!:sig", exactPrefix + "bm8tc2ln", exactPrefix + "YQ==:"} {
		if text, sig := signedThinking("shown", s); text != "shown" || sig != s {
			t.Errorf("signedThinking(%q) = %q, %q", s, text, sig)
		}
	}
}
