package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// The buffer after <C-c> (or an error) in the middle of an answer: the
// partial answer with its abort marker and an empty @You: prompt.
const afterCancel = `@You:
Tell me a story

@Assistant:
Once upon a

<!-- flemma:aborted: Response interrupted by the user. -->

@You:
`

const afterError = `@You:
Tell me a story

@Assistant:
<thinking anthropic:signature="c2ln">
Plan the story.
</thinking>

Once upon a

<!-- flemma:aborted: Response interrupted by an error: anthropic: overloaded_error — Overloaded -->

@You:

`

// lastTurn returns the role and the text of the last message of a request
// body, per provider.
func lastTurn(t *testing.T, provider string, body []byte) (role, text string) {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	key := map[string]string{"anthropic": "messages", "openai": "input", "vertex": "contents"}[provider]
	msgs, _ := b[key].([]any)
	if len(msgs) == 0 {
		t.Fatalf("%s: no messages in %s", provider, body)
	}
	last := msgs[len(msgs)-1].(map[string]any)
	role, _ = last["role"].(string)
	j, _ := json.Marshal(last)
	return role, string(j)
}

// The next press after an interrupted answer sends a conversation that ends
// with the user's turn, for every provider: the partial answer is left out
// while nothing of the user's follows it, and sent as a closed turn (its
// marker a comment) once the user writes.
func TestNextPressAfterInterruption(t *testing.T) {
	for _, tc := range []struct {
		name, chat, wantLast string
		partialSent          bool
	}{
		{"after cancel", afterCancel, "Tell me a story", false},
		{"after an error", afterError, "Tell me a story", false},
		{"the user wrote on", afterCancel + "Go on, but shorter\n", "Go on, but shorter", true},
	} {
		for _, name := range []string{"anthropic", "openai", "vertex"} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				doc := buffer.Parse(strings.Split(strings.TrimSuffix(tc.chat, "\n"), "\n"))
				sys, msgs, err := FromDocument(doc, name)
				if err != nil {
					t.Fatal(err)
				}
				srv, c := sseServer(t, "")
				_, _ = collect(context.Background(), newTest(t, name, srv.URL), Request{System: sys, Messages: msgs})
				_, _, _, body := c.get()
				role, last := lastTurn(t, name, body)
				if role != "user" || !strings.Contains(last, tc.wantLast) {
					t.Errorf("the request ends with %s %s", role, last)
				}
				if got := strings.Contains(string(body), "Once upon a"); got != tc.partialSent {
					t.Errorf("partial answer sent = %v, want %v:\n%s", got, tc.partialSent, body)
				}
				if tc.partialSent && !strings.Contains(string(body), "<!-- Response interrupted by the user. -->") {
					t.Errorf("the closed turn lacks its marker:\n%s", body)
				}
				if name == "anthropic" && tc.partialSent {
					goldenJSON(t, "request/anthropic_after_interruption.json", body)
				}
			})
		}
	}
}

func TestInterruptedTail(t *testing.T) {
	for _, tc := range []struct {
		name, chat string
		dropped    bool
	}{
		{"cancel, empty prompt", afterCancel, true},
		{"cancel, no prompt", "@You:\nQ\n\n@Assistant:\nPart\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n", true},
		{"cut at max_tokens", "@You:\nQ\n\n@Assistant:\nPart\n\n<!-- flemma:aborted: Response cut at the output limit (max_tokens): none of its tool calls was run. -->\n\n@You:\n", true},
		{"a note after it is not the user's", afterCancel + "\n@Note:\nmine\n", true},
		{"complete answer", "@You:\nQ\n\n@Assistant:\nA whole answer.\n\n@You:\n", false},
		{"marker not last", "@You:\nQ\n\n@Assistant:\nPart\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\nMore text the user typed.\n\n@You:\n", false},
		{"user text follows", afterCancel + "more\n", false},
		{"with tool calls", "@You:\nList\n\n@Assistant:\n**Tool Use:** `ls` (`toolu_A1`)\n\n```json\n{\"path\": \".\"}\n```\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\n@You:\n**Tool Result:** `toolu_A1` (error)\n\n```\nThe response was interrupted before this tool ran.\n```\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := buffer.Parse(strings.Split(strings.TrimSuffix(tc.chat, "\n"), "\n"))
			m := interruptedTail(doc)
			if (m != nil) != tc.dropped {
				t.Fatalf("interruptedTail = %v, want dropped %v", m, tc.dropped)
			}
			_, msgs, err := FromDocument(doc, "anthropic")
			if err != nil {
				t.Fatal(err)
			}
			if tc.dropped && msgs[len(msgs)-1].Role != RoleUser {
				t.Errorf("the conversation ends with %s", describe("", msgs))
			}
		})
	}
}
