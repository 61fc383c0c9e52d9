package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// BenchmarkBash is the cost of one trivial command end to end: start,
// output capture, wait, and the cleanup of its process tree.
func BenchmarkBash(b *testing.B) {
	dir := b.TempDir()
	call := benchCall(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		out, err := runBash(context.Background(), call, BashInput{Command: "echo hi"})
		if err != nil || out.Text != "hi" {
			b.Fatalf("bash: %v %q", err, out.Text)
		}
	}
}

// BenchmarkLs lists a 2,500-directory tree two levels deep.
func BenchmarkLs(b *testing.B) {
	dir := b.TempDir()
	benchTree(b, dir)
	call := benchCall(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		out, err := runLs(context.Background(), call, LsInput{Path: ".", MaxDepth: ptr(3.0), Limit: ptr(1e6)})
		if err != nil || !strings.Contains(out.Text, "entries, depth=3]") {
			b.Fatalf("ls: %v %.200q", err, out.Text)
		}
	}
}

// BenchmarkBashLimits is what the limits of issue 24 #6 cost a command:
// the same trivial command without limits and with the default ones (the
// limit wrapper's exec, the supervisor's count of the tree).
func BenchmarkBashLimits(b *testing.B) {
	for _, bc := range []struct {
		name string
		lim  sandbox.Limits
	}{{"none", sandbox.Limits{}}, {"default", sandbox.DefaultLimits()}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			lim := bc.lim
			sb, err := sandbox.New(sandbox.Config{Enabled: true, Backend: "none", Writable: []string{sandbox.URNCwd}, Limits: &lim}, dir, "")
			if err != nil {
				b.Fatal(err)
			}
			call := tools.Call{ID: "bench", Cwd: dir, Env: &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), OutputDir: b.TempDir()}}
			b.ReportAllocs()
			for b.Loop() {
				out, err := runBash(context.Background(), call, BashInput{Command: "echo hi"})
				if err != nil || out.Text != "hi" {
					b.Fatalf("bash: %v %q", err, out.Text)
				}
			}
		})
	}
}
