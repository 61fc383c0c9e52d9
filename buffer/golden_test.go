package buffer

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under ../testdata/parser")

// TestGolden parses every ../testdata/parser/*.chat file and compares a
// readable dump of the Document with the .golden file next to it.
// Run `go test ./buffer -run TestGolden -update` to rewrite them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/parser/*.chat")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got := dump(Parse(readLines(t, path)))
			golden := strings.TrimSuffix(path, ".chat") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Parse(%s) differs from %s (run with -update if the change is intended)\n%s",
					path, golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff is a small diff for test failures: the lines that differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("-" + wl + "\n+" + gl + "\n")
		}
	}
	return b.String()
}

// TestRoundTrip checks Render against every testdata file: Render∘Parse is
// idempotent, keeps the line count, and gives a well-formed file (no
// diagnostics, no CR) back unchanged.
func TestRoundTrip(t *testing.T) {
	for _, path := range chatFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			lines := readLines(t, path)
			d := Parse(lines)
			once := Render(d)
			if len(once) != len(lines) {
				t.Fatalf("Render has %d lines, input %d", len(once), len(lines))
			}
			twice := Render(Parse(once))
			if !slices.Equal(once, twice) {
				t.Errorf("Render(Parse(Render(Parse(x)))) != Render(Parse(x)):\n%s",
					lineDiff(strings.Join(once, "\n"), strings.Join(twice, "\n")))
			}
			if sketch(Parse(once)) != sketch(d) && len(d.Diagnostics) == 0 {
				t.Errorf("re-parsed document differs:\n%s", lineDiff(sketch(d), sketch(Parse(once))))
			}
			wellFormed := len(d.Diagnostics) == 0 && !strings.Contains(strings.Join(lines, "\n"), "\r")
			if wellFormed && !slices.Equal(once, lines) {
				t.Errorf("well-formed file does not render back to itself:\n%s",
					lineDiff(strings.Join(lines, "\n"), strings.Join(once, "\n")))
			}
		})
	}
}
