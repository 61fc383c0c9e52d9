package builtin

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkGrepScan measures searcher.scan alone — grep's inner loop, no
// file system — on the .go files of Go's src/net (realTree; ~5 MB) read
// into memory and searched in 64 KB regions cut at line ends (as
// searchFile hands them over), for each pattern class of
// BenchmarkGrepVsRg. MB/s is of text scanned; allocs/op are the matches'
// (every match kept).
func BenchmarkGrepScan(b *testing.B) {
	var corpus []byte
	root := filepath.Join(realTree(b), "net")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			if data, err := os.ReadFile(p); err == nil && bytes.IndexByte(data, 0) < 0 {
				corpus = append(corpus, data...)
			}
		}
		return nil
	})
	var regions [][]byte
	for rest := corpus; len(rest) > 0; {
		end := len(rest)
		if end > 64<<10 {
			end = bytes.LastIndexByte(rest[:64<<10], '\n') + 1
		}
		regions = append(regions, rest[:end])
		rest = rest[end:]
	}
	for _, c := range grepClasses {
		b.Run(c.name, func(b *testing.B) {
			m, err := newMatcher(c.pattern)
			if err != nil {
				b.Fatal(err)
			}
			s := newSearcher(m, 1<<30)
			b.SetBytes(int64(len(corpus)))
			b.ReportAllocs()
			found := 0
			for b.Loop() {
				found = 0
				for _, r := range regions {
					_, n := s.scan(r, "f", 0, 1<<30, nil)
					found += n
				}
			}
			if found == 0 {
				b.Fatalf("%s: no match in %s", c.pattern, root)
			}
			b.ReportMetric(float64(found), "lines")
		})
	}
}
