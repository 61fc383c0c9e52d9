package builtin

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// benchTree writes ~50,000 files (2,500 directories of 20 files, ~1.5 KB
// of code-like text each, 75 MB) under dir. A few files hold the needles
// the benchmarks search for.
func benchTree(b *testing.B, dir string) {
	b.Helper()
	rng := rand.New(rand.NewSource(1))
	words := []string{"func", "return", "value", "if", "err", "nil", "for", "range", "x", "data", "(", ")", "{", "}", ":=", "len", "append", "ctx", "string", "int", "map", "TODO"}
	var buf strings.Builder
	n := 0
	for a := 0; a < 50; a++ {
		for c := 0; c < 50; c++ {
			d := filepath.Join(dir, fmt.Sprintf("pkg%02d", a), fmt.Sprintf("mod%02d", c))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := 0; f < 20; f++ {
				buf.Reset()
				for l := 0; l < 25+rng.Intn(25); l++ {
					buf.WriteByte('\t')
					for w := 0; w < 3+rng.Intn(8); w++ {
						buf.WriteString(words[rng.Intn(len(words))])
						buf.WriteByte(' ')
					}
					buf.WriteByte('\n')
				}
				if n%2500 == 7 {
					buf.WriteString("\tneedle_7731 := fn_42_handler(ctx)\n")
				}
				n++
				if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%02d.go", f)), []byte(buf.String()), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

func benchCall(b testing.TB, dir string) tools.Call {
	sb, err := sandbox.New(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNCwd}}, dir, "")
	if err != nil {
		b.Fatal(err)
	}
	return tools.Call{ID: "bench", Cwd: dir, Env: &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), Exclude: []string{}, Truncate: tools.Limits{MaxLines: 1 << 30, MaxBytes: 1 << 30}}}
}

// BenchmarkGrep compares grep with a ripgrep subprocess on the same tree in
// the same run: a literal, a regexp with a required literal, and a
// case-insensitive regexp with no literal to narrow it.
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	benchTree(b, dir)
	call := benchCall(b, dir)
	rg, rgErr := exec.LookPath("rg")
	for _, p := range []struct{ name, pattern string }{
		{"literal", "needle_7731"},
		{"regex", `fn_\d+_handler\(`},
		{"regex-caseless", `(?i)todo\s+nil\s+\w+\s+\(`},
		{"regex-noliteral", `\b[A-Z]{4}\s+[a-z]{3}\s+\d`},
	} {
		b.Run(p.name+"/flemma", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := runGrep(context.Background(), call, GrepInput{Pattern: p.pattern, Limit: ptr(1e6)})
				if err != nil || !strings.Contains(out.Text, "matches]") && !strings.Contains(out.Text, "No matches") {
					b.Fatalf("grep: %v %q", err, out.Text)
				}
			}
		})
		b.Run(p.name+"/rg", func(b *testing.B) {
			if rgErr != nil {
				b.Skip("rg not installed")
			}
			b.ReportAllocs()
			for b.Loop() {
				cmd := exec.Command(rg, "--no-messages", "-n", "-e", p.pattern, ".")
				cmd.Dir = dir
				if out, err := cmd.Output(); err != nil && len(out) > 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFind compares find with find(1) and fd on the same tree.
func BenchmarkFind(b *testing.B) {
	dir := b.TempDir()
	benchTree(b, dir)
	call := benchCall(b, dir)
	b.Run("flemma", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := runFind(context.Background(), call, FindInput{Pattern: "file07.go", Limit: ptr(1e6)})
			if err != nil || strings.Count(out.Text, "\n") != 2499 {
				b.Fatalf("find: %v (%d lines)", err, strings.Count(out.Text, "\n"))
			}
		}
	})
	b.Run("find", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := exec.Command("find", dir, "-type", "f", "-name", "file07.go").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, fd := range []string{"fdfind", "fd"} {
		b.Run(fd, func(b *testing.B) {
			path, err := exec.LookPath(fd)
			if err != nil {
				b.Skipf("%s not installed", fd)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := exec.Command(path, "--type", "f", "--glob", "file07.go", dir).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead10MB reads the head of a 10 MB file: 2000 lines kept, every
// line counted, the whole content hashed for stale-file protection.
func BenchmarkRead10MB(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; sb.Len() < 10<<20; i++ {
		fmt.Fprintf(&sb, "line %07d: the quick brown fox jumps over the lazy dog, again and again and again\n", i)
	}
	p := filepath.Join(dir, "big.txt")
	os.WriteFile(p, []byte(sb.String()), 0o644)
	call := benchCall(b, dir)
	call.Env.Truncate = tools.Limits{} // the defaults: 2000 lines, 50 KB
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		out, err := runRead(context.Background(), call, ReadInput{Path: "big.txt"})
		if err != nil || !strings.Contains(out.Text, "[Showing lines 1-") {
			b.Fatalf("read: %v %q", err, clip(out.Text))
		}
	}
}
