package builtin

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
)

var benchWrite = Write()

// writeTool runs write as the executor does (JSON input decoded).
func writeTool(call tools.Call, content string) (tools.Output, error) {
	raw, _ := json.Marshal(map[string]any{"path": "f.txt", "content": content, "label": "x"})
	return benchWrite.Run(context.Background(), call, raw)
}

// benchFiles is a call whose backups go to a directory of the benchmark
// (off with backups false), and a 4 KB file the model has read.
func benchFiles(b *testing.B, backups bool) (tools.Call, string) {
	b.Helper()
	dir := b.TempDir()
	call := benchCall(b, dir)
	call.Env.BackupDir = filepath.Join(b.TempDir(), "backups")
	if !backups {
		call.Env.BackupMaxBytes = -1
	}
	content := "MARKER-0\n" + strings.Repeat("line of source code, 40 bytes long ....\n", 100)
	if _, err := runWrite(context.Background(), call, WriteInput{Path: "f.txt", Content: content}); err != nil {
		b.Fatal(err)
	}
	return call, content
}

// BenchmarkWrite is the cost of one write replacing a 4 KB file the model
// read: the stale-file check, the backup of the previous content (new each
// time, as when a model rewrites a file: a blob written and fsync'd, its
// name fsync'd in the directory), and the atomic write.
func BenchmarkWrite(b *testing.B) {
	for _, backups := range []bool{true, false} {
		name := "backups"
		if !backups {
			name = "no-backups"
		}
		b.Run(name, func(b *testing.B) {
			call, content := benchFiles(b, backups)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := writeTool(call, content+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEdit is the cost of one edit of a 4 KB file (each a new
// content, so each backup is new).
func BenchmarkEdit(b *testing.B) {
	for _, backups := range []bool{true, false} {
		name := "backups"
		if !backups {
			name = "no-backups"
		}
		b.Run(name, func(b *testing.B) {
			call, _ := benchFiles(b, backups)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in := EditInput{Path: "f.txt", OldText: "MARKER-" + strconv.Itoa(i), NewText: "MARKER-" + strconv.Itoa(i+1)}
				if _, err := runEdit(context.Background(), call, in); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
