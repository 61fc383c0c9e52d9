package luaref

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/internal/chatgen"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// nvim010 returns the Neovim 0.10 binary (LuaJIT 2.1), the one a user of the
// Lua Flemma runs, or skips.
func nvim010(tb testing.TB) string {
	found, _ := nvimtest.Neovims()
	for _, bin := range found {
		if strings.HasPrefix(nvimtest.Version(bin), "0.10.") {
			return bin
		}
	}
	tb.Skip("no Neovim 0.10 (run scripts/provision-nvim.sh, or list it in $FLEMMA_NVIM)")
	return ""
}

// chat writes a generated conversation to a file and returns it and its
// lines, as nvim_buf_get_lines would give them.
func chat(tb testing.TB, shape chatgen.Shape) (string, []string) {
	text := chatgen.Generate(shape, 10000)
	path := filepath.Join(tb.TempDir(), string(shape)+".chat")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

func counts(d *buffer.Document) (uses, results int) {
	return len(d.ToolUses()), len(d.ToolResults())
}

// sameReading checks that the Lua parser read the text as the Go parser
// does (same messages, calls and results, no problems), so the two
// timings are of the same work.
func sameReading(tb testing.TB, d *buffer.Document, r Reading) {
	uses, results := counts(d)
	if len(d.Diagnostics) != 0 || r.Errors != 0 || r.Messages != len(d.Messages) || r.ToolUses != uses || r.ToolResults != results {
		tb.Fatalf("the parsers disagree: Go %d messages, %d uses, %d results, diagnostics %v; Lua %+v",
			len(d.Messages), uses, results, d.Diagnostics, r)
	}
}

func start(tb testing.TB, shape chatgen.Shape) (*Parser, []string) {
	dir, err := Dir()
	if err != nil {
		tb.Skip(err)
	}
	bin := nvim010(tb)
	path, lines := chat(tb, shape)
	lua, r, err := Start(bin, dir, path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(lua.Close)
	sameReading(tb, buffer.Parse(lines), r)
	return lua, lines
}

func TestLuaReadsTheGeneratedChatsAsGoDoes(t *testing.T) {
	for _, shape := range []chatgen.Shape{chatgen.ToolHeavy, chatgen.ProseHeavy} {
		t.Run(string(shape), func(t *testing.T) {
			lua, _ := start(t, shape)
			if ns, err := lua.Time(1); err != nil || ns <= 0 {
				t.Fatalf("Time(1) = %v, %v", ns, err)
			}
		})
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// rounds is how many times the comparison alternates between the two
// parsers; each side of a round lasts about roundTime.
const (
	rounds    = 9
	roundTime = 60 * time.Millisecond
)

// BenchmarkParseVsLua parses the same 10,000-line conversation (tool-heavy
// and prose-heavy, from internal/chatgen) with the Go parser (buffer.Parse)
// and with the Lua Flemma's parse_lines in Neovim 0.10 under LuaJIT.
// ns/op is the Go parser's. lua/go is how many times faster it is than the
// Lua parser: after the Go loop, the two alternate in rounds of about 60 ms
// each (the Lua one timed inside Lua with vim.loop.hrtime), and the median
// of the rounds' ratios is reported, so a machine whose speed changes
// during the run weighs on both sides alike.
func BenchmarkParseVsLua(b *testing.B) {
	for _, shape := range []chatgen.Shape{chatgen.ToolHeavy, chatgen.ProseHeavy} {
		b.Run(string(shape), func(b *testing.B) {
			lua, lines := start(b, shape)
			var size int64
			for _, l := range lines {
				size += int64(len(l)) + 1
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				buffer.Parse(lines)
			}
			goNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			luaNs, err := lua.Time(1)
			if err != nil {
				b.Fatal(err)
			}
			nGo := max(1, int(float64(roundTime)/goNs))
			nLua := max(1, int(float64(roundTime)/luaNs))
			var ratios, luaTimes []float64
			for range rounds {
				l, err := lua.Time(nLua)
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				for range nGo {
					buffer.Parse(lines)
				}
				g := float64(time.Since(t).Nanoseconds()) / float64(nGo)
				ratios = append(ratios, l/g)
				luaTimes = append(luaTimes, l)
			}
			b.ReportMetric(median(ratios), "lua/go")
			b.ReportMetric(median(luaTimes)/1e6, "lua-ms/op")
		})
	}
}
