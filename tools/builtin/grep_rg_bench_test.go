package builtin

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// grepClasses are the pattern classes grep is compared with ripgrep on, as
// a user (or a model) writes them. Each pattern has matches in Go's src/.
var grepClasses = []struct{ name, pattern string }{
	{"literal", `ErrUnexpectedEOF`},
	{"word", `\bReader\b`},
	{"alternation", `ErrNotExist|ErrPermission|ErrClosed`},
	{"regex-literal", `func \(\w+ \*\w+\) Read\w*\(`},
	{"caseless", `(?i)not supported`},
	{"regex-noliteral", `\b[A-Z]{2,}[0-9]+\b`},
}

// grepTree is the tree the grep comparison searches: $FLEMMA_GREP_TREE, or
// src/cmd of the Go installation (the compiler, linker and go command with
// their vendored modules: 4,355 files, 64 MB, every pattern class with
// matches). The whole src/ (11,478 files, 157 MB) gave the same ratios in
// 2.5 times as long (docs/benchmarks.md); make bench-check is meant to
// take about 30 s.
func grepTree(tb testing.TB) string {
	if dir := os.Getenv("FLEMMA_GREP_TREE"); dir != "" {
		return dir
	}
	return filepath.Join(realTree(tb), "cmd")
}

// realTree is $FLEMMA_GREP_TREE, or the src/ of the Go installation (a
// real code tree of ~11,000 files).
func realTree(tb testing.TB) string {
	if dir := os.Getenv("FLEMMA_GREP_TREE"); dir != "" {
		return dir
	}
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("no tree to search: set $FLEMMA_GREP_TREE (go env GOROOT: %v)", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("no tree to search: %v", err)
	}
	return dir
}

// rgCommand is ripgrep with the rules grep follows: .gitignore honoured
// outside a git repository too, hidden and binary files skipped, symlinks
// not followed, ASCII classes (\w, \d, \b) as in Go's regexp; a
// case-insensitive pattern keeps Unicode mode, so that its case folding is
// Go's (simple folding, Kelvin sign and long s included).
func rgCommand(rg, dir, pattern string) *exec.Cmd {
	args := []string{"--no-messages", "--no-require-git", "-n", "--no-heading", "--with-filename", "--null"}
	if !strings.Contains(pattern, "(?i)") {
		args = append(args, "--no-unicode")
	}
	cmd := exec.Command(rg, append(args, "-e", pattern)...)
	cmd.Dir = dir
	return cmd
}

// rgMatches runs ripgrep and returns its matches as "path:line".
func rgMatches(tb testing.TB, rg, dir, pattern string) []string {
	out, err := rgCommand(rg, dir, pattern).Output()
	if err != nil && len(out) > 0 {
		tb.Fatalf("rg %s: %v", pattern, err)
	}
	var set []string
	for _, l := range bytes.Split(out, []byte("\n")) {
		path, rest, ok := bytes.Cut(l, []byte{0})
		if !ok {
			continue
		}
		n, _, _ := bytes.Cut(rest, []byte(":"))
		set = append(set, string(path)+":"+string(n))
	}
	slices.Sort(set)
	return set
}

// grepMatches runs grep's search and returns its matches as "path:line".
func grepMatches(tb testing.TB, dir, pattern string) []string {
	m, err := newMatcher(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	call := benchCall(tb, dir)
	sb, _ := call.Env.SandboxFor(call)
	found, total, limited, _, err := grepSearch(context.Background(), dir, true, sb, call.Env.ExcludeOrDefault(), nil, m, 1<<30, 1<<30)
	if err != nil || limited || total != len(found) {
		tb.Fatalf("grep %s: %v (limited %v, %d of %d kept)", pattern, err, limited, len(found), total)
	}
	set := make([]string, len(found))
	for i, f := range found {
		rel, _ := filepath.Rel(dir, f.file)
		set[i] = rel + ":" + strconv.Itoa(f.line)
	}
	slices.Sort(set)
	return set
}

// sameMatches fails unless grep and ripgrep find the same lines, apart from
// the files the sandbox's deny rules keep from grep (*.pem, *.key, …:
// secrets), which ripgrep does not know about.
func sameMatches(tb testing.TB, rg, dir, pattern string) int {
	call := benchCall(tb, dir)
	sb, _ := call.Env.SandboxFor(call)
	var want []string
	for _, s := range rgMatches(tb, rg, dir, pattern) {
		rel := s[:strings.LastIndexByte(s, ':')]
		if !sb.DeniedEntry(filepath.Join(dir, rel), filepath.Base(rel), false) {
			want = append(want, s)
		}
	}
	got := grepMatches(tb, dir, pattern)
	if !slices.Equal(got, want) {
		var only []string
		for _, s := range got {
			if _, ok := slices.BinarySearch(want, s); !ok && len(only) < 5 {
				only = append(only, "grep only: "+s)
			}
		}
		for _, s := range want {
			if _, ok := slices.BinarySearch(got, s); !ok && len(only) < 10 {
				only = append(only, "rg only: "+s)
			}
		}
		tb.Fatalf("%s: grep finds %d lines, rg %d:\n%s", pattern, len(got), len(want), strings.Join(only, "\n"))
	}
	return len(got)
}

// BenchmarkGrepVsRg searches Go's src/cmd (grepTree) for one pattern of each class with
// grep (the tool, end to end) and with ripgrep, after checking that both
// find the same lines. ns/op is grep's. grep/rg is grep's time over rg's:
// the two alternate grepRounds times (rg as a process, as a user runs it)
// and the median of the rounds' ratios is reported, so the figure reads
// the same on a busy machine.
func BenchmarkGrepVsRg(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg is not installed (scripts/provision-tools.sh installs it)")
	}
	dir := grepTree(b)
	call := benchCall(b, dir)
	grep := func(pattern string) {
		out, err := runGrep(context.Background(), call, GrepInput{Pattern: pattern, Limit: ptr(1e9)})
		if err != nil || !strings.Contains(out.Text, "matches]") {
			b.Fatalf("grep %s: %v %q", pattern, err, clip(out.Text))
		}
	}
	for _, c := range grepClasses {
		b.Run(c.name, func(b *testing.B) {
			n := sameMatches(b, rg, dir, c.pattern) // and warms the page cache
			b.ReportAllocs()
			for b.Loop() {
				grep(c.pattern)
			}
			var ratios []float64
			for range grepRounds {
				t := time.Now()
				grep(c.pattern)
				g := time.Since(t)
				t = time.Now()
				if err := rgCommand(rg, dir, c.pattern).Run(); err != nil {
					b.Fatal(err)
				}
				ratios = append(ratios, float64(g)/float64(time.Since(t)))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "grep/rg")
			b.ReportMetric(float64(n), "lines")
		})
	}
}

const grepRounds = 5

// TestGrepFindsWhatRipgrepFinds checks the benchmark's patterns on a part of
// the tree (net/, 5 MB, where each has matches); the benchmark checks the
// whole tree before it measures.
func TestGrepFindsWhatRipgrepFinds(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("rg is not installed (scripts/provision-tools.sh installs it)")
	}
	dir := filepath.Join(realTree(t), "net")
	for _, c := range grepClasses {
		t.Run(c.name, func(t *testing.T) {
			if n := sameMatches(t, rg, dir, c.pattern); n == 0 {
				t.Fatalf("%s matches nothing in %s", c.pattern, dir)
			}
		})
	}
}
