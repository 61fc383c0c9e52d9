//go:build linux

package builtin

import (
	"context"
	"testing"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// BenchmarkBashSandboxed is one trivial command under the default
// sandbox (bubblewrap, approved by a policy), end to end: the wrap, the
// tracking of the roots, the start, the wait.
func BenchmarkBashSandboxed(b *testing.B) {
	if _, ok, why := sandbox.DetectBackend(); !ok {
		b.Skip(why)
	}
	dir := b.TempDir()
	cfg := sandbox.DefaultConfig()
	cfg.Writable = []string{sandbox.URNCwd}
	sb, err := sandbox.New(cfg, dir, "")
	if err != nil {
		b.Fatal(err)
	}
	call := tools.Call{ID: "bench", Cwd: dir, Env: &tools.Env{Sandbox: sb, Reads: tools.NewReadLog(), OutputDir: b.TempDir(), BackupDir: b.TempDir() + "/backups", Protect: true}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := runBash(context.Background(), call, BashInput{Command: "echo hi"})
		if err != nil || out.Text != "hi" {
			b.Fatalf("bash: %v %q", err, out.Text)
		}
	}
}
