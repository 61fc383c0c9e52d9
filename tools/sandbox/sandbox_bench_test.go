//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// wrapBenchTree writes a project of 20,000 files (1,000 directories of 20
// small files, a few .env files and keys among them) under home/project.
func wrapBenchTree(b *testing.B, home string) string {
	b.Helper()
	proj := filepath.Join(home, "project")
	for a := 0; a < 50; a++ {
		for c := 0; c < 20; c++ {
			d := filepath.Join(proj, fmt.Sprintf("pkg%02d", a), fmt.Sprintf("mod%02d", c))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := 0; f < 20; f++ {
				name := fmt.Sprintf("file%02d.go", f)
				if f == 0 && c == 0 {
					name = ".env"
				}
				if err := os.WriteFile(filepath.Join(d, name), []byte("package x\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return proj
}

// BenchmarkWrapCommand is the per-call cost of wrapping a bash command for
// bubblewrap (argv only; bwrap itself is not started) with a 20,000-file
// project inside the home directory as the writable root:
//
//   - full: WrapCommand as bash calls it — the project, the (small) home
//     directory, /tmp of this machine (up to its budget), /proc/net/unix;
//   - project: the scan of the project alone, folder listings cached
//     (the steady state of successive calls);
//   - project-cold: the same with the listing cache emptied first (the
//     first call, or a tree that changed everywhere).
func BenchmarkWrapCommand(b *testing.B) {
	if _, ok, why := DetectBackend(); !ok {
		b.Skip(why)
	}
	home := CanonicalOr(b.TempDir())
	b.Setenv("HOME", home)
	proj := wrapBenchTree(b, home)
	sb, err := New(Config{Enabled: true, Backend: "bwrap", Writable: []string{URNCwd}}, proj, "")
	if err != nil {
		b.Fatal(err)
	}
	// Let the fresh tree's folders leave the racy window of the listing
	// cache, as a project's do between two calls.
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(proj, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chtimes(p, past, past)
		}
		return nil
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := sb.WrapCommand([]string{"bash", "-c", "true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	scan := func(b *testing.B, cold bool) {
		isRoot := map[string]bool{proj: true}
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if cold {
				dirCache.Lock()
				dirCache.m, dirCache.entries = map[string]*cachedDir{}, 0
				dirCache.Unlock()
			}
			p := &maskPlan{seen: map[string]bool{}, temps: []string{"/tmp"}}
			budget := scanRootEntries
			sb.scanTree(p, proj, true, isRoot, &budget, scanRootEntries)
			if p.entries < 20000 || len(p.null) != 50 {
				b.Fatalf("scanned %d entries, hid %d files", p.entries, len(p.null))
			}
		}
	}
	b.Run("project", func(b *testing.B) { scan(b, false) })
	b.Run("project-cold", func(b *testing.B) { scan(b, true) })
}
