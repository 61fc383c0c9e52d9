package buffer

import (
	"slices"
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	lines := []string{"a", "b", "c", "d"}
	tests := []struct {
		name  string
		edits []Edit
		want  []string
		err   string
	}{
		{"none", nil, []string{"a", "b", "c", "d"}, ""},
		{"insert at top", []Edit{{0, 0, []string{"x"}}}, []string{"x", "a", "b", "c", "d"}, ""},
		{"append", []Edit{{4, 4, []string{"x", "y"}}}, []string{"a", "b", "c", "d", "x", "y"}, ""},
		{"replace and delete", []Edit{{3, 4, nil}, {1, 2, []string{"B", "B2"}}}, []string{"a", "B", "B2", "c"}, ""},
		{"adjacent", []Edit{{1, 2, []string{"B"}}, {2, 3, []string{"C"}}}, []string{"a", "B", "C", "d"}, ""},
		{"insert before replace", []Edit{{1, 3, []string{"R"}}, {1, 1, []string{"I"}}}, []string{"a", "I", "R", "d"}, ""},
		{"replace then insert at its end", []Edit{{2, 2, []string{"I"}}, {0, 2, []string{"R"}}}, []string{"R", "I", "c", "d"}, ""},
		{"overlap", []Edit{{0, 2, nil}, {1, 3, nil}}, nil, "overlap"},
		{"same insertion point", []Edit{{1, 1, []string{"x"}}, {1, 1, []string{"y"}}}, nil, "overlap"},
		{"out of range", []Edit{{3, 5, nil}}, nil, "out of range"},
		{"negative", []Edit{{-1, 0, nil}}, nil, "out of range"},
		{"reversed", []Edit{{2, 1, nil}}, nil, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := slices.Clone(lines)
			got, err := Apply(lines, tc.edits)
			if !slices.Equal(lines, orig) {
				t.Fatalf("Apply modified its input: %q", lines)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Apply(%v) error = %v, want %q", tc.edits, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Apply(%v) = %q, %v; want %q", tc.edits, got, err, tc.want)
			}
		})
	}
}

func TestFence(t *testing.T) {
	tests := []struct{ content, want string }{
		{"", "```"},
		{"plain", "```"},
		{"a `b` ``c``", "```"},
		{"```python\nx\n```", "````"},
		{"````", "`````"},
		{"```\n````", "`````"},
		{"x ``````` y", "````````"},
	}
	for _, tc := range tests {
		if got := Fence(tc.content); got != tc.want {
			t.Errorf("Fence(%q) = %q, want %q", tc.content, got, tc.want)
		}
	}
}

func TestRenderBlocks(t *testing.T) {
	tests := []struct {
		name string
		got  []string
		want string
	}{
		{"placeholder", RenderPlaceholder("toolu_01", StatusPending), `
**Tool Result:** ^toolu_01^

^^^flemma:tool status=pending
^^^`},
		{"plain placeholder", RenderPlaceholder("toolu_01", ""), `
**Tool Result:** ^toolu_01^

^^^
^^^`},
		{"result", RenderResult("t", "25", false, ""), `
**Tool Result:** ^t^

^^^
25
^^^`},
		{"empty result", RenderResult("t", "", false, ""), `
**Tool Result:** ^t^

^^^
^^^`},
		{"error with partial output", RenderResult("t", "exit status 1\n\nPartial output:\npartial data", true, ""), `
**Tool Result:** ^t^ (error)

^^^
exit status 1

Partial output:
partial data
^^^`},
		{"json", RenderResult("t", `{"a":1}`, false, "json"), `
**Tool Result:** ^t^

^^^json
{"a":1}
^^^`},
		{"nested fence, CRLF", RenderResult("t", "```go\r\nx\r\n```\r\n", false, "markdown"), `
**Tool Result:** ^t^

^^^^markdown
^^^go
x
^^^

^^^^`},
		{"unusable language dropped", RenderResult("t", "x", false, "a b"), `
**Tool Result:** ^t^

^^^
x
^^^`},
	}
	for _, tc := range tests {
		if want := chat(tc.want); !slices.Equal(tc.got, want) {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, want)
		}
	}
}

// use returns the lines of a tool use block.
func use(name, id, input string) string {
	return "**Tool Use:** ^" + name + "^ (^" + id + "^)\n\n^^^json\n" + input + "\n^^^"
}

type editCase struct {
	name string
	in   string
	run  func(d *Document, lines []string) ([]Edit, error)
	want string // result after Apply, chat literal; "" with err set
	err  string
}

func runEditCases(t *testing.T, cases []editCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := chat(tc.in)
			d := Parse(lines)
			edits, err := tc.run(d, lines)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Apply(lines, edits)
			if err != nil {
				t.Fatal(err)
			}
			if want := chat(tc.want); !slices.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s\ndiff:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"),
					lineDiff(strings.Join(want, "\n"), strings.Join(got, "\n")))
			}
			if n := len(Parse(got).Diagnostics); n > len(d.Diagnostics) {
				t.Errorf("the edit added diagnostics: %v", Parse(got).Diagnostics)
			}
		})
	}
}

func place(ps ...Placement) func(*Document, []string) ([]Edit, error) {
	return func(d *Document, lines []string) ([]Edit, error) { return PlacePlaceholders(d, lines, ps) }
}

func one(f func(*Document, []string) (Edit, error)) func(*Document, []string) ([]Edit, error) {
	return func(d *Document, lines []string) ([]Edit, error) {
		e, err := f(d, lines)
		return []Edit{e}, err
	}
}

var (
	calc1 = "@Assistant:\n" + use("calculator", "t1", `{"expression": "2+2"}`)
	calc3 = "@Assistant:\nThree at once.\n\n" + use("calculator", "t1", `{"expression": "1+1"}`) + "\n\n" +
		use("calculator", "t2", `{"expression": "2+2"}`) + "\n\n" + use("calculator", "t3", `{"expression": "3+3"}`)
)

// TestPlacePlaceholders pins the insertion positions of runtime.md §2.3 /
// seed-era.md §1.1 (and seed-era §12 items 12–14, 18, 19).
func TestPlacePlaceholders(t *testing.T) {
	runEditCases(t, []editCase{
		{name: "no You message: created", in: calc1, run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^`},
		{name: "no You message, trailing blank kept last", in: calc1 + "\n", run: place(Placement{ID: "t1", Status: StatusApproved}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=approved
^^^
`},
		{name: "next message is not You", in: calc1 + "\n@System:\nBe brief.", run: place(Placement{ID: "t1", Status: StatusDenied}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=denied
^^^

@System:
Be brief.`},
		{name: "empty You at end", in: calc1 + "\n\n@You:", run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^`},
		{name: "empty You with blank line", in: calc1 + "\n\n@You:\n", run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^
`},
		{name: "above text the user typed", in: calc1 + "\n\n@You:\nI already know it is 4.", run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^

I already know it is 4.`},
		{name: "above text after a blank line", in: calc1 + "\n\n@You:\n\nnote", run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^

note`},
		{name: "parallel uses, one edit, tool-use order", in: calc3, run: place(
			Placement{ID: "t3", Status: StatusDenied}, Placement{ID: "t1", Status: StatusApproved}, Placement{ID: "t2", Status: StatusPending}), want: calc3 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=approved
^^^

**Tool Result:** ^t2^

^^^flemma:tool status=pending
^^^

**Tool Result:** ^t3^

^^^flemma:tool status=denied
^^^`},
		{name: "around an existing result", in: calc3 + `

@You:
**Tool Result:** ^t2^

^^^
4
^^^

Thanks.`, run: place(Placement{ID: "t3", Status: StatusPending}, Placement{ID: "t1", Status: StatusApproved}), want: calc3 + `

@You:
**Tool Result:** ^t1^

^^^flemma:tool status=approved
^^^

**Tool Result:** ^t2^

^^^
4
^^^

**Tool Result:** ^t3^

^^^flemma:tool status=pending
^^^

Thanks.`},
		{name: "after the predecessor, not after everything", in: calc3 + `

@You:
**Tool Result:** ^t1^

^^^
2
^^^
**Tool Result:** ^t3^

^^^
6
^^^`, run: place(Placement{ID: "t2", Status: StatusPending}), want: calc3 + `

@You:
**Tool Result:** ^t1^

^^^
2
^^^

**Tool Result:** ^t2^

^^^flemma:tool status=pending
^^^

**Tool Result:** ^t3^

^^^
6
^^^`},
		{name: "existing result anywhere: no change", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^",
			run: place(Placement{ID: "t1", Status: StatusPending}), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^"},
		{name: "duplicate placement once", in: calc1, run: place(Placement{ID: "t1", Status: StatusPending}, Placement{ID: "t1", Status: StatusApproved}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=pending
^^^`},
		{name: "no status writes a plain fence", in: calc1, run: place(Placement{ID: "t1"}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^
^^^`},
		{name: "an error result instead of a placeholder", in: calc1, run: place(Placement{ID: "t1", Status: StatusPending, Error: "Unknown tool: calculater."}), want: calc1 + `

@You:

**Tool Result:** ^t1^ (error)

^^^
Unknown tool: calculater.
^^^`},
		{name: "a placeholder with a body", in: calc1, run: place(Placement{ID: "t1", Status: StatusRejected, Body: "not now"}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=rejected
not now
^^^`},
		{name: "two assistant messages", in: calc1 + "\n\n@Assistant:\n" + use("calculator", "t9", `{"expression": "9"}`),
			run: place(Placement{ID: "t9", Status: StatusPending}, Placement{ID: "t1", Status: StatusAborted}), want: calc1 + `

@You:

**Tool Result:** ^t1^

^^^flemma:tool status=aborted
^^^

@Assistant:
` + use("calculator", "t9", `{"expression": "9"}`) + `

@You:

**Tool Result:** ^t9^

^^^flemma:tool status=pending
^^^`},
		{name: "message ends inside an open fence", in: calc1 + "\n\nLook:\n^^^python\nprint(1)", run: place(Placement{ID: "t1", Status: StatusPending}),
			err: "ends inside the code fence opened on line 9"},
		{name: "unknown id", in: calc1, run: place(Placement{ID: "nope", Status: StatusPending}), err: "tool use not found: nope"},
		{name: "bad status", in: calc1, run: place(Placement{ID: "t1", Status: "maybe"}), err: `invalid status "maybe"`},
		{name: "id with backtick", in: "@Assistant:\n" + use("calculator", "a`b", "{}"), run: place(Placement{ID: "a`b", Status: StatusPending}), err: "cannot be written"},
		{name: "stale lines", in: calc1, run: func(d *Document, lines []string) ([]Edit, error) {
			return PlacePlaceholders(d, lines[1:], []Placement{{ID: "t1", Status: StatusPending}})
		}, err: "parse the buffer again"},
	})
}

// TestPlaceThenParse checks the state after placing: nothing unresolved,
// every status as asked, results in tool-use order.
func TestPlaceThenParse(t *testing.T) {
	lines := chat(calc3 + "\n\n@You:\n**Tool Result:** ^t2^\n\n^^^\n4\n^^^\n\nThanks.")
	d := Parse(lines)
	edits, err := PlacePlaceholders(d, lines, []Placement{{ID: "t3", Status: StatusRejected}, {ID: "t1", Status: StatusApproved}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply(lines, edits)
	if err != nil {
		t.Fatal(err)
	}
	d2 := Parse(got)
	if u := d2.Unresolved(); len(u) != 0 {
		t.Errorf("Unresolved() = %v after placing", u)
	}
	var order []string
	for _, r := range d2.ToolResults() {
		order = append(order, r.ToolUseID+"="+string(r.Status))
	}
	if want := []string{"t1=approved", "t2=", "t3=rejected"}; !slices.Equal(order, want) {
		t.Errorf("results = %v, want %v", order, want)
	}
	if last := d2.Messages[len(d2.Messages)-1].Segments; last[len(last)-1].(*Text).Value() != "Thanks." {
		t.Errorf("user text moved: %v", last)
	}
}

const pendingBlock = "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=pending\n^^^"

func TestReplaceResult(t *testing.T) {
	replace := func(id, content string, isErr bool, lang string) func(*Document, []string) ([]Edit, error) {
		return one(func(d *Document, lines []string) (Edit, error) {
			return ReplaceResult(d, lines, id, content, isErr, lang)
		})
	}
	runEditCases(t, []editCase{
		{name: "pending placeholder", in: calc1 + pendingBlock + "\n\nThanks.", run: replace("t1", "25", false, ""),
			want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n25\n^^^\n\nThanks."},
		{name: "approved with options", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=approved timeout=30\n^^^",
			run: replace("t1", `{"value":4}`, false, "json"), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^json\n{\"value\":4}\n^^^"},
		{name: "error with partial output", in: calc1 + pendingBlock, run: replace("t1", "boom\n\nPartial output:\npartial data", true, ""),
			want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^\nboom\n\nPartial output:\npartial data\n^^^"},
		{name: "header form, several blank lines", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (approved)\n\n\n^^^\n^^^",
			run: replace("t1", "4", false, ""), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^"},
		{name: "re-execution overwrites", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^^\nold ^^^ output\n^^^^",
			run: replace("t1", "new", false, ""), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\nnew\n^^^"},
		{name: "content with fences", in: calc1 + pendingBlock, run: replace("t1", "```\n````", false, ""),
			want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^^^\n^^^\n^^^^\n^^^^^"},
		{name: "missing", in: calc1, run: replace("t1", "x", false, ""), err: "tool result not found: t1"},
		{name: "header moved", in: calc1 + pendingBlock, run: one(func(d *Document, lines []string) (Edit, error) {
			lines = slices.Clone(lines)
			lines[d.Result("t1").HeaderLine-1] = "edited meanwhile"
			return ReplaceResult(d, lines, "t1", "x", false, "")
		}), err: "unexpected header line content for t1"},
	})
}

func TestSetStatus(t *testing.T) {
	set := func(id string, s Status) func(*Document, []string) ([]Edit, error) {
		return one(func(d *Document, lines []string) (Edit, error) { return SetStatus(d, lines, id, s) })
	}
	runEditCases(t, []editCase{
		{name: "fence form", in: calc1 + pendingBlock, run: set("t1", StatusApproved),
			want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=approved\n^^^"},
		{name: "other tokens kept", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool timeout=30 status=pending sandbox=false\n^^^",
			run: set("t1", StatusRejected), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool timeout=30 status=rejected sandbox=false\n^^^"},
		{name: "no status token", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool\nmy reason\n^^^",
			run: set("t1", StatusRejected), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=rejected\nmy reason\n^^^"},
		{name: "error header untouched", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^^flemma:tool status=pending\n^^^ body\n^^^^",
			run: set("t1", StatusApproved), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^^flemma:tool status=approved\n^^^ body\n^^^^"},
		{name: "header form converted", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (pending)\n\n^^^\n^^^",
			run: set("t1", StatusApproved), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=approved\n^^^"},
		{name: "header form with options", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (status=pending sandbox=false timeout=30)\n^^^\n^^^",
			run: set("t1", StatusDenied), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n^^^flemma:tool status=denied sandbox=false timeout=30\n^^^"},
		{name: "status in both places", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (approved)\n\n^^^flemma:tool status=pending\n^^^",
			run: set("t1", StatusApproved), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=approved\n^^^"},
		{name: "completed", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^", run: set("t1", StatusApproved), err: "already completed"},
		{name: "invalid", in: calc1 + pendingBlock, run: set("t1", ""), err: "invalid status"},
		{name: "missing", in: calc1, run: set("t1", StatusApproved), err: "not found"},
	})
}

// TestStripFence pins content-overwrite protection (seed-era §12 item 25).
func TestStripFence(t *testing.T) {
	strip := func(id string) func(*Document, []string) ([]Edit, error) {
		return one(func(d *Document, lines []string) (Edit, error) { return StripFence(d, lines, id) })
	}
	runEditCases(t, []editCase{
		{name: "pending with pasted output", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^flemma:tool status=pending\ntotal 42\n^^^",
			run: strip("t1"), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\ntotal 42\n^^^"},
		{name: "error header stays", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^^flemma:tool status=pending timeout=3\nhi ^^^\n^^^^",
			run: strip("t1"), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^^\nhi ^^^\n^^^^"},
		{name: "header form", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (pending)\n\n^^^\nmy output\n^^^",
			run: strip("t1"), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\nmy output\n^^^"},
		{name: "status in both places", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (approved)\n^^^flemma:tool status=pending\nx\n^^^",
			run: strip("t1"), want: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n^^^\nx\n^^^"},
		{name: "completed", in: calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^", run: strip("t1"), err: "no flemma:tool fence"},
		{name: "unknown id", in: calc1 + pendingBlock, run: strip("t2"), err: "not found: t2"},
		{name: "fence moved", in: calc1 + pendingBlock, run: one(func(d *Document, lines []string) (Edit, error) {
			lines = slices.Clone(lines)
			lines[d.Result("t1").FenceLine-1] = "````flemma:tool status=pending"
			return StripFence(d, lines, "t1")
		}), err: "unexpected fence line content for t1"},
	})
	// After stripping, the block is a completed result with the user's text.
	lines := chat(calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (error)\n\n^^^flemma:tool status=pending\nhi\n^^^")
	d := Parse(lines)
	e, err := StripFence(d, lines, "t1")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Apply(lines, []Edit{e})
	r := Parse(got).Result("t1")
	if r.Status != "" || r.Content != "hi" || !r.IsError {
		t.Errorf("after StripFence: status %q content %q error %v; want \"\", \"hi\", true", r.Status, r.Content, r.IsError)
	}
}

// TestSeedEraConformance pins the parsing items of seed-era.md §12 (1–11,
// 15, 23, 24) that are not covered above.
func TestSeedEraConformance(t *testing.T) {
	block := func(header, opener, body string) string {
		s := calc1 + "\n\n@You:\n" + header + "\n\n" + opener + "\n"
		if body != "" { // "\n" stands for one empty line
			s += strings.TrimSuffix(body, "\n") + "\n"
		}
		return s + "^^^"
	}
	tests := []struct {
		name, in              string
		status                Status
		isErr                 bool
		content, lang, info   string
		incomplete, unresolve int
	}{
		{"01 pending", block("**Tool Result:** ^t1^", "^^^flemma:tool status=pending", ""), StatusPending, false, "", "flemma:tool", "status=pending", 1, 0},
		{"02 approved", block("**Tool Result:** ^t1^", "^^^flemma:tool status=approved", ""), StatusApproved, false, "", "flemma:tool", "status=approved", 1, 0},
		{"02 denied", block("**Tool Result:** ^t1^", "^^^flemma:tool status=denied", ""), StatusDenied, false, "", "flemma:tool", "status=denied", 1, 0},
		{"02 aborted", block("**Tool Result:** ^t1^", "^^^flemma:tool status=aborted", ""), StatusAborted, false, "", "flemma:tool", "status=aborted", 1, 0},
		{"03 rejected with reason", block("**Tool Result:** ^t1^", "^^^flemma:tool status=rejected", "I don't want to run this dangerous command."),
			StatusRejected, false, "I don't want to run this dangerous command.", "flemma:tool", "status=rejected", 1, 0},
		{"04 no info", block("**Tool Result:** ^t1^", "^^^flemma:tool", ""), StatusPending, false, "", "flemma:tool", "", 1, 0},
		{"04 unknown status", block("**Tool Result:** ^t1^", "^^^flemma:tool status=xyz", ""), StatusPending, false, "", "flemma:tool", "status=xyz", 1, 0},
		{"04 positional only", block("**Tool Result:** ^t1^", "^^^flemma:tool approved", ""), StatusPending, false, "", "flemma:tool", "approved", 1, 0},
		{"05 reject", block("**Tool Result:** ^t1^", "^^^flemma:tool status=reject", ""), StatusRejected, false, "", "flemma:tool", "status=reject", 1, 0},
		{"05 deny", block("**Tool Result:** ^t1^", "^^^flemma:tool status=deny", ""), StatusDenied, false, "", "flemma:tool", "status=deny", 1, 0},
		{"06 plain empty", block("**Tool Result:** ^t1^", "^^^", ""), "", false, "", "", "", 0, 0},
		{"06 plain 4", block("**Tool Result:** ^t1^", "^^^", "4"), "", false, "4", "", "", 0, 0},
		{"07 info verbatim", block("**Tool Result:** ^t1^", "^^^flemma:tool status=approved timeout=30", ""), StatusApproved, false, "", "flemma:tool", "status=approved timeout=30", 1, 0},
		{"07 json no info", block("**Tool Result:** ^t1^", "^^^json", "{}"), "", false, "{}", "json", "", 0, 0},
		{"08 error header", block("**Tool Result:** ^t1^ (error)", "^^^", "boom"), "", true, "boom", "", "", 0, 0},
		{"08 error header and status", block("**Tool Result:** ^t1^ (error)", "^^^flemma:tool status=approved", ""), StatusApproved, true, "", "flemma:tool", "status=approved", 1, 0},
		// Ours: result bodies are never decoded, so a yaml or broken json
		// result is not a diagnostic (the era warned; v0.11 does not).
		{"09 yaml result", block("**Tool Result:** ^t1^", "^^^yaml", "a: 1"), "", false, "a: 1", "yaml", "", 0, 0},
		{"09 malformed json", block("**Tool Result:** ^t1^", "^^^json", "{ \"result\": 105"), "", false, "{ \"result\": 105", "json", "", 0, 0},
		{"15 opener replaced by the user", block("**Tool Result:** ^t1^", "^^^", "I refused to run this"), "", false, "I refused to run this", "", "", 0, 0},
		{"23 whitespace-only body is content", block("**Tool Result:** ^t1^", "^^^flemma:tool status=pending", "  "), StatusPending, false, "  ", "flemma:tool", "status=pending", 1, 0},
		{"23 one empty line is not", block("**Tool Result:** ^t1^", "^^^flemma:tool status=pending", "\n"), StatusPending, false, "", "flemma:tool", "status=pending", 1, 0},
		{"no result", calc1, "", false, "", "", "", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Parse(chat(tc.in))
			if len(d.Diagnostics) != 0 {
				t.Errorf("diagnostics: %v", d.Diagnostics)
			}
			if n := len(d.Incomplete()); n != tc.incomplete {
				t.Errorf("len(Incomplete()) = %d, want %d", n, tc.incomplete)
			}
			if n := len(d.Unresolved()); n != tc.unresolve {
				t.Errorf("len(Unresolved()) = %d, want %d", n, tc.unresolve)
			}
			r := d.Result("t1")
			if tc.unresolve == 1 {
				if r != nil {
					t.Errorf("Result(t1) = %+v, want nil", r)
				}
				return
			}
			if r == nil {
				t.Fatal("Result(t1) = nil")
			}
			if r.Status != tc.status || r.IsError != tc.isErr || r.Content != tc.content || r.Language != tc.lang || r.Info != tc.info || r.HeaderForm {
				t.Errorf("Result(t1) = status %q error %v content %q lang %q info %q header %v; want %q %v %q %q %q false",
					r.Status, r.IsError, r.Content, r.Language, r.Info, r.HeaderForm, tc.status, tc.isErr, tc.content, tc.lang, tc.info)
			}
		})
	}

	// 24: after the denied block above it is replaced, the pending block is
	// found again at a header line.
	lines := chat("@Assistant:\n" + use("bash", "a", `{"command":"rm -rf /"}`) + "\n\n" + use("bash", "b", `{"command":"ls"}`) +
		"\n\n@You:\n**Tool Result:** ^a^\n\n^^^flemma:tool status=denied\n^^^\n\n**Tool Result:** ^b^\n\n^^^flemma:tool status=pending\n^^^")
	d := Parse(lines)
	e, err := ReplaceResult(d, lines, "a", "The tool was denied by a policy.", true, "")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := Apply(lines, []Edit{e})
	d2 := Parse(after)
	b := d2.Result("b")
	if _, _, ok := toolResultHeader(after[b.HeaderLine-1]); !ok || b.Status != StatusPending || b.HeaderLine == d.Result("b").HeaderLine {
		t.Errorf("pending block after the edit: line %d %q status %q", b.HeaderLine, after[b.HeaderLine-1], b.Status)
	}
}

// TestPipelineConformance pins format.md §11 items 66–68.
func TestPipelineConformance(t *testing.T) {
	ids := func(us []*ToolUse) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.ID)
		}
		return out
	}
	parallel := "@Assistant:\n" + use("calculator", "toolu_01AAA", `{"expression": "23 * 3"}`) + "\n\n" +
		use("calculator", "toolu_01BBB", `{"expression": "ceil(69 / 8)"}`) + "\n\n@You:\n**Tool Result:** ^toolu_01AAA^\n\n^^^\n69\n^^^"
	d := Parse(chat(parallel))
	if got := ids(d.Unresolved()); !slices.Equal(got, []string{"toolu_01BBB"}) {
		t.Errorf("66: Unresolved() = %v, want [toolu_01BBB]", got)
	}
	d = Parse(chat(calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (pending)\n\n^^^\n^^^"))
	if got, un := ids(d.Incomplete()), d.Unresolved(); !slices.Equal(got, []string{"t1"}) || len(un) != 0 {
		t.Errorf("67: Incomplete() = %v, Unresolved() = %v; want [t1], []", got, un)
	}
	d = Parse(chat(calc1 + "\n\n@You:\n**Tool Result:** ^t1^\n\n^^^\n4\n^^^"))
	if got := d.Incomplete(); len(got) != 0 {
		t.Errorf("67: Incomplete() = %v with a completed result", ids(got))
	}
	d = Parse(chat(calc1 + "\n\n@You:\n**Tool Result:** ^t1^ (approved)\n\n^^^\n^^^"))
	if r := d.Result("t1"); r.Status != StatusApproved || !r.HeaderForm || len(d.Incomplete()) != 1 {
		t.Errorf("68: approved header placeholder = %+v", r)
	}
}

func TestRenderPlaceholderBody(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{"", []string{"**Tool Result:** `c1`", "", "```flemma:tool status=rejected", "```"}},
		{"too risky\nnot today", []string{"**Tool Result:** `c1`", "", "```flemma:tool status=rejected", "too risky", "not today", "```"}},
		{"uses ``` inside", []string{"**Tool Result:** `c1`", "", "````flemma:tool status=rejected", "uses ``` inside", "````"}},
	}
	for _, tt := range tests {
		got := RenderPlaceholderBody("c1", StatusRejected, tt.body)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("RenderPlaceholderBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
		if r := Parse(append([]string{"@Assistant:", "**Tool Use:** `x` (`c1`)", "```json", "{}", "```", "@You:"}, got...)).Result("c1"); r == nil || r.Status != StatusRejected || r.Content != tt.body {
			t.Errorf("RenderPlaceholderBody(%q) does not read back: %+v", tt.body, r)
		}
	}
}

// TestPlaceable: which placements Place takes (the call, when it still
// has no result), skips (a result exists) or refuses.
func TestPlaceable(t *testing.T) {
	ix := newIndex(
		[]*ToolUse{{ID: "open"}, {ID: "done"}, {ID: "a`b"}, {ID: "a\nb"}, {ID: "a\rb"}},
		[]*ToolResult{{ToolUseID: "done"}},
	)
	tests := []struct {
		name string
		pl   Placement
		want string // the id of the use returned; "" for none
		err  string
	}{
		{"pending", Placement{ID: "open", Status: StatusPending}, "open", ""},
		{"plain fence", Placement{ID: "open"}, "open", ""},
		{"error result", Placement{ID: "open", Error: "unknown tool"}, "open", ""},
		{"an error result ignores the status", Placement{ID: "open", Status: "bogus", Error: "x"}, "open", ""},
		{"already has a result", Placement{ID: "done", Status: StatusPending}, "", ""},
		{"no such call", Placement{ID: "nope", Status: StatusPending}, "", "tool use not found"},
		{"invalid status", Placement{ID: "open", Status: "bogus"}, "", "invalid status"},
		{"invalid status wins over an existing result", Placement{ID: "done", Status: "bogus"}, "", "invalid status"},
		{"backtick in the id", Placement{ID: "a`b"}, "", "cannot be written"},
		{"newline in the id", Placement{ID: "a\nb"}, "", "cannot be written"},
		{"carriage return in the id", Placement{ID: "a\rb"}, "", "cannot be written"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := placeable(ix, tc.pl)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || u != nil {
					t.Fatalf("placeable(%+v) = %v, %v; want an error %q", tc.pl, u, err, tc.err)
				}
				return
			}
			got := ""
			if u != nil {
				got = u.ID
			}
			if err != nil || got != tc.want {
				t.Fatalf("placeable(%+v) = %q, %v; want %q", tc.pl, got, err, tc.want)
			}
		})
	}
}

// TestPlaceSpot: where the block of each call goes, by the rule of spot
// (and predecessor): a new @You: after the assistant message's last
// non-blank line; after the result of the nearest earlier call of the same
// message; before the first result; below the @You: marker.
func TestPlaceSpot(t *testing.T) {
	use := func(id string) string {
		return "**Tool Use:** `t` (`" + id + "`)\n\n```json\n{}\n```\n"
	}
	res := func(id string) string { return "**Tool Result:** `" + id + "`\n\n```\nok\n```\n" }
	tests := []struct {
		name string
		text string
		id   string
		want placeGroup // items left out
		err  string
	}{
		{"no @You: after the message", "@Assistant:\n" + use("a") + "\n\n", "a",
			placeGroup{at: 6, mode: blankBefore, newYou: true}, ""},
		{"an @Assistant: follows", "@Assistant:\n" + use("a") + "@Assistant:\nmore\n", "a",
			placeGroup{at: 6, mode: blankBefore, newYou: true}, ""},
		{"empty @You:", "@Assistant:\n" + use("a") + "@You:\n\ntyped\n", "a",
			placeGroup{at: 7, mode: blankBefore}, ""},
		{"after the nearest earlier call's result", "@Assistant:\n" + use("a") + use("b") + use("c") + "@You:\n" + res("a") + res("b"), "c",
			placeGroup{at: 27, mode: blankBefore}, ""},
		{"an earlier call's result listed later still counts", "@Assistant:\n" + use("a") + use("b") + use("c") + "@You:\n" + res("b") + res("a"), "c",
			placeGroup{at: 22, mode: blankBefore}, ""},
		{"before the first result when no earlier call has one", "@Assistant:\n" + use("a") + use("b") + "@You:\n" + res("b"), "a",
			placeGroup{at: 12, mode: blankAfter}, ""},
		{"a result of another message's call is no predecessor", "@Assistant:\n" + use("x") + "@You:\n" + res("x") + "@Assistant:\n" + use("b") + use("a") + "@You:\n" + res("x"), "a",
			placeGroup{at: 24, mode: blankAfter}, ""},
		{"of a call's two results, the later", "@Assistant:\n" + use("a") + use("b") + use("c") + "@You:\n" + res("b") + res("a") + res("b"), "c",
			placeGroup{at: 32, mode: blankBefore}, ""},
		{"the last message ends in an open fence", "@Assistant:\n" + use("a") + "```\nopen\n", "a",
			placeGroup{}, "inside the code fence opened on line 7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.Split(tc.text, "\n")
			d := Parse(lines)
			u := d.Use(tc.id)
			if u == nil {
				t.Fatalf("no use %s: %v", tc.id, d.Diagnostics)
			}
			ix := d.index()
			p := &placer{d: d, lines: lines, ix: ix, homes: toolHomes(d, len(ix.uses))}
			g, err := p.spot(p.homes[u], tc.id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("spot = %+v, %v; want an error %q", g, err, tc.err)
				}
				return
			}
			if err != nil || g.at != tc.want.at || g.mode != tc.want.mode || g.newYou != tc.want.newYou || g.items != nil {
				t.Fatalf("spot = %+v, %v; want %+v", g, err, tc.want)
			}
		})
	}
}
