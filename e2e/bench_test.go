package e2e

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/chatgen"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// BenchmarkCategorize10k measures one <C-]> categorize of a 10,000-line
// conversation with 200 tool calls (the last response's calls unresolved),
// timed inside Neovim with vim.loop.hrtime around the key's function — the
// time a user waits — and, in the same run, one full nvim_buf_get_lines of
// that buffer from the host's side of the channel for comparison.
func BenchmarkCategorize10k(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Host: hostBin, Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Open("big.chat", chat); err != nil {
				b.Fatal(err)
			}
			// Warm up: start the host and parse once.
			if err := s.Lua(nil, `require("flemma.host").ensure(require("flemma").config())`); err != nil {
				b.Fatal(err)
			}
			const code = `
				local buf = vim.api.nvim_get_current_buf()
				local lines = ...
				vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
				local t0 = vim.loop.hrtime()
				require("flemma").cycle(buf)
				local t1 = vim.loop.hrtime()
				local ok = vim.api.nvim_buf_line_count(buf) > #lines
				return { ns = t1 - t0, ok = ok }`
			lines := strings.Split(strings.TrimSuffix(chat, "\n"), "\n")
			var samples []time.Duration
			b.ResetTimer()
			for b.Loop() {
				var res struct {
					Ns int64 `msgpack:"ns"`
					OK bool  `msgpack:"ok"`
				}
				if err := s.Lua(&res, code, lines); err != nil {
					b.Fatal(err)
				}
				if !res.OK {
					b.Fatalf("categorize inserted nothing; messages: %s", s.Messages())
				}
				samples = append(samples, time.Duration(res.Ns))
			}
			b.StopTimer()
			med := median(samples)
			b.ReportMetric(float64(med.Microseconds()), "µs-median/categorize")

			// The comparison: one nvim_buf_get_lines of the same buffer, in
			// Lua and over RPC from another process (what the host pays).
			var getNs []time.Duration
			for i := 0; i < 30; i++ {
				var ns int64
				if err := s.Lua(&ns, `local t0 = vim.loop.hrtime(); local _ = vim.api.nvim_buf_get_lines(0, 0, -1, false); return vim.loop.hrtime() - t0`); err != nil {
					b.Fatal(err)
				}
				getNs = append(getNs, time.Duration(ns))
			}
			var hostGet []time.Duration
			for i := 0; i < 30; i++ {
				t0 := time.Now()
				if _, err := s.Nv.BufferLines(0, 0, -1, false); err != nil {
					b.Fatal(err)
				}
				hostGet = append(hostGet, time.Since(t0))
			}
			b.ReportMetric(float64(median(hostGet).Microseconds()), "µs-median/get_lines-over-rpc")
			if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err == nil {
					fmt.Fprintf(f, "nvim %s: categorize median %s (n=%d); nvim_buf_get_lines over RPC median %s; in-Lua get_lines median %s\n",
						nvimtest.Version(bin), med, len(samples), median(hostGet), median(getNs))
					f.Close()
				}
			}
		})
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
