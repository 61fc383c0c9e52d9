package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// slowLSP is a language server that answers initialize and shutdown at
// once and every other request after delay (the test binary runs it when
// FLEMMA_SLOW_LSP is set): a server busy indexing a large project.
func slowLSP(delay string) {
	d, _ := time.ParseDuration(delay)
	r := bufio.NewReader(os.Stdin)
	var mu sync.Mutex
	write := func(id json.RawMessage, result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		mu.Lock()
		fmt.Fprintf(os.Stdout, "Content-Length: %d\r\n\r\n%s", len(b), b)
		mu.Unlock()
	}
	for {
		n := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			os.Exit(0)
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		switch {
		case msg.Method == "exit":
			os.Exit(0)
		case msg.ID == nil:
		case msg.Method == "initialize":
			write(msg.ID, map[string]any{"capabilities": map[string]any{"textDocumentSync": 1, "definitionProvider": true, "hoverProvider": true, "referencesProvider": true}})
		case msg.Method == "shutdown":
			write(msg.ID, nil)
		default:
			go func(id json.RawMessage) { time.Sleep(d); write(id, []any{}) }(msg.ID)
		}
	}
}

// BenchmarkKeystrokeWhileLSPWaits types in a code buffer while an lsp tool
// call waits on a language server that takes 120 s to answer, and without
// any call, in the same Neovim: each keystroke is one nvim_feedkeys ("x":
// typed and executed before it returns) of "A;<Esc>" in the code buffer,
// timed from the test (the RPC round trip included). The call must not
// make typing slower: flemma's question is asynchronous in Neovim.
func BenchmarkKeystrokeWhileLSPWaits(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, bin := range found {
		for _, mode := range []string{"idle", "lsp-waiting"} {
			b.Run(fmt.Sprintf("nvim-%s/%s", nvimtest.Version(bin), mode), func(b *testing.B) {
				dir := b.TempDir()
				s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: dir,
					Setup: `{ tools = { editor = { timeout = 600 } } }`})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				code := filepath.Join(dir, "code.txt")
				if err := os.WriteFile(code, []byte("hello world\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				// The user's config: the slow server for this buffer.
				if err := s.Lua(nil, `
					local self, code, dir = ...
					vim.cmd("edit " .. vim.fn.fnameescape(code))
					local id = vim.lsp.start_client({ name = "slow", cmd = { self }, cmd_env = { FLEMMA_SLOW_LSP = "120s" }, root_dir = dir })
					vim.lsp.buf_attach_client(0, id)`, self, code, dir); err != nil {
					b.Fatal(err)
				}
				waitFor(b, s, `local c = vim.lsp.get_client_by_id(1); return c ~= nil and c.initialized ~= false and c.server_capabilities ~= nil`)
				if err := s.Nv.Command("split"); err != nil {
					b.Fatal(err)
				}
				if mode == "lsp-waiting" {
					if _, err := s.Open("slow.chat", chatCalls(lspCall("s1", "definition", "code.txt", 1, "hello"))); err != nil {
						b.Fatal(err)
					}
					if err := s.Nv.Command("Flemma trust"); err != nil {
						b.Fatal(err)
					}
					if err := s.Press("<C-]>"); err != nil {
						b.Fatal(err)
					}
					waitFor(b, s, `return require("flemma.editor")._stats().pending == 1`)
				}
				if err := s.Nv.Command("wincmd j"); err != nil { // the code window
					b.Fatal(err)
				}
				keys, _ := s.Nv.ReplaceTermcodes("A;<Esc>", true, true, true)
				var samples []time.Duration
				for b.Loop() {
					t0 := time.Now()
					if err := s.Nv.FeedKeys(keys, "x", false); err != nil {
						b.Fatal(err)
					}
					samples = append(samples, time.Since(t0))
				}
				if mode == "lsp-waiting" {
					var pending int
					_ = s.Lua(&pending, `return require("flemma.editor")._stats().pending`)
					if pending != 1 {
						b.Fatalf("the lsp call no longer waits (%d questions pending)", pending)
					}
				}
				sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
				p50, p90 := samples[len(samples)/2], samples[len(samples)*9/10]
				b.ReportMetric(float64(p50.Microseconds()), "µs-p50")
				b.ReportMetric(float64(p90.Microseconds()), "µs-p90")
				if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
					if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						fmt.Fprintf(f, "nvim %s keystroke %s: p50 %s p90 %s (n=%d)\n", nvimtest.Version(bin), mode, p50, p90, len(samples))
						f.Close()
					}
				}
			})
		}
	}
}

func waitFor(b *testing.B, s *nvimtest.Session, lua string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ok bool
		if err := s.Lua(&ok, lua); err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("never: %s\n%s", lua, s.Messages())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The lsp tool answers within its bound when the server does not: the
// question ends after tools.editor.timeout with a message the model reads,
// and the editor keeps nothing of it.
func TestLSPBoundedOnSlowServer(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	eachNvim(t, `{ tools = { editor = { timeout = 1 } } }`, func(t *testing.T, s *nvimtest.Session) {
		code := filepath.Join(s.Dir, "code.txt")
		if err := os.WriteFile(code, []byte("hello world\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Lua(nil, `
			local self, code, dir = ...
			vim.cmd("edit " .. vim.fn.fnameescape(code))
			local id = vim.lsp.start_client({ name = "slow", cmd = { self }, cmd_env = { FLEMMA_SLOW_LSP = "120s" }, root_dir = dir })
			vim.lsp.buf_attach_client(0, id)`, self, code, s.Dir); err != nil {
			t.Fatal(err)
		}
		waitLua(t, s, `(function() local c = vim.lsp.get_client_by_id(1); return c ~= nil and c.server_capabilities ~= nil end)()`, "the server started")
		if err := s.Nv.Command("split"); err != nil {
			t.Fatal(err)
		}
		mustOpen(t, s, "slow.chat", chatCalls(lspCall("s1", "definition", "code.txt", 1, "hello")))
		press(t, s, "<C-]>")
		body, isErr := waitResultLong(t, s, "s1")
		if !isErr || !strings.Contains(body, "The editor gave no answer in time: no answer within 1.0 s") {
			t.Errorf("result = %q (error %v)", body, isErr)
		}
		waitLua(t, s, `require("flemma.editor")._stats().pending == 0 and require("flemma.editor")._stats().temp == 0`, "the question is forgotten")
	})
}
