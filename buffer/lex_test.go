package buffer

import (
	"slices"
	"testing"
)

func TestRoleMarker(t *testing.T) {
	tests := []struct {
		in   string
		role string
		ok   bool
	}{
		{"@You:", "You", true},
		{"@Assistant:  \t", "Assistant", true},
		{"@Bot2:\v\f", "Bot2", true},
		{"@You: hi", "", false},
		{" @You:", "", false},
		{"@My_Role:", "", false},
		{"@:", "", false},
		{"@You", "", false},
		{"@Ünï:", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		if role, ok := roleMarker(tc.in); role != tc.role || ok != tc.ok {
			t.Errorf("roleMarker(%q) = %q, %v; want %q, %v", tc.in, role, ok, tc.role, tc.ok)
		}
	}
}

func TestFenceLines(t *testing.T) {
	opens := map[string]int{
		"```": 3, "````json": 4, "```flemma:tool status=pending": 3, "```  python  ": 3,
		"``": 0, "```a`b": 0, "```code```": 0, " ```": 0, "~~~": 0, "": 0,
	}
	for in, want := range opens {
		if got := fenceOpen(in); got != want {
			t.Errorf("fenceOpen(%q) = %d, want %d", in, got, want)
		}
	}
	closes := []struct {
		in   string
		n    int
		want bool
	}{
		{"```", 3, true}, {"```  ", 3, true}, {"`````", 3, true}, {"```", 4, false}, {"``` x", 3, false}, {" ```", 3, false},
	}
	for _, tc := range closes {
		if got := fenceCloses(tc.in, tc.n); got != tc.want {
			t.Errorf("fenceCloses(%q, %d) = %v", tc.in, tc.n, got)
		}
	}
	infos := []struct{ in, lang, info string }{
		{"```", "", ""},
		{"```json", "json", ""},
		{"```flemma:tool status=approved timeout=30  ", "flemma:tool", "status=approved timeout=30"},
		{"````  spaced", "", "spaced"},
		{"```c++", "c", "++"},
	}
	for _, tc := range infos {
		if lang, info := fenceInfo(tc.in, backticks(tc.in)); lang != tc.lang || info != tc.info {
			t.Errorf("fenceInfo(%q) = %q, %q; want %q, %q", tc.in, lang, info, tc.lang, tc.info)
		}
	}
}

func TestToolHeaders(t *testing.T) {
	uses := []struct{ in, name, id, suffix string }{
		{"**Tool Use:** `bash` (`call_1`)", "bash", "call_1", ""},
		{"**Tool Use:**`my tool`(`x`) trailing  ", "my tool", "x", " trailing"},
		{"**Tool Use:** `a` (`c`1`)", "a", "c`1", ""},
		{"**Tool Use:** `a` (`x)y`)", "", "", ""}, // the id may not contain ')'
		{"**Tool Use:** `a` (``)", "", "", ""},
		{"**Tool Use:** `` (`1`)", "", "", ""},
		{"**Tool Use:** `a`", "", "", ""},
		{"**Tool use:** `a` (`1`)", "", "", ""},
	}
	for _, tc := range uses {
		name, id, suffix, ok := toolUseHeader(tc.in)
		if name != tc.name || id != tc.id || suffix != tc.suffix || ok != (tc.name != "") {
			t.Errorf("toolUseHeader(%q) = %q, %q, %q, %v", tc.in, name, id, suffix, ok)
		}
	}
	results := []struct{ in, id, suffix string }{
		{"**Tool Result:** `toolu_01`", "toolu_01", ""},
		{"**Tool Result:**`x` (error)  ", "x", " (error)"},
		{"**Tool Result:** `x`(pending) extra", "x", "(pending) extra"},
		{"**Tool Result:** ``", "", ""},
		{"**Tool Result:** x", "", ""},
	}
	for _, tc := range results {
		id, suffix, ok := toolResultHeader(tc.in)
		if id != tc.id || suffix != tc.suffix || ok != (tc.id != "") {
			t.Errorf("toolResultHeader(%q) = %q, %q, %v", tc.in, id, suffix, ok)
		}
	}
}

func TestHeaderSuffix(t *testing.T) {
	tests := []struct {
		in    string
		st    Status
		isErr bool
		extra []string
	}{
		{"", "", false, nil},
		{" (pending)", StatusPending, false, nil},
		{" (  approved  )", StatusApproved, false, nil},
		{" (reject)", StatusRejected, false, nil},
		{" (deny)", StatusDenied, false, nil},
		{" (aborted)", StatusAborted, false, nil},
		{" (error)", "", true, nil},
		{" (status=error)", "", true, nil},
		{" (Error)", "", false, nil},
		{" (xyz)", "", false, nil},
		{" ()", "", false, nil},
		{" pending", "", false, nil},
		{" (pending) extra", "", false, nil},
		{" (approved error)", StatusApproved, false, nil},
		{" (error status=approved)", StatusApproved, false, nil},
		{" (status=bogus pending)", StatusPending, false, nil},
		{` (status="denied")`, StatusDenied, false, nil},
		{" (status=pending sandbox=false timeout=30)", StatusPending, false, []string{"sandbox=false", "timeout=30"}},
	}
	for _, tc := range tests {
		st, isErr, extra := headerSuffix(tc.in)
		if st != tc.st || isErr != tc.isErr || !slices.Equal(extra, tc.extra) {
			t.Errorf("headerSuffix(%q) = %q, %v, %q; want %q, %v, %q", tc.in, st, isErr, extra, tc.st, tc.isErr, tc.extra)
		}
	}
	fence := map[string]Status{
		"": StatusPending, "status=approved": StatusApproved, "timeout=3 status=deny": StatusDenied,
		"status=reject": StatusRejected, "status=Approved": StatusPending, "status=": StatusPending,
		"approved": StatusPending, "status=approved status=denied": StatusDenied, "status=error": StatusPending,
	}
	for in, want := range fence {
		if got := fenceStatus(in); got != want {
			t.Errorf("fenceStatus(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTags(t *testing.T) {
	thinking := []struct {
		in string
		ok bool
		t  thinkingTag
	}{
		{"<thinking>", true, thinkingTag{}},
		{"<thinking redacted>", true, thinkingTag{redacted: true}},
		{"<thinking \t redacted>", true, thinkingTag{redacted: true}},
		{`<thinking anthropic:signature="abc+/=">`, true, thinkingTag{provider: "anthropic", signature: "abc+/="}},
		{`<thinking vertex:signature="">`, true, thinkingTag{provider: "vertex"}},
		{`<thinking vertex:signature="s" />`, true, thinkingTag{provider: "vertex", signature: "s", selfClosing: true}},
		{"<thinking> ", false, thinkingTag{}},
		{" <thinking>", false, thinkingTag{}},
		{"<thinkingredacted>", false, thinkingTag{}},
		{`<thinking my_prov:signature="x">`, false, thinkingTag{}},
		{`<thinking p:signature="x>`, false, thinkingTag{}},
		{`<thinking p:signature="x"> extra`, false, thinkingTag{}},
		{"<thinking", false, thinkingTag{}},
	}
	for _, tc := range thinking {
		if got, ok := thinkingOpen(tc.in); ok != tc.ok || got != tc.t {
			t.Errorf("thinkingOpen(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.t, tc.ok)
		}
	}
	aborts := []struct {
		in, msg string
		ok      bool
	}{
		{"<!-- flemma:aborted: Response interrupted by the user. -->", "Response interrupted by the user.", true},
		{"<!--flemma:aborted:x-->", "x", true},
		{"<!-- flemma:aborted: -->", "", true},
		{"<!-- flemma:aborted: a --> b -->", "a --> b", true},
		{"<!-- flemma:aborted -->", "", false},
		{"<!-- note -->", "", false},
		{"<!-->", "", false},
		{" <!-- flemma:aborted: x -->", "", false},
	}
	for _, tc := range aborts {
		if msg, ok := abortMarker(tc.in); msg != tc.msg || ok != tc.ok {
			t.Errorf("abortMarker(%q) = %q, %v; want %q, %v", tc.in, msg, ok, tc.msg, tc.ok)
		}
	}
}

func TestStatusAndSeverity(t *testing.T) {
	for _, w := range []string{"pending", "approved", "denied", "rejected", "aborted"} {
		if s, ok := ParseStatus(w); !ok || string(s) != w || !s.Valid() {
			t.Errorf("ParseStatus(%q) = %q, %v", w, s, ok)
		}
	}
	for w, want := range map[string]Status{"reject": StatusRejected, "deny": StatusDenied} {
		if s, ok := ParseStatus(w); !ok || s != want {
			t.Errorf("ParseStatus(%q) = %q, %v; want %q", w, s, ok, want)
		}
	}
	for _, w := range []string{"", "error", "Pending", "done"} {
		if s, ok := ParseStatus(w); ok || Status(w).Valid() {
			t.Errorf("ParseStatus(%q) = %q, true; want false", w, s)
		}
	}
	names := map[Severity]string{SeverityError: "error", SeverityWarning: "warning", SeverityInfo: "info", SeverityHint: "hint", 7: "Severity(7)"}
	for s, want := range names {
		if s.String() != want {
			t.Errorf("Severity(%d).String() = %q, want %q", int(s), s.String(), want)
		}
	}
	if got := (Diagnostic{Line: 12, Col: 4, Message: "boom"}).String(); got != "12:4: boom" {
		t.Errorf("Diagnostic.String() = %q", got)
	}
	if got := (Diagnostic{Line: 3, Message: "boom"}).String(); got != "3: boom" {
		t.Errorf("Diagnostic.String() without column = %q", got)
	}
}

func TestQueries(t *testing.T) {
	lines := chat(`
^^^lua
x = 1
^^^
@You:
hi
@Assistant:
**Tool Use:** ^bash^ (^a^)
^^^json
{}
^^^
text
**Tool Use:** ^bash^ (^b^)
^^^json
{}
^^^
<!-- flemma:aborted: stopped -->

@You:
**Tool Result:** ^a^
^^^
ok
^^^
**Tool Result:** ^orphan^
^^^
^^^`)
	d := Parse(lines)
	type at struct {
		role     string
		use, res string
	}
	want := map[int]at{
		1: {}, 3: {}, 4: {"You", "", ""}, 5: {"You", "", ""},
		6: {"Assistant", "", ""}, 7: {"Assistant", "a", "a"}, 10: {"Assistant", "a", "a"}, 11: {"Assistant", "", ""},
		12: {"Assistant", "b", ""}, 17: {"Assistant", "", ""},
		18: {"You", "", ""}, 19: {"You", "a", "a"}, 22: {"You", "a", "a"}, 23: {"You", "", "orphan"}, 25: {"You", "", "orphan"},
		26: {}, 0: {},
	}
	for line, w := range want {
		m := d.MessageAt(line)
		if role := ""; m != nil && m.Role != w.role || m == nil && w.role != "" {
			if m != nil {
				role = m.Role
			}
			t.Errorf("MessageAt(%d) = %q, want %q", line, role, w.role)
		}
		u, r := d.BlockAt(line)
		var gu, gr string
		if u != nil {
			gu = u.ID
		}
		if r != nil {
			gr = r.ToolUseID
		}
		if gu != w.use || gr != w.res {
			t.Errorf("BlockAt(%d) = %q, %q; want %q, %q", line, gu, gr, w.use, w.res)
		}
	}
	a := d.Messages[1]
	if got := len(a.ToolUses()); got != 2 {
		t.Errorf("ToolUses() of the assistant message: %d", got)
	}
	if m := a.AbortMarker(); m == nil || m.Message != "stopped" {
		t.Errorf("AbortMarker() = %+v", m)
	}
	if d.Messages[0].AbortMarker() != nil || len(d.Messages[2].ToolResults()) != 2 {
		t.Errorf("message helpers disagree")
	}
	if d.Use("b") == nil || d.Use("zz") != nil || d.Result("b") != nil {
		t.Errorf("Use/Result lookups wrong")
	}

	// A hand-made document works without the parser's index, and Render
	// drops what lies outside LineCount instead of panicking.
	hand := &Document{LineCount: 3, Messages: []*Message{{Role: "You", StartLine: 1, EndLine: 3, Segments: []Segment{
		&ToolResult{ToolUseID: "x", HeaderLine: 2, FenceLine: 3, EndLine: 4, FenceLen: 3, Content: "a\nb\nc"},
	}}}}
	if hand.Result("x") == nil || len(hand.ToolResults()) != 1 || len(hand.Unresolved()) != 0 {
		t.Errorf("queries on a hand-made document failed")
	}
	if got := Render(hand); !slices.Equal(got, []string{"@You:", "**Tool Result:** `x`", "```"}) {
		t.Errorf("Render(hand-made) = %q", got)
	}
}

// TestCRLF checks that a trailing \r is dropped from every line, and only one.
func TestCRLF(t *testing.T) {
	lines := []string{"@You:\r", "**Tool Result:** `a` (error)\r", "```\r", "x\r\r", "```\r"}
	d := Parse(lines)
	r := d.Result("a")
	if r == nil || r.Content != "x\r" || !r.IsError || len(d.Messages) != 1 {
		t.Fatalf("Parse(%q) = %s", lines, sketch(d))
	}
	if lines[0] != "@You:\r" {
		t.Errorf("Parse modified its input")
	}
	if got := Render(d); got[3] != "x\r\r" || got[0] != "@You:" {
		t.Errorf("Render = %q", got)
	}
}
