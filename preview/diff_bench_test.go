package preview

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDiff5k: the diff of one changed line in a 5,000-line file, as a
// pending edit's preview computes it.
func BenchmarkDiff5k(b *testing.B) {
	var old strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&old, "line %d: some text of a source file\n", i)
	}
	new := strings.Replace(old.String(), "line 2500: some", "line 2500: other", 1)
	for b.Loop() {
		if d := DiffPreview(Diff(old.String(), new, 1), 80, 12, Options{}); len(d) != 5 {
			b.Fatalf("%d lines", len(d))
		}
	}
}
