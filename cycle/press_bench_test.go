package cycle

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/chatgen"
)

// BenchmarkPress10k is the host's side of one <C-]> categorize of the
// 10,000-line conversation of e2e/BenchmarkCategorize10k (200 calls, the
// last response's 4 unresolved), with the defaults, against the in-memory
// editor: the snapshot, the parses, the approval chain, the plan, the
// extmarks, the write. Each press starts from the unresolved text. With
// -cpuprofile it shows where the host's time of a press goes.
func BenchmarkPress10k(b *testing.B) {
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	lines := strings.Split(strings.TrimSuffix(chat, "\n"), "\n")
	env := newEnv(b, map[string]any{})
	env.ed.load(1, filepath.Join(env.dir, "big.chat"), env.dir, chat)
	env.ed.trust(1)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		env.h.WaitIdle(1)
		env.ed.mu.Lock()
		n := len(env.ed.bufs[1].lines)
		env.ed.bufs[1].modifiable = true
		env.ed.mu.Unlock()
		if err := env.ed.edit(1, len(lines), n); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := env.h.Cycle(1)
		if err != nil {
			b.Fatal(err)
		}
		if res.Phase != "categorize" {
			b.Fatalf("phase %q: %s", res.Phase, res.Message)
		}
	}
}
