package builtin

import (
	"bytes"
	"math/rand"
	"regexp"
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
