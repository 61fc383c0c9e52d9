package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// preimageTree writes n files of size bytes (100 per folder) under dir.
func preimageTree(b *testing.B, dir string, n, size int) {
	b.Helper()
	body := []byte(strings.Repeat("x", size))
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body[0] = byte(i) // distinct contents
		body[len(body)-1] = byte(i >> 8)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBashPreimages is the per-command cost of keeping the
// pre-images of a sandboxed bash: the "before" snapshot alone (what
// tracking cost already), the first command (files read and stored up to
// the budget, preimageMaxFiles) and a next one once the tree is kept (the
// index spares the reads).
func BenchmarkBashPreimages(b *testing.B) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = -time.Hour // the tree was just written; real files are older
	for _, tc := range []struct {
		name       string
		files, siz int
	}{{"2000x10KB", 2000, 10 << 10}, {"20000x1KB", 20000, 1 << 10}} {
		root := b.TempDir()
		preimageTree(b, root, tc.files, tc.siz)
		roots := []string{root}
		store := b.TempDir()
		b.Run(tc.name+"/snapshot", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snapshotRoots(roots, nil, nil)
			}
		})
		b.Run(tc.name+"/first", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(store, fmt.Sprintf("first%d", i))
				os.RemoveAll(filepath.Join(store, fmt.Sprintf("first%d", i-1)))
				i++
				b.StartTimer()
				pre := preserveFiles(backupConfig{dir: dir, maxBytes: DefaultBackupMaxBytes, maxFile: DefaultBackupMaxFile, maxAge: DefaultBackupMaxAge},
					snapshotRoots(roots, nil, nil))
				if len(pre.blob) == 0 {
					b.Fatal("nothing kept")
				}
			}
		})
		b.Run(tc.name+"/next", func(b *testing.B) {
			cfg := backupConfig{dir: filepath.Join(store, "next"), maxBytes: DefaultBackupMaxBytes, maxFile: DefaultBackupMaxFile, maxAge: DefaultBackupMaxAge}
			// Until the whole tree is kept (preimageMaxFiles per command).
			for range 100 {
				n := preimageReads.Load()
				if preserveFiles(cfg, snapshotRoots(roots, nil, nil)); preimageReads.Load() == n {
					break
				}
			}
			b.ReportAllocs()
			n := preimageReads.Load()
			for b.Loop() {
				preserveFiles(cfg, snapshotRoots(roots, nil, nil))
			}
			b.ReportMetric(float64(preimageReads.Load()-n)/float64(b.N), "reads/op")
		})
	}
}
