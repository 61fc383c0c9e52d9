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
// that buffer over RPC from another process for comparison.
//
// Two cases: "tail" removes what the previous press inserted, so the buffer
// changes only at its end, as after a model response (the host's mirror then
// needs only the changed lines); "cold" replaces the whole text, so all
// 10,000 lines cross the channel.
func BenchmarkCategorize10k(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	lines := strings.Split(strings.TrimSuffix(chat, "\n"), "\n")
	const code = `
		local buf = vim.api.nvim_get_current_buf()
		local lines, cold = ...
		if cold then
			vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
		else
			vim.api.nvim_buf_set_lines(buf, #lines, -1, false, {})
		end
		local t0 = vim.loop.hrtime()
		require("flemma").cycle(buf)
		local t1 = vim.loop.hrtime()
		return { ns = t1 - t0, ok = vim.api.nvim_buf_line_count(buf) > #lines }`
	for _, bin := range found {
		for _, mode := range []string{"tail", "cold"} {
			b.Run(fmt.Sprintf("nvim-%s/%s", nvimtest.Version(bin), mode), func(b *testing.B) {
				s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Host: hostBin, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if _, err := s.Open("big.chat", chat); err != nil {
					b.Fatal(err)
				}
				var samples []time.Duration
				for b.Loop() {
					var res struct {
						Ns int64 `msgpack:"ns"`
						OK bool  `msgpack:"ok"`
					}
					if err := s.Lua(&res, code, lines, mode == "cold"); err != nil {
						b.Fatal(err)
					}
					if !res.OK {
						b.Fatalf("categorize inserted nothing; messages: %s", s.Messages())
					}
					samples = append(samples, time.Duration(res.Ns))
				}
				b.StopTimer()
				// Drop the first press: it starts the host.
				med := median(samples[min(1, len(samples)-1):])
				var rpcGet []time.Duration
				for i := 0; i < 30; i++ {
					t0 := time.Now()
					if _, err := s.Nv.BufferLines(0, 0, -1, false); err != nil {
						b.Fatal(err)
					}
					rpcGet = append(rpcGet, time.Since(t0))
				}
				get := median(rpcGet)
				b.ReportMetric(float64(med.Microseconds()), "µs-median/press")
				b.ReportMetric(float64(get.Microseconds()), "µs-median/get_lines")
				b.ReportMetric(float64(med)/float64(get), "ratio")
				if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
					if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						fmt.Fprintf(f, "nvim %s %s: categorize median %s (n=%d); nvim_buf_get_lines over RPC median %s; ratio %.2f\n",
							nvimtest.Version(bin), mode, med, len(samples)-1, get, float64(med)/float64(get))
						f.Close()
					}
				}
			})
		}
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

// BenchmarkLuaToolOverhead is the cost of one Lua tool call as the host's
// executor sees it (validation, host → Neovim → host, result conversion) for
// a tool that does nothing, next to a Go built-in that does nothing much.
func BenchmarkLuaToolOverhead(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Host: hostBin, Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Lua(nil, `
				require("flemma.tools").register("noop", {
					description = "does nothing",
					input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
					execute = function(input) return { success = true, output = input.text } end,
				})
				require("flemma.host").ensure(require("flemma").config())`); err != nil {
				b.Fatal(err)
			}
			var samples []time.Duration
			for b.Loop() {
				var res struct {
					Ns      int64  `msgpack:"ns"`
					IsError bool   `msgpack:"is_error"`
					Content string `msgpack:"content"`
				}
				if err := s.Lua(&res, `return require("flemma.host").request("flemma.bench_run", 0, "noop", '{"text":"hi"}')`); err != nil {
					b.Fatal(err)
				}
				if res.IsError || res.Content != "hi" {
					b.Fatalf("noop = %+v", res)
				}
				samples = append(samples, time.Duration(res.Ns))
			}
			b.ReportMetric(float64(median(samples).Microseconds()), "µs-median/call")
			if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
				if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintf(f, "nvim %s: Lua tool call median %s (n=%d)\n", nvimtest.Version(bin), median(samples), len(samples))
					f.Close()
				}
			}
		})
	}
}
