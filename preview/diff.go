package preview

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// DiffLine is one line of a unified diff: Kind '@' (a hunk header), '+'
// (added), '-' (removed) or ' ' (context). Text is the line without its
// line break.
type DiffLine struct {
	Kind byte
	Text string
}

// String is the line as a unified diff writes it.
func (d DiffLine) String() string {
	if d.Kind == '@' {
		return d.Text
	}
	return string(d.Kind) + d.Text
}

// SplitLines splits a file's content in lines the way an editor shows
// them: without their line breaks (and CRs), no empty last line after a
// final line break.
func SplitLines(s string) []string {
	if s == "" {
		return []string{}
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// Diff is the unified diff (hunks of context lines around each change)
// from old to new, computed by go-difflib's sequence matcher. Equal
// contents give no lines. A change of the final line break alone shows
// as the last line removed and added.
func Diff(old, new string, context int) []DiffLine {
	a, b := SplitLines(old), SplitLines(new)
	if strings.HasSuffix(old, "\n") != strings.HasSuffix(new, "\n") && len(a) > 0 && len(b) > 0 {
		// Make the final line differ so the matcher sees the change.
		if !strings.HasSuffix(old, "\n") {
			a[len(a)-1] += "\x00"
		} else {
			b[len(b)-1] += "\x00"
		}
	}
	m := difflib.NewMatcherWithJunk(a, b, false, nil)
	var out []DiffLine
	for _, g := range m.GetGroupedOpCodes(context) {
		first, last := g[0], g[len(g)-1]
		out = append(out, DiffLine{Kind: '@', Text: fmt.Sprintf("@@ -%s +%s @@", span(first.I1, last.I2), span(first.J1, last.J2))})
		for _, c := range g {
			if c.Tag == 'e' {
				for _, l := range a[c.I1:c.I2] {
					out = append(out, DiffLine{Kind: ' ', Text: clean0(l)})
				}
				continue
			}
			if c.Tag == 'r' || c.Tag == 'd' {
				for _, l := range a[c.I1:c.I2] {
					out = append(out, DiffLine{Kind: '-', Text: clean0(l)})
				}
			}
			if c.Tag == 'r' || c.Tag == 'i' {
				for _, l := range b[c.J1:c.J2] {
					out = append(out, DiffLine{Kind: '+', Text: clean0(l)})
				}
			}
		}
	}
	return out
}

func clean0(s string) string { return strings.TrimSuffix(s, "\x00") }

// span is a hunk range as unified diffs write it (1-based start, count).
func span(start, stop int) string {
	n := stop - start
	switch {
	case n == 1:
		return fmt.Sprintf("%d", start+1)
	case n == 0:
		return fmt.Sprintf("%d,0", start) // an empty range names the line before
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// DiffPreview is the inline form of a diff under a pending placeholder: at
// most max lines, each cleaned of controls (tabs shown as spaces) and cut
// to width cells; when the diff is longer, its last line is replaced by
// "… N more lines, <CR> for the full diff" (Kind '~'). Texts are the
// lines as shown, their +/- included.
func DiffPreview(lines []DiffLine, width, max int, opts Options) []DiffLine {
	if width <= 0 {
		width = 80
	}
	c := narrowCells
	if opts.AmbiguousWide {
		c = wideCells
	}
	n := len(lines)
	show := lines
	if n > max {
		show = lines[:max-1]
	}
	out := make([]DiffLine, 0, len(show)+1)
	for _, d := range show {
		l := line{eol: " ", budget: 4*width + 64}
		if d.Kind != '@' {
			l.raw(string(d.Kind))
		}
		l.text(strings.ReplaceAll(d.Text, "\t", "    "))
		out = append(out, DiffLine{Kind: d.Kind, Text: fit(string(l.buf), width, c)})
	}
	if n > max {
		out = append(out, DiffLine{Kind: '~', Text: fmt.Sprintf("… %d more lines, <CR> for the full diff", n-len(show))})
	}
	return out
}
