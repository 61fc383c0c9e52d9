package buffer

import (
	"slices"
	"strings"
	"testing"
)

// chat turns a test literal into buffer lines: a leading newline is
// dropped and every ^ stands for a backtick (Go raw strings cannot hold
// one).
func chat(s string) []string {
	s = strings.TrimPrefix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, "^", "`"), "\n")
}

// wantSketch decodes an expected sketch written like chat's input.
func wantSketch(s string) string {
	s = strings.TrimPrefix(s, "\n")
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(s, "^", "`") + "\n"
}

type parseCase struct {
	name  string
	in    string   // chat literal (see chat)
	lines []string // used instead of in when set (trailing blanks matter)
	want  string   // sketch literal (see wantSketch)
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := tc.lines
			if lines == nil {
				lines = chat(tc.in)
			}
			d := Parse(lines)
			if got, want := sketch(d), wantSketch(tc.want); got != want {
				t.Errorf("Parse(%q) =\n%s\nwant\n%s", lines, got, want)
			}
			// Every case must also survive the round trip.
			if a, b := Render(d), Render(Parse(Render(d))); !slices.Equal(a, b) {
				t.Errorf("Render is not idempotent for %q: %q then %q", lines, a, b)
			}
		})
	}
}

const (
	preambleWarn = "! %d:1 warning message: Text before the first role marker belongs to no message and is ignored (a marker such as @You: must be alone on its line)"
	fmUnclosed   = "! 1:1 warning frontmatter: Frontmatter is not closed (a line of exactly ^^^ must end it before the first role marker); it is ignored"
)

func preamble(line string) string { return strings.Replace(preambleWarn, "%d", line, 1) }

// formatCases are the numbered cases of reference/format.md §11 (see
// TestFormatConformance); FuzzParse uses their inputs as seeds.
var formatCases = []parseCase{
	{name: "01 empty", in: "", want: ""},
	{name: "02 frontmatter only", in: `
^^^lua
x = 1
^^^`, want: `
fm lua 1-3 "x = 1"`},
	// Ours: an unclosed frontmatter is reported; its lines are preamble.
	{name: "03 unclosed frontmatter", in: `
^^^lua
x = 5
@You:
test`, want: `
pre 1-2 "^^^lua\nx = 5"
@You 3-4
  text 4-4 "test"
` + fmUnclosed},
	// Ours: non-blank text outside any message is reported.
	{name: "04 leading blank line", in: `

^^^lua
x = 1
^^^
@You:
hi`, want: `
pre 2-4 "^^^lua\nx = 1\n^^^"
@You 5-6
  text 6-6 "hi"
` + preamble("2")},
	{name: "05 four backticks", in: `
^^^^lua
x = 1
^^^^
@You:
hi`, want: `
pre 1-3 "^^^^lua\nx = 1\n^^^^"
@You 4-5
  text 5-5 "hi"
` + preamble("1")},
	{name: "06 toml", in: `
^^^toml
model = "test"
^^^
@You:
Hello
@Assistant:
World`, want: `
fm toml 1-3 "model = \"test\""
@You 4-5
  text 5-5 "Hello"
@Assistant 6-7
  text 7-7 "World"`},
	{name: "07 first closer wins", in: `
^^^lua
s = [[
^^^
]]
^^^
@You:
hi`, want: `
fm lua 1-3 "s = [["
pre 4-5 "]]\n^^^"
@You 6-7
  text 7-7 "hi"
` + preamble("4")},
	{name: "08 four messages", in: `
@System:
You are helpful.
@You:
Hello
@Assistant:
Hi there!
@You:
Thanks`, want: `
@System 1-2
  text 2-2 "You are helpful."
@You 3-4
  text 4-4 "Hello"
@Assistant 5-6
  text 6-6 "Hi there!"
@You 7-8
  text 8-8 "Thanks"`},
	{name: "09 inline marker", in: `
@You: hello
world`, want: `
pre 1-2 "@You: hello\nworld"
` + preamble("1")},
	{name: "10 indented marker", lines: []string{"  @You:", "x"}, want: `
pre 1-2 "  @You:\nx"
` + preamble("1")},
	{name: "11 trailing whitespace after marker", lines: []string{"@You:   ", "x"}, want: `
@You 1-2
  text 2-2 "x"`},
	// Ours: no template segments; {{ 1 }} stays in the text.
	{name: "12 other roles", in: `
@you:
x
@Foo:
bar {{ 1 }}`, want: `
@you 1-2
  text 2-2 "x"
@Foo 3-4
  text 4-4 "bar {{ 1 }}"`},
	{name: "13 underscore in role", in: `
@My_Role:
x`, want: `
pre 1-2 "@My_Role:\nx"
` + preamble("1")},
	{name: "14 trailing blank stripped", in: `
@You:
a

@Assistant:
b`, want: `
@You 1-3
  text 2-2 "a"
@Assistant 4-5
  text 5-5 "b"`},
	// Ours: whitespace-only lines at the edge of a text are blank too
	// (the Lua Flemma keeps "a\n\n  ").
	{name: "15 whitespace-only lines", lines: []string{"@You:", "a", "", "  ", "", "@Assistant:", "b"}, want: `
@You 1-5
  text 2-2 "a"
@Assistant 6-7
  text 7-7 "b"`},
	// Ours: an empty message has no segments (no position-less Text).
	{name: "16 empty You", in: `
@You:
@Assistant:
x`, want: `
@You 1-1
@Assistant 2-3
  text 3-3 "x"`},
	{name: "17 empty System", in: `
@System:
@You:
x`, want: `
@System 1-1
@You 2-3
  text 3-3 "x"`},
	{name: "18 marker inside fence", in: `
@You:
Here is how you use Flemma:

^^^
@You:
Hello!
^^^`, want: `
@You 1-7
  text 2-7 "Here is how you use Flemma:\n\n^^^\n@You:\nHello!\n^^^"`},
	{name: "19 longer outer fence", in: `
@You:
Outer content

^^^^
^^^
@Assistant:
^^^
^^^^`, want: `
@You 1-8
  text 2-8 "Outer content\n\n^^^^\n^^^\n@Assistant:\n^^^\n^^^^"`},
	{name: "20a inline triple backticks", in: `
@Assistant:
Hi!
^^^How are you?^^^

@You:
Goodbye!`, want: `
@Assistant 1-4
  text 2-3 "Hi!\n^^^How are you?^^^"
@You 5-6
  text 6-6 "Goodbye!"`},
	{name: "20b info with backticks", in: `
@Assistant:
Hi!
^^^markdown Hello!^^^

@You:
Goodbye!`, want: `
@Assistant 1-4
  text 2-3 "Hi!\n^^^markdown Hello!^^^"
@You 5-6
  text 6-6 "Goodbye!"`},
	{name: "20c spaces then backticks", in: `
@Assistant:
Hi!
^^^    ...giving up^^^

@You:
Goodbye!`, want: `
@Assistant 1-4
  text 2-3 "Hi!\n^^^    ...giving up^^^"
@You 5-6
  text 6-6 "Goodbye!"`},
	{name: "20d one backtick later", in: `
@Assistant:
Hi!
^^^Hello ^World?

@You:
Goodbye!`, want: `
@Assistant 1-4
  text 2-3 "Hi!\n^^^Hello ^World?"
@You 5-6
  text 6-6 "Goodbye!"`},
	{name: "21 fence closes", in: `
@You:
Before fence
^^^
@Assistant:
^^^
@Assistant:
After fence`, want: `
@You 1-5
  text 2-5 "Before fence\n^^^\n@Assistant:\n^^^"
@Assistant 6-7
  text 7-7 "After fence"`},
	{name: "22 unclosed fence swallows markers", in: `
@You:
^^^python
x
@Assistant:
ok`, want: `
@You 1-5
  text 2-5 "^^^python\nx\n@Assistant:\nok"
! 4:1 warning message: Role marker inside the code fence left open on line 2 is read as text; close the fence to start a new message`},
	{name: "23 closer with text does not close", in: `
@You:
^^^
a
^^^ x
@Assistant:
ok`, want: `
@You 1-6
  text 2-6 "^^^\na\n^^^ x\n@Assistant:\nok"
! 5:1 warning message: Role marker inside the code fence left open on line 2 is read as text; close the fence to start a new message`},
	{name: "24 thinking between text", in: `
@Assistant:
I think
<thinking>
this is my internal thought
</thinking>
that the answer is 42.`, want: `
@Assistant 1-6
  text 2-2 "I think"
  think 3-5 "this is my internal thought"
  text 6-6 "that the answer is 42."`},
	{name: "25 multi-line thinking", in: `
@Assistant:
Here is my response
<thinking>
internal thought process
more thinking
</thinking>
The answer is 42.`, want: `
@Assistant 1-7
  text 2-2 "Here is my response"
  think 3-6 "internal thought process\nmore thinking"
  text 7-7 "The answer is 42."`},
	{name: "26 redacted thinking", in: `
@Assistant:
Here is my response.

<thinking redacted>
encrypted-data-abc123
</thinking>`, want: `
@Assistant 1-6
  text 2-2 "Here is my response."
  think 4-6 "encrypted-data-abc123" redacted`},
	{name: "27 self-closing signature", in: `
@Assistant:
Here's the result.

<thinking vertex:signature="sig-self-closing-123"/>`, want: `
@Assistant 1-4
  text 2-2 "Here's the result."
  think 4-4 "" sig=vertex:sig-self-closing-123`},
	{name: "28 signed thinking", in: `
@Assistant:
<thinking anthropic:signature="abc+/=">
t
</thinking>
x`, want: `
@Assistant 1-5
  think 2-4 "t" sig=anthropic:abc+/=
  text 5-5 "x"`},
	// Ours (QUIRK fixed): the Lua Flemma drops everything from an
	// unclosed <thinking> on; we keep it as text and say so.
	{name: "29 unclosed thinking", in: `
@Assistant:
pre
<thinking>
data
more`, want: `
@Assistant 1-5
  text 2-5 "pre\n<thinking>\ndata\nmore"
! 3:1 warning thinking: Unclosed <thinking> block (missing </thinking>); its lines are kept as text`},
	{name: "30 tag with trailing space", lines: []string{"@Assistant:", "<thinking> ", "data", "</thinking>"}, want: `
@Assistant 1-4
  text 2-4 "<thinking> \ndata\n</thinking>"`},
	{name: "31 thinking in You", in: `
@You:
<thinking>
data
</thinking>`, want: `
@You 1-4
  text 2-4 "<thinking>\ndata\n</thinking>"`},
	{name: "32 abort marker", in: `
@Assistant:
Hello
<!-- flemma:aborted: Response interrupted by the user. -->`, want: `
@Assistant 1-3
  text 2-2 "Hello"
  aborted 3 "Response interrupted by the user."`},
	{name: "33 abort marker spacing", in: `
@Assistant:
Hello
<!--  flemma:aborted:   Some message   -->`, want: `
@Assistant 1-3
  text 2-2 "Hello"
  aborted 3 "Some message"`},
	{name: "34 abort marker in You", in: `
@You:
<!-- flemma:aborted: Response interrupted by the user. -->`, want: `
@You 1-2
  text 2-2 "<!-- flemma:aborted: Response interrupted by the user. -->"`},
	{name: "35 tool use", in: `
@Assistant:
**Tool Use:** ^bash^ (^call_123^)
^^^json
{"command": "ls"}
^^^`, want: `
@Assistant 1-5
  use bash call_123 2-5 {"command":"ls"}`},
	{name: "36 fence without language", in: `
@Assistant:
**Tool Use:** ^bash^ (^c1^)
^^^
{"a":1}
^^^`, want: `
@Assistant 1-5
  use bash c1 2-5 {"a":1}`},
	{name: "37 trailing header text", in: `
@Assistant:
**Tool Use:** ^bash^ (^call_1^) trailing
^^^json
{"a":1}
^^^`, want: `
@Assistant 1-5
  use bash call_1 2-5 {"a":1}`},
	{name: "38 colons in name and id", in: `
@Assistant:
**Tool Use:** ^slack:channels_list^ (^urn:flemma:tool:x:1^)
^^^json
{}
^^^`, want: `
@Assistant 1-5
  use slack:channels_list urn:flemma:tool:x:1 2-5 {}`},
	{name: "39 indented header", in: `
@Assistant:
  **Tool Use:** ^a^ (^1^)
^^^json
{}
^^^`, want: `
@Assistant 1-5
  text 2-5 "  **Tool Use:** ^a^ (^1^)\n^^^json\n{}\n^^^"`},
	{name: "40 nested backticks", in: `
@Assistant:
**Tool Use:** ^write^ (^t1^)

^^^^json
{
  "template": "^^^python\nprint(1)\n^^^"
}
^^^^`, want: `
@Assistant 1-8
  use write t1 2-8 {"template":"^^^python\nprint(1)\n^^^"}`},
	// Ours: the header line is kept as text, not consumed.
	{name: "41 missing fence", in: `
@Assistant:
**Tool Use:** ^bash^ (^c1^)

just text
more`, want: `
@Assistant 1-5
  text 2-5 "**Tool Use:** ^bash^ (^c1^)\n\njust text\nmore"
! 2:1 warning tool_use: Tool use requires a fenced code block with JSON input`},
	// Ours: the lines are kept as text (the Lua Flemma drops them).
	{name: "42 unclosed tool fence", in: `
@Assistant:
**Tool Use:** ^bash^ (^c1^)
^^^json
{"a":1}
more text`, want: `
@Assistant 1-5
  text 2-5 "**Tool Use:** ^bash^ (^c1^)\n^^^json\n{\"a\":1}\nmore text"
! 2:1 warning tool_use: Unclosed fenced code block in tool use (missing closing fence)`},
	// Ours (QUIRK fixed): the block and "after text" stay text; the
	// diagnostic points at the JSON error and names it.
	{name: "43 bad JSON", in: `
@Assistant:
before
**Tool Use:** ^bash^ (^c1^)
^^^json
{bad
^^^
after text`, want: `
@Assistant 1-7
  text 2-7 "before\n**Tool Use:** ^bash^ (^c1^)\n^^^json\n{bad\n^^^\nafter text"
! 5:2 warning tool_use: Failed to parse tool input: JSON parse error: invalid character 'b' looking for beginning of object key string`},
	{name: "44 yaml input", in: `
@Assistant:
**Tool Use:** ^bash^ (^c1^)
^^^yaml
command: ls
^^^`, want: `
@Assistant 1-5
  text 2-5 "**Tool Use:** ^bash^ (^c1^)\n^^^yaml\ncommand: ls\n^^^"
! 3:4 warning tool_use: Failed to parse tool input: No parser registered for language: yaml`},
	{name: "45 null dropped", in: `
@Assistant:
**Tool Use:** ^bash^ (^c1^)
^^^json
{"a":null,"b":1,"c":{"d":null,"e":[null,{"f":null}]}}
^^^`, want: `
@Assistant 1-5
  use bash c1 2-5 {"b":1,"c":{"e":[null,{}]}}`},
	{name: "46 tool use in You", in: `
@You:
**Tool Use:** ^bash^ (^call_1^)
^^^json
{"a":1}
^^^`, want: `
@You 1-5
  text 2-5 "**Tool Use:** ^bash^ (^call_1^)\n^^^json\n{\"a\":1}\n^^^"`},
	// Ours: no inner template segments; orphans are reported.
	{name: "47 result content raw", in: `
@You:
**Tool Result:** ^tool_123^
^^^
Hello {{ 1 + 1 }} world
^^^`, want: `
@You 1-5
  result tool_123 2-5 done "Hello {{ 1 + 1 }} world"
! 2:1 warning tool_result: Tool result for unknown tool use: tool_123`},
	{name: "48 invalid JSON in result is fine", in: `
@Assistant:
**Tool Use:** ^calc^ (^t1^)
^^^json
{}
^^^
@You:
**Tool Result:** ^t1^
^^^json
{ "result": 105
^^^`, want: `
@Assistant 1-5
  use calc t1 2-5 {}
@You 6-10
  result t1 7-10 done "{ \"result\": 105"`},
	{name: "49 yaml result", in: `
@Assistant:
**Tool Use:** ^calc^ (^t1^)
^^^json
{}
^^^
@You:
**Tool Result:** ^t1^

^^^yaml
result: 105
unit: none
^^^`, want: `
@Assistant 1-5
  use calc t1 2-5 {}
@You 6-12
  result t1 7-12 done "result: 105\nunit: none"`},
	{name: "50 error result", in: `
@You:
**Tool Result:** ^tool_err^ (error)
^^^
Something went wrong
^^^`, want: `
@You 1-5
  result tool_err 2-5 done error "Something went wrong"
! 2:1 warning tool_result: Tool result for unknown tool use: tool_err`},
	{name: "51 header pending", in: `
@You:
**Tool Result:** ^tool_789^ (pending)
^^^

^^^`, want: `
@You 1-5
  result tool_789 2-5 pending header ""
! 2:1 warning tool_result: Tool result for unknown tool use: tool_789`},
	{name: "52 header pending with content", in: `
@You:
**Tool Result:** ^c1^ (pending)
^^^
{{ x }}
^^^`, want: `
@You 1-5
  result c1 2-5 pending header "{{ x }}"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "53 aliases", in: `
@You:
**Tool Result:** ^a^ (reject)
^^^
^^^
**Tool Result:** ^b^ (deny)
^^^
^^^`, want: `
@You 1-7
  result a 2-4 rejected header ""
  result b 5-7 denied header ""
! 2:1 warning tool_result: Tool result for unknown tool use: a
! 5:1 warning tool_result: Tool result for unknown tool use: b`},
	{name: "54 unknown suffix word", in: `
@You:
**Tool Result:** ^c1^ (xyz)
^^^
4
^^^`, want: `
@You 1-5
  result c1 2-5 done "4"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "55 no suffix", in: `
@You:
**Tool Result:** ^c1^
^^^
4
^^^`, want: `
@You 1-5
  result c1 2-5 done "4"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "56 status key with extras", in: `
@You:
**Tool Result:** ^c1^ (status=pending sandbox=false timeout=30)
^^^
^^^`, want: `
@You 1-4
  result c1 2-4 pending header ""
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "57 Error is case-sensitive", in: `
@You:
**Tool Result:** ^c1^ (Error)
^^^
x
^^^`, want: `
@You 1-5
  result c1 2-5 done "x"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "58 approved error", in: `
@You:
**Tool Result:** ^c1^ (approved error)
^^^
^^^`, want: `
@You 1-4
  result c1 2-4 approved header ""
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "59 suffix with extra text", in: `
@You:
**Tool Result:** ^c1^ (pending) extra
^^^
x
^^^`, want: `
@You 1-5
  result c1 2-5 done "x"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	// Ours: the header line is kept as text.
	{name: "60 result without fence", in: `
@You:
**Tool Result:** ^c1^

plain text
more`, want: `
@You 1-5
  text 2-5 "**Tool Result:** ^c1^\n\nplain text\nmore"
! 2:1 warning tool_result: Tool result requires a fenced code block`},
	{name: "61 unclosed result fence", in: `
@You:
**Tool Result:** ^c1^
^^^
x
@Assistant:
ok`, want: `
@You 1-6
  text 2-6 "**Tool Result:** ^c1^\n^^^\nx\n@Assistant:\nok"
! 2:1 warning tool_result: Unclosed fenced code block in tool result (missing closing fence)
! 5:1 warning message: Role marker inside the code fence left open on line 3 is read as text; close the fence to start a new message`},
	// Ours (issue 27 item 8): a header edited out of shape is text, and
	// says so.
	{name: "61b result header out of shape", in: `
@You:
**Tool Result:** c1

^^^flemma:tool status=approved
^^^`, want: `
@You 1-5
  text 2-5 "**Tool Result:** c1\n\n^^^flemma:tool status=approved\n^^^"
! 2:1 warning tool_result: Not a tool result header, so this block is text: the form is **Tool Result:** ^ID^`},
	{name: "61c use header out of shape", in: `
@Assistant:
**Tool Use:** calc (^c1^)

^^^json
{}
^^^`, want: `
@Assistant 1-6
  text 2-6 "**Tool Use:** calc (^c1^)\n\n^^^json\n{}\n^^^"
! 2:1 warning tool_use: Not a tool use header, so this block is text: the form is **Tool Use:** ^NAME^ (^ID^)`},
	// Ours (seed 004 and SPEC win over v0.11): the flemma:tool fence is
	// a placeholder, not a completed result.
	{name: "62 flemma:tool fence", in: `
@You:
**Tool Result:** ^c1^
^^^flemma:tool status=pending
^^^`, want: `
@You 1-4
  result c1 2-4 pending ""
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	{name: "63 marker inside result fence", in: `
@You:
**Tool Result:** ^c1^
^^^
@Assistant:
^^^
@Assistant:
ok`, want: `
@You 1-5
  result c1 2-5 done "@Assistant:"
@Assistant 6-7
  text 7-7 "ok"
! 2:1 warning tool_result: Tool result for unknown tool use: c1`},
	// Ours: the follow-up text starts at its first non-blank line.
	{name: "64 two results and follow-up", in: `
@You:
**Tool Result:** ^a^
^^^
1
^^^

**Tool Result:** ^b^
^^^
2
^^^

Follow up {{ x }}`, want: `
@You 1-12
  result a 2-5 done "1"
  result b 7-10 done "2"
  text 12-12 "Follow up {{ x }}"
! 2:1 warning tool_result: Tool result for unknown tool use: a
! 7:1 warning tool_result: Tool result for unknown tool use: b`},
	{name: "65 result in Assistant", in: `
@Assistant:
**Tool Result:** ^c1^
^^^
x
^^^`, want: `
@Assistant 1-5
  text 2-5 "**Tool Result:** ^c1^\n^^^\nx\n^^^"`},
	// Ours: fences inside thinking content do not count when
	// splitting, so an odd fence there cannot swallow the next message.
	{name: "thinking hides fences", in: `
@Assistant:
<thinking>
The user wants code:
^^^python
</thinking>
Here it is.
@You:
thanks`, want: `
@Assistant 1-6
  think 2-5 "The user wants code:\n^^^python"
  text 6-6 "Here it is."
@You 7-8
  text 8-8 "thanks"`},
	{name: "69 template braces kept", in: `
@You:
{{ "email={{ customer.email }}" }} and {{ {1,2,3}}} and {{- name -}} {% if x -%}`, want: `
@You 1-2
  text 2-2 "{{ \"email={{ customer.email }}\" }} and {{ {1,2,3}}} and {{- name -}} {% if x -%}"`},
	{name: "73 unclosed template", in: `
@You:
a {{ x
b`, want: `
@You 1-3
  text 2-3 "a {{ x\nb"`},
	{name: "74 expression kept", in: `
@You:
Hello {{ name }} world`, want: `
@You 1-2
  text 2-2 "Hello {{ name }} world"`},
	{name: "75 assistant literals", in: `
@Assistant:
{{ 1 + 1 }} and @./a.txt should be literal`, want: `
@Assistant 1-2
  text 2-2 "{{ 1 + 1 }} and @./a.txt should be literal"`},
	{name: "76 file reference", in: `
@You:
See @./my%20file.bin;type=image/png!`, want: `
@You 1-2
  text 2-2 "See @./my%20file.bin;type=image/png!"`},
}

// TestFormatConformance pins the numbered cases 1–76 of
// reference/format.md §11, adapted to our decisions. Where we deliberately
// differ from the Lua Flemma the case says why. Cases about the template
// grammar ({{ }}, {% %}) are adapted to "the text is kept verbatim": this
// package does not split templates.
func TestFormatConformance(t *testing.T) { runParseCases(t, formatCases) }

// TestThinkingStopsAtMarker: a thinking block never contains a role marker,
// in the splitter and in the segment parser alike.
func TestThinkingStopsAtMarker(t *testing.T) {
	runParseCases(t, []parseCase{{name: "marker in fence after open tag", in: `
@Assistant:
<thinking>
^^^
@You:
^^^
</thinking>`, want: `
@Assistant 1-6
  text 2-6 "<thinking>\n^^^\n@You:\n^^^\n</thinking>"
! 2:1 warning thinking: Unclosed <thinking> block (missing </thinking>); its lines are kept as text`}})
}
