package cycle

import (
	"strings"
	"testing"
)

// TestReviewedEdit: a reviewed full content becomes the smallest edit of a
// unique text that gives exactly that content.
func TestReviewedEdit(t *testing.T) {
	cases := []struct {
		name, old, reviewed string
		oldText, newText    string
		ok                  bool
	}{
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "b\n", "B\n", true},
		{"widened until unique", "x\nsame\ny\nsame\nz\n", "x\nsame\ny\nSAME\nz\n", "same\n", "SAME\n", false},
		{"insertion", "a\nb\n", "a\nnew\nb\n", "a\nb\n", "a\nnew\nb\n", true},
		{"deletion", "a\nb\nc\n", "a\nc\n", "b\n", "", true},
		{"no final newline", "a\nb", "a\nc", "b", "c", true},
	}
	for _, c := range cases {
		oldText, newText, ok := reviewedEdit(c.old, c.reviewed)
		if !ok {
			t.Errorf("%s: no edit", c.name)
			continue
		}
		if countOverlapping(c.old, oldText) != 1 {
			t.Errorf("%s: oldText %q is not unique", c.name, oldText)
		}
		if got := strings.Replace(c.old, oldText, newText, 1); got != c.reviewed {
			t.Errorf("%s: the edit (%q → %q) gives %q, want %q", c.name, oldText, newText, got, c.reviewed)
		}
		if c.ok && (oldText != c.oldText || newText != c.newText) {
			t.Errorf("%s: edit %q → %q, want %q → %q", c.name, oldText, newText, c.oldText, c.newText)
		}
	}
	if _, _, ok := reviewedEdit("", "x\n"); ok {
		t.Errorf("an empty file has no unique text to edit")
	}
}

func TestJoinAs(t *testing.T) {
	for _, c := range []struct {
		lines []string
		like  string
		want  string
	}{
		{[]string{"a", "b"}, "x\n", "a\nb\n"},
		{[]string{"a", "b"}, "x", "a\nb"},
		{[]string{"a", "b"}, "x\r\ny\r\n", "a\r\nb\r\n"},
		{[]string{"a"}, "", "a\n"},
		{[]string{}, "x\n", ""},
	} {
		if got := joinAs(c.lines, []byte(c.like)); got != c.want {
			t.Errorf("joinAs(%q, %q) = %q, want %q", c.lines, c.like, got, c.want)
		}
	}
}
