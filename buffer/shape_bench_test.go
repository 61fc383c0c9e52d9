package buffer

import (
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/chatgen"
)

// BenchmarkParseShapes parses the two generated 10,000-line conversations
// of internal/chatgen: one dominated by tool calls and results, one by
// prose (internal/luaref compares the same with the Lua Flemma's parser).
func BenchmarkParseShapes(b *testing.B) {
	for _, shape := range []chatgen.Shape{chatgen.ToolHeavy, chatgen.ProseHeavy} {
		b.Run(string(shape), func(b *testing.B) {
			lines := strings.Split(strings.TrimSuffix(chatgen.Generate(shape, 10000), "\n"), "\n")
			if d := Parse(lines); len(d.Diagnostics) != 0 {
				b.Fatal(d.Diagnostics)
			}
			b.SetBytes(size(lines))
			b.ReportAllocs()
			for b.Loop() {
				Parse(lines)
			}
		})
	}
}
