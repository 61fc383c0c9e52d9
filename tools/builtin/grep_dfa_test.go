package builtin

import (
	"bytes"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var dfaPatterns = []string{
	`\b[A-Z]{2,}[0-9]+\b`, `^func`, `\)$`, `\Afoo`, `bar\z`, `(?m)^\s*$`, `^$`, ``,
	`\bx\B`, `\B`, `(?i)straße`, `(?i)k`, `[^a-z]`, `.`, `(?s).`, `a|b|cd`, `(a+)+$`,
	`\d{3}-\d{4}`, `[\p{Greek}]+`, `é`, `\x{FFFD}`, `a.c`, `x*`, `(?U)a+?b`,
	`[[:upper:]][[:lower:]]+[[:digit:]]`, `\w+@\w+\.\w+`, `(foo|bar)\s+(baz)?qux`,
}

var dfaLines = []string{
	"", "a", "func main() {", "  x := f(1)", "ABC123 DEF", "AB1", "A1", "foo bar", "barfoo", "xyz",
	"straße STRASSE", "K kelvin \u212a", "αβγ", "é e\u0301", "bad \xff utf8 \xc3", "a\rb", "tab\there",
	"abc", "x@y.z", "foo  bazqux", "barqux", "123-4567", "end)", "aaaa", "aab",
}

func TestLineDFAAgreesWithRegexp(t *testing.T) {
	for _, p := range dfaPatterns {
		re := regexp.MustCompile(p)
		d := newLineDFA(p)
		if d == nil {
			t.Fatalf("%q: no DFA", p)
		}
		for _, l := range dfaLines {
			if got, want := d.matchLine([]byte(l)), re.MatchString(l); got != want {
				t.Errorf("%q on %q: DFA %v, regexp %v", p, l, got, want)
			}
		}
	}
}

// TestLineDFAScansLines: whole regions, "\r\n" endings, a last line with
// no newline, and the cache reset (a pattern with many states).
func TestLineDFAScansLines(t *testing.T) {
	region := []byte("AB12 x\r\nno\nCD34\r\n\nzz EF5")
	d := newLineDFA(`\b[A-Z]{2,}[0-9]+\b`)
	var got []string
	d.scanLines(region, 10, func(ls, le int) { got = append(got, string(region[ls:le])) })
	if strings.Join(got, "|") != "AB12 x\r|CD34\r|zz EF5" {
		t.Fatalf("lines %q", got)
	}
	// (a|b)*a(a|b){12}: the classic exponential DFA.
	p := `(a|b)*a(a|b){12}$`
	re, d := regexp.MustCompile(p), newLineDFA(p)
	var text bytes.Buffer
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		for range 300 {
			text.WriteByte("ab"[rng.Intn(2)])
		}
		text.WriteByte('\n')
	}
	for _, l := range bytes.Split(text.Bytes(), []byte("\n")) {
		if d.matchLine(l) != re.Match(l) {
			t.Fatalf("%q on %q disagrees", p, l)
		}
	}
	if d.resets == 0 {
		t.Fatalf("the cache was never reset (%d states)", len(d.states))
	}
}

// FuzzLineDFA: the DFA and regexp agree on whether a line matches.
func FuzzLineDFA(f *testing.F) {
	for i, p := range dfaPatterns {
		f.Add(p, dfaLines[i%len(dfaLines)])
	}
	f.Fuzz(func(t *testing.T, p, line string) {
		re, err := regexp.Compile(p)
		if err != nil || strings.Contains(line, "\n") {
			return
		}
		d := newLineDFA(p)
		if d == nil {
			t.Fatalf("%q compiles but has no DFA", p)
		}
		if got, want := d.matchLine([]byte(line)), re.MatchString(line); got != want {
			t.Fatalf("%q on %q: DFA %v, regexp %v", p, line, got, want)
		}
	})
}

// TestScanEachWay: scan finds the lines regexp finds, with their numbers
// and text (no "\r"), by each way it has of finding candidates — a
// literal, a required literal (checked by the DFA or by regexp), a
// case-folded literal (and the Kelvin-sign region that bypasses it), the
// line DFA, and without it the (?m) regexp or every line — and keeps at
// most keep of them while counting up to max.
func TestScanEachWay(t *testing.T) {
	// Some lines hold a pattern's literal and do not match it; a match
	// of the whole region may run across lines.
	region := []byte("ErrX here\r\nfunc (r *Reader) Read(p []byte)\nnothing\n\tAB12 x\nkey KEY \u212aey\nf() Read; Hereafter\nitem 7\nthe end ErrX")
	for _, tt := range []struct{ way, pattern string }{
		{"literal", `ErrX`},
		{"required literal", `\(\w+ \*\w+\) Read`},
		{"folded literal", `(?i)here\b`},
		{"folded literal, Kelvin sign in the region", `(?i)key\b`},
		{"no literal", `\b[A-Z]{2,}[0-9]+\b`}, // the line DFA, or without it the (?m) regexp
		{"no literal", `[0-9]\s+[a-z]+`},      // (?m): a match across lines is no line's
		{"text anchors", `\A[a-z]+\z`},        // the line DFA, or without it regexp on every line
	} {
		m, err := newMatcher(tt.pattern)
		if err != nil || scanWay(m) != tt.way {
			t.Fatalf("%s: %q is searched as %s (%v)", tt.way, tt.pattern, scanWay(m), err)
		}
		var want []string
		for i, l := range strings.Split(string(region), "\n") {
			if l = strings.TrimSuffix(l, "\r"); m.re.MatchString(l) {
				want = append(want, "f:"+strconv.Itoa(10+i+1)+":"+l)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: %q matches nothing in the region", tt.way, tt.pattern)
		}
		for _, dfa := range []bool{true, false} {
			s := newSearcher(m, len(want))
			if !dfa {
				s.dfa = nil
			}
			if got, n := scanned(s, region, 100); n != len(want) || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s (dfa %v): %d %q, want %q", tt.way, dfa, n, got, want)
			}
			// One kept, all counted; at most max counted.
			s.keep = 1
			if got, n := scanned(s, region, 100); n != len(want) || len(got) != 1 {
				t.Errorf("%s: keep 1 kept %d and counted %d", tt.way, len(got), n)
			}
			if _, n := scanned(s, region, 1); n != 1 {
				t.Errorf("%s: max 1 counted %d", tt.way, n)
			}
		}
	}
}

// scanWay names the way scan finds the candidate lines of m.
func scanWay(m *matcher) string {
	switch {
	case m.lit != nil:
		return "literal"
	case m.fold != nil && m.foldUnsafe:
		return "folded literal, Kelvin sign in the region"
	case m.fold != nil:
		return "folded literal"
	case m.req != nil:
		return "required literal"
	case m.reM != nil:
		return "no literal"
	}
	return "text anchors"
}

// scanned is what scan finds in region, read as a file "f" from its line
// 11: the kept matches as "line:text", and the count.
func scanned(s *searcher, region []byte, max int) ([]string, int) {
	out, n := s.scan(region, "f", 10, max, nil)
	var got []string
	for _, g := range out {
		got = append(got, g.file+":"+strconv.Itoa(g.line)+":"+g.text)
	}
	return got, n
}

func TestLineAt(t *testing.T) {
	region := []byte("ab\ncd\n\nef")
	for _, tt := range []struct{ i, ls, le int }{{0, 0, 2}, {1, 0, 2}, {2, 0, 2}, {3, 3, 5}, {6, 6, 6}, {7, 7, 9}, {8, 7, 9}} {
		if ls, le := lineAt(region, tt.i); ls != tt.ls || le != tt.le {
			t.Errorf("lineAt(%d) = %d, %d; want %d, %d", tt.i, ls, le, tt.ls, tt.le)
		}
	}
}
