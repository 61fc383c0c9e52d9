package preview

import (
	"fmt"
	"strings"
	"testing"
)

func diffText(lines []DiffLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"new file", "", "x\ny\n", "@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "x\n2\n3\n4\n5\n6\n7\ny\n", "@@ -1,2 +1,2 @@\n-1\n+x\n 2\n@@ -7,2 +7,2 @@\n 7\n-8\n+y\n"},
		{"delete all", "a\n", "", "@@ -1 +0,0 @@\n-a\n"},
		{"final newline added", "a\nb", "a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n"},
		{"CRLF lines", "a\r\nb\r\n", "a\r\nc\r\n", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
	}
	for _, c := range cases {
		if got := diffText(Diff(c.old, c.new, 1)); got != c.want {
			t.Errorf("%s: diff =\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestDiffPreview: the inline form is bounded, says how much is left out,
// and shows no control characters (tabs as spaces), cut to the width.
func TestDiffPreview(t *testing.T) {
	var old, new strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&old, "line %d\n", i)
		fmt.Fprintf(&new, "LINE %d\n", i)
	}
	d := Diff(old.String(), new.String(), 1)
	p := DiffPreview(d, 40, 12, Options{})
	if len(p) != 12 {
		t.Fatalf("%d lines, want 12", len(p))
	}
	if last := p[11]; last.Kind != '~' || last.Text != fmt.Sprintf("… %d more lines, <CR> for the full diff", len(d)-11) {
		t.Errorf("last line = %+v", last)
	}
	if p[0].Text != "@@ -1,30 +1,30 @@" || p[1].Text != "-line 0" {
		t.Errorf("first lines = %+v", p[:2])
	}
	small := DiffPreview(Diff("a\n", "\tb\x1b[31m\u202e"+strings.Repeat("x", 100)+"\n", 1), 20, 12, Options{})
	if len(small) != 3 {
		t.Fatalf("small = %+v", small)
	}
	if got := small[2].Text; strings.ContainsAny(got, "\t\x1b\u202e") || !strings.HasPrefix(got, "+    b") || cellWidth(got, narrowCells) > 20 {
		t.Errorf("added line shown as %q", got)
	}
}

func TestSplitLines(t *testing.T) {
	for in, want := range map[string]string{"": "[]", "a": "[a]", "a\n": "[a]", "a\r\nb": "[a b]", "\n": "[]"} {
		if got := fmt.Sprint(SplitLines(in)); got != want {
			t.Errorf("SplitLines(%q) = %s, want %s", in, got, want)
		}
	}
}
