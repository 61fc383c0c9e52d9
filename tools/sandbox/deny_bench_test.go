//go:build unix

package sandbox

import (
	"fmt"
	"testing"
)

// BenchmarkDeniedEntry is the per-entry cost of the deny_read check that
// grep, find and ls make for every directory entry they walk (default
// rules, a home directory's project).
func BenchmarkDeniedEntry(b *testing.B) {
	b.Setenv("HOME", "/home/user")
	sb, err := New(Config{Enabled: true, Backend: "none", Writable: []string{}}, "/home/user/src/proj", "")
	if err != nil {
		b.Fatal(err)
	}
	type ent struct {
		abs, name string
		dir       bool
	}
	var ents []ent
	for d := 0; d < 50; d++ {
		for f := 0; f < 20; f++ {
			name := fmt.Sprintf("file%02d.go", f)
			ents = append(ents, ent{fmt.Sprintf("/home/user/src/proj/pkg%02d/%s", d, name), name, false})
		}
		ents = append(ents, ent{fmt.Sprintf("/home/user/src/proj/pkg%02d", d), fmt.Sprintf("pkg%02d", d), true})
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	n := 0
	for b.Loop() {
		for _, e := range ents {
			if sb.DeniedEntry(e.abs, e.name, e.dir) {
				n++
			}
		}
	}
	_ = n
}
