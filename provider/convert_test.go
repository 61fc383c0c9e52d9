package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/buffer"
)

// describe renders a conversation compactly, one part per line.
func describe(system string, msgs []Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "system %q\n", system)
	for _, m := range msgs {
		for _, p := range m.Parts {
			fmt.Fprintf(&b, "%s ", m.Role)
			switch p.Kind {
			case PartText:
				fmt.Fprintf(&b, "text %q", p.Text)
			case PartThinking:
				th := p.Thinking
				fmt.Fprintf(&b, "thinking provider=%s sig=%q redacted=%v %q", th.Provider, th.Signature, th.Redacted, th.Content)
			case PartToolUse:
				fmt.Fprintf(&b, "tool_use %s %s %s", p.ToolUse.ID, p.ToolUse.Name, p.ToolUse.Input)
			case PartToolResult:
				fmt.Fprintf(&b, "tool_result %s error=%v %q", p.ToolResult.ToolUseID, p.ToolResult.IsError, p.ToolResult.Content)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestFromDocument(t *testing.T) {
	cases := []struct {
		name, provider, chat string
		want                 string // describe() output, or "error: <message>"
	}{
		{"last system wins", "anthropic", `@System:
First prompt.

@You:
Hi

@System:
  Second prompt.

@Assistant:
Hello.
`, `system "Second prompt."
user text "Hi"
assistant text "Hello."
`},
		{"tool result error flag and null inputs kept", "anthropic", "@You:\nRun it\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_E1`)\n\n```json\n" +
			`{"command": "false", "label": "failing", "timeout": null}` + "\n```\n\n@You:\n**Tool Result:** `toolu_E1` (error)\n\n```\n(no output)\n\nCommand exited with code 1\n```\n",
			`system ""
user text "Run it"
assistant tool_use toolu_E1 bash {"command":"false","label":"failing","timeout":null}
user tool_result toolu_E1 error=true "(no output)\n\nCommand exited with code 1"
`},
		{"signatures only for the same provider", "anthropic", `@You:
Q

@Assistant:
A

<thinking anthropic:signature="QUFB">
mine
</thinking>
<thinking vertex:signature="VlZW">
theirs
</thinking>
<thinking redacted>
opaque
</thinking>
<thinking openai:signature="T09P"/>

@You:
Next
`, `system ""
user text "Q"
assistant text "A"
assistant thinking provider=anthropic sig="QUFB" redacted=false "mine"
assistant thinking provider=vertex sig="" redacted=false "theirs"
assistant thinking provider=anthropic sig="" redacted=true "opaque"
user text "Next"
`},
		{"vertex keeps its own, drops redacted", "vertex", `@You:
Q

@Assistant:
A

<thinking anthropic:signature="QUFB">
mine
</thinking>
<thinking redacted>
opaque
</thinking>
<thinking vertex:signature="VlZW"/>
`, `system ""
user text "Q"
assistant text "A"
assistant thinking provider=anthropic sig="" redacted=false "mine"
assistant thinking provider=vertex sig="VlZW" redacted=false ""
`},
		{"aborted text response keeps the marker as a comment", "openai", `@You:
Tell me a story

@Assistant:
Once upon a

<!-- flemma:aborted: Response interrupted by the user. -->

@You:
Go on
`, `system ""
user text "Tell me a story"
assistant text "Once upon a"
assistant text "<!-- Response interrupted by the user. -->"
user text "Go on"
`},
		{"aborted response with a tool use drops the marker", "anthropic", "@You:\nList\n\n@Assistant:\n**Tool Use:** `ls` (`toolu_A1`)\n\n```json\n{\"path\": \".\"}\n```\n\n<!-- flemma:aborted: Response interrupted by the user. -->\n\n@You:\n**Tool Result:** `toolu_A1` (error)\n\n```\nThe response was interrupted before this tool ran.\n```\n",
			`system ""
user text "List"
assistant tool_use toolu_A1 ls {"path":"."}
user tool_result toolu_A1 error=true "The response was interrupted before this tool ran."
`},
		{"consecutive user messages merge, other roles are skipped", "anthropic", "@You:\nOne\n\n@Note:\nnot sent\n\n@You:\nTwo\n",
			`system ""
user text "One"
user text "Two"
`},
		{"placeholder refuses the send", "anthropic", "@You:\nGo\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_P1`)\n\n```json\n{\"command\": \"make\"}\n```\n\n@You:\n**Tool Result:** `toolu_P1`\n\n```flemma:tool status=pending\n```\n",
			"error: line 12: the tool result for bash toolu_P1 is still pending; sending is refused until it has a real result"},
		{"v0.11 header placeholder refuses too", "anthropic", "@You:\nGo\n\n@Assistant:\n**Tool Use:** `bash` (`toolu_P2`)\n\n```json\n{\"command\": \"make\"}\n```\n\n@You:\n**Tool Result:** `toolu_P2` (approved)\n\n```\n```\n",
			"error: line 12: the tool result for bash toolu_P2 is still approved; sending is refused until it has a real result"},
		{"missing result names the call and line", "anthropic", "@You:\nGo\n\n@Assistant:\nTwo calls.\n\n**Tool Use:** `read` (`toolu_M1`)\n\n```json\n{\"path\": \"a\"}\n```\n\n**Tool Use:** `read` (`toolu_M2`)\n\n```json\n{\"path\": \"b\"}\n```\n\n@You:\n**Tool Result:** `toolu_M1`\n\n```\nA\n```\n",
			"error: line 13: the tool call read toolu_M2 has no result yet; press <C-]> to categorize and run it"},
		{"result without a call", "anthropic", "@You:\n**Tool Result:** `toolu_X9`\n\n```\nstray\n```\n",
			"error: line 2: the tool result for toolu_X9 answers no tool call in this buffer; remove it or fix its id"},
		{"no messages", "anthropic", "@System:\nOnly a prompt.\n", "error: no messages to send"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := buffer.Parse(strings.Split(strings.TrimSuffix(tc.chat, "\n"), "\n"))
			sys, msgs, err := FromDocument(doc, tc.provider)
			got := describe(sys, msgs)
			if err != nil {
				got = "error: " + err.Error()
			}
			if got != tc.want {
				t.Errorf("FromDocument:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestFromDocumentBlockErrors(t *testing.T) {
	chat := "@You:\nGo\n\n@Assistant:\n**Tool Use:** `a` (`t1`)\n\n```json\n{}\n```\n\n**Tool Use:** `b` (`t2`)\n\n```json\n{}\n```\n\n@You:\n**Tool Result:** `t2`\n\n```flemma:tool status=denied\n```\n"
	_, _, err := FromDocument(buffer.Parse(strings.Split(chat, "\n")), "openai")
	var be *BlockError
	if !errors.As(err, &be) || be.ID != "t1" || be.Line != 5 || be.Kind != buffer.KindToolUse {
		t.Fatalf("first block error = %+v (err %v)", be, err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 2 {
		t.Errorf("err lists %d blocks, want 2:\n%v", n, err)
	}
}

// The replay provider reads Anthropic signatures as its own.
func TestFromDocumentReplay(t *testing.T) {
	doc := buffer.Parse([]string{"@You:", "Q", "@Assistant:", "A", `<thinking anthropic:signature="c2ln">`, "t", "</thinking>"})
	_, msgs, err := FromDocument(doc, "replay")
	if err != nil || msgs[1].Parts[1].Thinking.Signature != "c2ln" {
		t.Errorf("replay: %v %s", err, describe("", msgs))
	}
}
