package chatgen

import (
	"strings"
	"testing"
)

func TestGenerateShapes(t *testing.T) {
	for _, s := range []Shape{ToolHeavy, ProseHeavy} {
		text := Generate(s, 10000)
		n := strings.Count(text, "\n")
		if n < 10000 || n > 10200 {
			t.Errorf("%s: %d lines, want about 10,000", s, n)
		}
		if Generate(s, 10000) != text {
			t.Errorf("%s: not deterministic", s)
		}
		t.Logf("%s: %d lines, %d bytes, %d calls", s, n, len(text), strings.Count(text, "**Tool Use:**"))
	}
}
