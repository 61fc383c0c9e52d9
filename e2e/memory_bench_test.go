package e2e

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/chatgen"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// procStatusKB reads a "Vm…:  N kB" field of /proc/<pid>/status.
func procStatusKB(tb testing.TB, pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkHostRSS is the memory of the real host process (bin/flemma-host,
// started by the plugin as a user's Neovim starts it) after it started and
// answered one <C-]> categorize of the 10,000-line chatgen conversation
// (200 calls, the last response's 4 unresolved): VmRSS and its peak VmHWM
// from /proc/<pid>/status, in MB, and VmRSS's two parts: anon-MB (the
// memory the host allocated: Go heap, stacks) and file-MB (pages of the
// executable mapped in; the kernel maps them around each page touched, so
// this follows the size of the binary). Each iteration is a new Neovim and
// a new host.
func BenchmarkHostRSS(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			var rss, hwm, anon, file float64
			n := 0
			for b.Loop() {
				s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Open("big.chat", chat); err != nil {
					s.Close()
					b.Fatal(err)
				}
				var pid int
				err = s.Lua(&pid, `
					local buf = vim.api.nvim_get_current_buf()
					local n = vim.api.nvim_buf_line_count(buf)
					require("flemma").cycle(buf)
					vim.wait(20000, function() return require("flemma.host")._pending() == 0 end, 1)
					assert(vim.api.nvim_buf_line_count(buf) > n, "categorize inserted nothing")
					return vim.fn.jobpid(require("flemma.host")._chan())`)
				if err != nil {
					s.Close()
					b.Fatalf("%v; messages: %s", err, s.Messages())
				}
				rss += procStatusKB(b, pid, "VmRSS") / 1024
				hwm += procStatusKB(b, pid, "VmHWM") / 1024
				anon += procStatusKB(b, pid, "RssAnon") / 1024
				file += procStatusKB(b, pid, "RssFile") / 1024
				n++
				s.Close()
			}
			b.ReportMetric(rss/float64(n), "rss-MB")
			b.ReportMetric(hwm/float64(n), "peak-rss-MB")
			b.ReportMetric(anon/float64(n), "anon-MB")
			b.ReportMetric(file/float64(n), "file-MB")
		})
	}
}
