package builtin

import (
	"context"
	"strings"
	"testing"
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
