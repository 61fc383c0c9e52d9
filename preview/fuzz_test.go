package preview

import (
	"encoding/json"
	"testing"
)

// FuzzFormat feeds JSON inputs (as the model would send them) and widths.
func FuzzFormat(f *testing.F) {
	for _, files := range goldenFiles {
		for _, c := range files {
			if c.json != "" {
				f.Add(c.tool, c.json, 20, "", false)
			}
		}
	}
	f.Add("bash", `{"command":"a\u0301\u0301\u0301b"}`, 3, "$", true)
	f.Fuzz(func(t *testing.T, tool, input string, width int, eol string, wide bool) {
		var in map[string]any
		if json.Unmarshal([]byte(input), &in) != nil {
			return
		}
		width = width % 200
		opts := Options{EOL: eol, AmbiguousWide: wide}
		got := Format(tool, in, width, opts)
		if width <= 0 {
			if got != "" {
				t.Fatalf("Format(%q, %s, %d) = %q, want empty", tool, input, width, got)
			}
			return
		}
		checkLine(t, "fuzz", got, width, wide)
		if whole := format(tool, in, width, opts, 0); whole != got {
			t.Fatalf("Format(%q, %s, %d) = %q, but the whole line gives %q", tool, input, width, got, whole)
		}
	})
}
