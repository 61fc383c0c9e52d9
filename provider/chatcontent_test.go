package provider

import (
	"encoding/json"
	"strings"
	"testing"
)

// splitAll feeds s to a fresh thinkTags cut at every pair of positions and
// checks each way gives want (thinking, text).
func TestThinkTags(t *testing.T) {
	for _, tc := range []struct{ in, thinking, text string }{
		{"<think>\nplan\n</think>\n\nanswer", "\nplan\n", "answer"},
		{"  \n<think>a</think>b", "a", "b"},
		{"<thought>hmm</thought>ok", "hmm", "ok"},
		{"answer <think>not thinking</think>", "", "answer <think>not thinking</think>"},
		{"<thin", "", "<thin"},
		{"<think>never closed", "never closed", ""},
		{"<think></think>x", "", "x"},
		{"<thinking>is the buffer's own tag, not R1's</thinking>", "", "<thinking>is the buffer's own tag, not R1's</thinking>"},
		{"", "", ""},
		{"   ", "", "   "},
	} {
		for i := 0; i <= len(tc.in); i++ {
			for j := i; j <= len(tc.in); j++ {
				var tags thinkTags
				var th, tx strings.Builder
				for _, chunk := range []string{tc.in[:i], tc.in[i:j], tc.in[j:]} {
					for _, p := range append(tags.feed(chunk), nil...) {
						if p.thinking {
							th.WriteString(p.text)
						} else {
							tx.WriteString(p.text)
						}
					}
				}
				for _, p := range tags.flush() {
					if p.thinking {
						th.WriteString(p.text)
					} else {
						tx.WriteString(p.text)
					}
				}
				if th.String() != tc.thinking || tx.String() != tc.text {
					t.Fatalf("%q cut at %d,%d: thinking %q text %q, want %q %q", tc.in, i, j, th.String(), tx.String(), tc.thinking, tc.text)
				}
			}
		}
	}
}

// Every documented shape of delta.content, and the ones that must be
// reported instead of dropped.
func TestContentPieces(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []piece
		err  bool
	}{
		{`"hi"`, []piece{{text: "hi"}}, false},
		{`null`, nil, false},
		{``, nil, false},
		{`""`, nil, false},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, []piece{{text: "a"}, {text: "b"}}, false},
		{`[{"type":"thinking","thinking":[{"type":"text","text":"t"}],"closed":false},{"type":"text","text":"x"}]`, []piece{{thinking: true, text: "t"}, {text: "x"}}, false},
		{`[{"type":"thinking","thinking":"plain"}]`, []piece{{thinking: true, text: "plain"}}, false},
		{`[{"type":"thinking","thinking":[{"type":"reference","reference_ids":[1,2]}]}]`, nil, false},
		{`[{"type":"reference","reference_ids":[3]}]`, nil, false},
		{`["bare"]`, []piece{{text: "bare"}}, false},
		{`[{"type":"image_url","image_url":"x"}]`, nil, true},
		{`{"type":"text","text":"an object, not a list"}`, nil, true},
		{`42`, nil, true},
		{`[{"type":"text","text":5}]`, nil, true},
	} {
		got, err := contentPieces(json.RawMessage(tc.raw))
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", tc.raw, err, tc.err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.raw, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %+v, want %+v", tc.raw, got, tc.want)
			}
		}
	}
}

func TestSigner(t *testing.T) {
	for _, tc := range []struct{ name, wire, want string }{
		{"anthropic", "", "anthropic"},
		{"work-claude", "anthropic", "anthropic"},
		{"azure", "responses", "openai"},
		{"gemini", "", "gemini"},
		{"my-gemini_2", "chat_completions", "mygemini2"},
		{"--", "", "chat"},
	} {
		if got := Signer(tc.name, tc.wire); got != tc.want {
			t.Errorf("Signer(%q, %q) = %q, want %q", tc.name, tc.wire, got, tc.want)
		}
	}
}
