package buffer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks the parser's invariants on arbitrary text: no panic,
// sorted diagnostics, positions inside their parents, no text lost,
// Render∘Parse idempotent, and edits that read back as intended. The seed
// corpus is every .chat file under ../testdata plus the inputs of the
// format conformance cases.
func FuzzParse(f *testing.F) {
	for _, path := range chatFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, c := range formatCases {
		lines := c.lines
		if lines == nil {
			lines = chat(c.in)
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkDocument(t, strings.Split(data, "\n"))
	})
}

// TestInvariants runs the fuzz checks on every testdata file (so plain `go
// test` covers them too).
func TestInvariants(t *testing.T) {
	for _, path := range chatFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkDocument(t, readLines(t, path))
		})
	}
}

func checkDocument(t *testing.T, lines []string) {
	t.Helper()
	d := Parse(lines)
	src := stripCR(lines)
	if d.LineCount != len(lines) {
		t.Fatalf("LineCount = %d, want %d", d.LineCount, len(lines))
	}

	// Diagnostics: sorted, on real lines.
	if !slices.IsSortedFunc(d.Diagnostics, func(a, b Diagnostic) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	}) {
		t.Errorf("diagnostics not sorted: %v", d.Diagnostics)
	}
	for _, g := range d.Diagnostics {
		if g.Line < 1 || g.Line > len(lines) || g.Col < 0 || g.Message == "" || g.Severity < SeverityError || g.Severity > SeverityHint {
			t.Errorf("bad diagnostic %+v", g)
		}
	}

	// Positions: messages in order, segments inside them, in order.
	structural := map[int]bool{} // lines rebuilt by Render rather than copied
	var summaries []*Summary
	prev := 0
	if fm := d.Frontmatter; fm != nil {
		if fm.StartLine != 1 || fm.EndLine < 2 || fm.EndLine > len(lines) {
			t.Fatalf("frontmatter at %d-%d", fm.StartLine, fm.EndLine)
		}
		structural[1], structural[fm.EndLine] = true, true
		prev = fm.EndLine
	}
	if p := d.Preamble; p != nil && (p.StartLine <= prev || p.EndLine < p.StartLine) {
		t.Errorf("preamble at %d-%d after line %d", p.StartLine, p.EndLine, prev)
	}
	for _, m := range d.Messages {
		if m.StartLine <= prev || m.EndLine < m.StartLine || m.EndLine > len(lines) {
			t.Fatalf("message %s at %d-%d after line %d", m.Role, m.StartLine, m.EndLine, prev)
		}
		if role, ok := roleMarker(src[m.StartLine-1]); !ok || role != m.Role {
			t.Errorf("message %s starts at line %d = %q", m.Role, m.StartLine, src[m.StartLine-1])
		}
		structural[m.StartLine] = true
		last := m.StartLine
		for _, s := range m.Segments {
			start, end := s.Lines()
			if start <= last || end < start || end > m.EndLine {
				t.Fatalf("segment %T at %d-%d in message %d-%d after line %d", s, start, end, m.StartLine, m.EndLine, last)
			}
			last = end
			switch s := s.(type) {
			case *ToolUse:
				if !(s.HeaderLine < s.FenceLine && s.FenceLine < s.EndLine) {
					t.Errorf("tool use lines %d %d %d", s.HeaderLine, s.FenceLine, s.EndLine)
				}
				structural[s.HeaderLine], structural[s.FenceLine], structural[s.EndLine] = true, true, true
			case *ToolResult:
				if !(s.HeaderLine < s.FenceLine && s.FenceLine < s.EndLine) {
					t.Errorf("tool result lines %d %d %d", s.HeaderLine, s.FenceLine, s.EndLine)
				}
				structural[s.HeaderLine], structural[s.FenceLine], structural[s.EndLine] = true, true, true
			case *Thinking:
				structural[s.StartLine], structural[s.EndLine] = true, true
			case *Aborted:
				structural[s.StartLine] = true
			case *Summary:
				if m.Role != "You" {
					t.Errorf("summary %d-%d in a @%s message", s.StartLine, s.EndLine, m.Role)
				}
				structural[s.StartLine], structural[s.EndLine] = true, true
				summaries = append(summaries, s)
			case *Text:
				if isBlank(src[s.StartLine-1]) || isBlank(src[s.EndLine-1]) {
					t.Errorf("text %d-%d starts or ends blank", s.StartLine, s.EndLine)
				}
			}
		}
		prev = m.EndLine
	}

	// The summary in force is the last one, and the queries see no block
	// above it; the whole view sees every block.
	if n := len(summaries); n == 0 && d.Summary != nil || n > 0 && d.Summary != summaries[n-1] {
		t.Errorf("summary in force %+v, want the last of %d", d.Summary, n)
	}
	for _, u := range d.ToolUses() {
		if d.Compacted(u.HeaderLine) {
			t.Errorf("tool use %s on line %d above the summary is listed", u.ID, u.HeaderLine)
		}
	}
	for _, r := range d.ToolResults() {
		if d.Compacted(r.HeaderLine) {
			t.Errorf("tool result %s on line %d above the summary is listed", r.ToolUseID, r.HeaderLine)
		}
	}
	if w := d.Whole(); len(w.ToolUses()) < len(d.ToolUses()) || w.Summary != nil {
		t.Errorf("Whole lists %d tool uses, the document %d", len(w.ToolUses()), len(d.ToolUses()))
	}

	// Render: line-aligned, nothing but blank and structural lines changed,
	// idempotent, and stable under re-parsing.
	out := Render(d)
	if len(out) != len(lines) {
		t.Fatalf("Render has %d lines, want %d", len(out), len(lines))
	}
	for i, l := range stripCR(out) {
		if l != src[i] && !structural[i+1] && !(l == "" && isBlank(src[i])) {
			t.Errorf("line %d changed by Render: %q -> %q", i+1, src[i], l)
		}
	}
	d2 := Parse(out)
	if out2 := Render(d2); !slices.Equal(out, out2) {
		t.Errorf("Render∘Parse not idempotent:\n%s", lineDiff(strings.Join(out, "\n"), strings.Join(out2, "\n")))
	}
	if a, b := sketch(d), sketch(d2); a != b {
		t.Errorf("re-parsing the rendered text changes the document:\n%s", lineDiff(a, b))
	}

	checkEdits(t, d, lines)
}

// checkEdits applies each kind of edit to every block it can target and
// checks that the result reads back as intended.
func checkEdits(t *testing.T, d *Document, lines []string) {
	t.Helper()
	reparse := func(what string, edits []Edit) *Document {
		t.Helper()
		out, err := Apply(lines, edits)
		if err != nil {
			t.Fatalf("%s: Apply: %v", what, err)
		}
		return Parse(out)
	}

	statuses := []Status{StatusPending, StatusApproved, StatusDenied, StatusAborted, ""}
	var ps []Placement
	for i, u := range d.Unresolved() {
		ps = append(ps, Placement{ID: u.ID, Status: statuses[i%len(statuses)]})
	}
	edits, err := PlacePlaceholders(d, lines, ps)
	switch {
	case err != nil && d.openFence == 0 && !slices.ContainsFunc(ps, func(p Placement) bool { return strings.Contains(p.ID, "`") }):
		t.Errorf("PlacePlaceholders(%v): %v", ps, err)
	case err == nil:
		for _, e := range edits {
			if e.Start != e.End {
				t.Errorf("PlacePlaceholders edit %+v replaces lines", e)
			}
		}
		d2 := reparse("PlacePlaceholders", edits)
		placed := func(s Segment) bool {
			r, ok := s.(*ToolResult)
			return ok && slices.ContainsFunc(ps, func(p Placement) bool { return p.ID == r.ToolUseID }) && d.Result(r.ToolUseID) == nil
		}
		if a, b := shape(d, nil), shape(d2, placed); !slices.Equal(a, b) {
			t.Errorf("PlacePlaceholders changed other blocks:\n%s", lineDiff(strings.Join(a, "\n"), strings.Join(b, "\n")))
		}
		for _, p := range ps {
			if r := d2.Result(p.ID); r == nil || r.Status != p.Status {
				t.Errorf("placed %s as %q, read back %+v", p.ID, p.Status, r)
			}
		}
		if n := len(d2.Unresolved()); n != 0 {
			t.Errorf("%d tool uses unresolved after placing", n)
		}
	}

	seen := map[string]bool{}
	for _, r := range d.ToolResults() {
		if seen[r.ToolUseID] {
			continue
		}
		seen[r.ToolUseID] = true
		const content = "ok\n```go\n@You:\n````\n"
		e, err := ReplaceResult(d, lines, r.ToolUseID, content, true, "text")
		if err != nil {
			t.Errorf("ReplaceResult(%s): %v", r.ToolUseID, err)
			continue
		}
		if e.Start != r.HeaderLine-1 || e.End != r.EndLine {
			t.Errorf("ReplaceResult(%s) edits [%d, %d), want the block [%d, %d)", r.ToolUseID, e.Start, e.End, r.HeaderLine-1, r.EndLine)
		}
		d2 := reparse("ReplaceResult", []Edit{e})
		if got := d2.Result(r.ToolUseID); got == nil || got.Content != content || !got.IsError || got.Status != "" {
			t.Errorf("ReplaceResult(%s) read back %+v", r.ToolUseID, got)
		}
		target := func(id string) func(Segment) bool {
			return func(s Segment) bool { x, ok := s.(*ToolResult); return ok && x.ToolUseID == id && d2.Result(id) == x }
		}
		orig := func(s Segment) bool { return s == Segment(r) }
		if a, b := shape(d, orig), shape(d2, target(r.ToolUseID)); !slices.Equal(a, b) {
			t.Errorf("ReplaceResult(%s) changed other blocks:\n%s", r.ToolUseID, lineDiff(strings.Join(a, "\n"), strings.Join(b, "\n")))
		}
		if r.Status == "" {
			continue
		}
		for _, s := range []Status{StatusApproved, StatusRejected} {
			e, err := SetStatus(d, lines, r.ToolUseID, s)
			if err != nil {
				t.Errorf("SetStatus(%s, %s): %v", r.ToolUseID, s, err)
				continue
			}
			if e.Start < r.HeaderLine-1 || e.End > r.FenceLine {
				t.Errorf("SetStatus(%s) edits [%d, %d) outside header..opener %d-%d", r.ToolUseID, e.Start, e.End, r.HeaderLine, r.FenceLine)
			}
			if got := reparse("SetStatus", []Edit{e}).Result(r.ToolUseID); got == nil || got.Status != s || got.Content != r.Content || got.IsError != r.IsError || got.HeaderForm {
				t.Errorf("SetStatus(%s, %s) read back %+v from %+v", r.ToolUseID, s, got, r)
			}
		}
		e, err = StripFence(d, lines, r.ToolUseID)
		if err != nil {
			t.Errorf("StripFence(%s): %v", r.ToolUseID, err)
			continue
		}
		if e.Start < r.HeaderLine-1 || e.End > r.FenceLine || e.End-e.Start != len(e.Lines) {
			t.Errorf("StripFence(%s) edit [%d, %d) outside header..opener %d-%d", r.ToolUseID, e.Start, e.End, r.HeaderLine, r.FenceLine)
		}
		if got := reparse("StripFence", []Edit{e}).Result(r.ToolUseID); got == nil || got.Status != "" || got.Content != r.Content || got.IsError != r.IsError {
			t.Errorf("StripFence(%s) read back %+v from %+v", r.ToolUseID, got, r)
		}
	}
}

// shape lists the segments of d without positions, leaving out those skip
// selects: what an edit elsewhere must not change.
func shape(d *Document, skip func(Segment) bool) []string {
	var out []string
	for _, m := range d.Messages {
		for _, s := range m.Segments {
			if skip != nil && skip(s) {
				continue
			}
			var l string
			switch s := s.(type) {
			case *Text:
				l = "text " + strconv.Quote(s.Value())
			case *Thinking:
				l = fmt.Sprintf("thinking %q %s %s %v", s.Content(), s.Provider, s.Signature, s.Redacted)
			case *Aborted:
				l = "aborted " + s.Message
			case *Summary:
				l = fmt.Sprintf("summary %q %q", s.Note, s.Content())
			case *ToolUse:
				l = fmt.Sprintf("use %s %s %q", s.Name, s.ID, s.RawInput)
			case *ToolResult:
				l = fmt.Sprintf("result %s %q %v %q %q", s.ToolUseID, s.Status, s.IsError, s.Info, s.Content)
			}
			out = append(out, l)
		}
	}
	return out
}
