package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/chatgen"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// BenchmarkCategorize10k measures one <C-]> categorize of a 10,000-line
// conversation with 200 tool calls (the last response's calls unresolved)
// until its placeholders are on the screen: Neovim in its terminal UI under
// a pseudo-terminal (nvimtest.TUI), <C-]> written to the terminal, the time
// until the terminal shows "status=" of a placeholder (the host moves the
// cursor to the first one) and that redraw's output has ended. In the same
// run, one full nvim_buf_get_lines of that buffer over RPC from another
// process, for the ratio (the budget is a ratio: docs/budgets.txt).
//
// Two cases: "tail" removes what the previous press inserted, so the buffer
// changes only at its end, as after a model response (the host's mirror then
// needs only the changed lines); "cold" replaces the whole text, so all
// 10,000 lines cross the channel. The edit before a press, the host's
// preview refresh that follows it (waited for as a state, not a pause) and
// their redraw are done before the press (not timed). Both cases use one
// Neovim and host per version (tail first).
func BenchmarkCategorize10k(b *testing.B) {
	found := benchNeovims(b)
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200, Unresolved: true})
	lines := strings.Split(strings.TrimSuffix(chat, "\n"), "\n")
	for _, bin := range found {
		// One Neovim and host for both cases (their starts are not what is
		// measured): tail, then cold.
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			tui := startTUI(b, bin, "")
			path := tui.Dir + "/big.chat"
			if err := os.WriteFile(path, []byte(chat), 0o644); err != nil {
				b.Fatal(err)
			}
			tuiLua(b, tui, nil, `vim.cmd("edit " .. vim.fn.fnameescape(...))`, path)
			hostUp := false
			reset := func(cold bool) {
				tuiLua(b, tui, nil, `
					local lines, cold = ...
					if cold then
						vim.api.nvim_buf_set_lines(0, 0, -1, false, lines)
					else
						vim.api.nvim_buf_set_lines(0, #lines, -1, false, {})
					end
					-- The last line at the top: the placeholders come into view below it.
					vim.api.nvim_win_set_cursor(0, { #lines, 0 })
					vim.cmd("normal! zt")`, lines, cold)
				// The host refreshes the previews 30 ms after a change
				// (cycle.Refresh): that write is in before the press, and
				// drawn (the terminal quiet after it).
				if hostUp {
					waitPreviews(b, tui)
				}
				if !tui.Settle(10*time.Millisecond, 60*time.Second) {
					b.Fatalf("Neovim did not settle; terminal:\n%s", tui.Screen())
				}
			}
			press := func() time.Duration {
				d, err := tui.Type("\x1d", "status=", settle, 30*time.Second)
				if err != nil {
					var msgs string
					_ = tui.Lua(&msgs, `return vim.api.nvim_exec("messages", true) .. "\n" .. table.concat(vim.api.nvim_buf_get_lines(0, -12, -1, false), "\n")`)
					b.Fatalf("%v\nmessages and the buffer's end:\n%s", err, msgs)
				}
				var n int
				tuiLua(b, tui, &n, `return vim.api.nvim_buf_line_count(0)`)
				if n <= len(lines) {
					b.Fatalf("categorize inserted nothing")
				}
				return d
			}
			// The first press starts the host: not timed.
			reset(false)
			press()
			hostUp = true
			for _, mode := range []string{"tail", "cold"} {
				b.Run(mode, func(b *testing.B) {
					cold := mode == "cold"
					var samples []time.Duration
					for b.Loop() {
						b.StopTimer()
						reset(cold)
						b.StartTimer()
						samples = append(samples, press())
					}
					b.StopTimer()
					reset(cold)
					var rpcGet []time.Duration
					for i := 0; i < 30; i++ {
						t0 := time.Now()
						if _, err := tui.Nv.BufferLines(0, 0, -1, false); err != nil {
							b.Fatal(err)
						}
						rpcGet = append(rpcGet, time.Since(t0))
					}
					med, get := median(samples), median(rpcGet)
					b.ReportMetric(ms(med), "ms-median/press")
					b.ReportMetric(ms(get), "ms-median/get_lines")
					b.ReportMetric(float64(med)/float64(get), "ratio")
					if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
						if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
							fmt.Fprintf(f, "nvim %s %s: categorize on screen median %s (n=%d); nvim_buf_get_lines over RPC median %s; ratio %.2f\n",
								nvimtest.Version(bin), mode, med, len(samples), get, float64(med)/float64(get))
							f.Close()
						}
					}
				})
			}
		})
	}
}

// waitPreviews waits until the host has written the previews of the current
// buffer's text (its refresh after a change: flemma.buf records the
// changedtick of a write that carried them).
func waitPreviews(b *testing.B, tui *nvimtest.TUI) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done bool
		tuiLua(b, tui, &done, `return require("flemma.state").buffer(vim.api.nvim_get_current_buf()).marks_tick == vim.api.nvim_buf_get_changedtick(0)`)
		if done {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the host did not refresh the previews in 30 s; terminal:\n%s", tui.Screen())
		}
		time.Sleep(2 * time.Millisecond)
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
	// flemma.bench_run is served only by a host built for benchmarks.
	host, err := nvimtest.BuildBenchHost(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir(), Setup: fmt.Sprintf("{ host = { cmd = %q } }", host)})
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

// BenchmarkStream2000 measures a 2,000-token response written into the
// buffer: wall time from the key press to the final text (seen from Lua,
// polling at 1 ms) and the number of buffer updates the host made; the
// server sends the tokens as fast as it can.
func BenchmarkStream2000(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	var words []string
	for i := 0; i < 2000; i++ {
		words = append(words, fmt.Sprintf("tok%d", i))
	}
	for _, pace := range []time.Duration{0, time.Millisecond} {
		f := &fakeAnthropic{turns: []string{sse(strings.Join(words, " "))}, slow: pace}
		srv := httptest.NewServer(f)
		defer srv.Close()
		mode := "fast"
		if pace > 0 {
			mode = "paced-1ms"
		}
		for _, bin := range found {
			benchStream(b, bin, mode, srv.URL)
		}
	}
}

func benchStream(b *testing.B, bin, mode, url string) {
	{
		b.Run("nvim-"+nvimtest.Version(bin)+"/"+mode, func(b *testing.B) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir(), Setup: sendSetup(url, ""), Env: []string{"ANTHROPIC_API_KEY=test-key"}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Open("s.chat", question); err != nil {
				b.Fatal(err)
			}
			const code = `
				local buf, q = vim.api.nvim_get_current_buf(), ...
				vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(q, "\n", { plain = true }))
				local t0 = vim.loop.hrtime()
				require("flemma").cycle(buf)
				local ok = vim.wait(20000, function()
					local l = vim.api.nvim_buf_get_lines(buf, -3, -1, false) -- the last two lines
					return l[1] == "@You:" and l[2] == ""
				end, 1)
				return { ns = vim.loop.hrtime() - t0, ok = ok,
					flushes = require("flemma.host").request("flemma.status", buf).last_flushes }`
			var walls []time.Duration
			var updates []int
			for b.Loop() {
				var res struct {
					Ns      int64 `msgpack:"ns"`
					OK      bool  `msgpack:"ok"`
					Flushes int   `msgpack:"flushes"`
				}
				if err := s.Lua(&res, code, strings.TrimSuffix(question, "\n")); err != nil {
					b.Fatal(err)
				}
				if !res.OK {
					b.Fatalf("the response did not finish; messages: %s", s.Messages())
				}
				walls = append(walls, time.Duration(res.Ns))
				updates = append(updates, res.Flushes)
			}
			sort.Ints(updates)
			b.ReportMetric(float64(median(walls).Microseconds()), "µs-median/response")
			b.ReportMetric(float64(updates[len(updates)/2]), "buffer-updates")
			if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
				if fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintf(fh, "nvim %s %s: 2,000-token stream median %s, %d buffer updates (n=%d)\n", nvimtest.Version(bin), mode, median(walls), updates[len(updates)/2], len(walls))
					fh.Close()
				}
			}
		})
	}
}

// BenchmarkResultToRequest measures, on autopilot, the time from the host
// writing the last tool result to the next request reaching the (local)
// server: categorize is done, so this is re-reading the buffer, building the
// request and posting it. Both timestamps use the same machine clock.
func BenchmarkResultToRequest(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	f := &fakeAnthropic{turns: []string{
		sse("Computing.", [3]string{"toolu_r1", "calculator", `{"expression": "6*7", "label": null}`}),
		sse("42."),
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir(),
				Setup: sendSetup(srv.URL, `, tools = { auto_approve = { "calculator" } }`), Env: []string{"ANTHROPIC_API_KEY=test-key"}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Open("r.chat", question); err != nil {
				b.Fatal(err)
			}
			var gaps []time.Duration
			for i := 0; b.Loop(); i++ {
				f.mu.Lock()
				f.bodies, f.times = nil, nil
				// A new call id each time: a call id the journal has seen
				// run is never run again.
				f.turns[0] = sse("Computing.", [3]string{fmt.Sprintf("toolu_r%d", i), "calculator", `{"expression": "6*7", "label": null}`})
				f.mu.Unlock()
				var res struct {
					OK   bool  `msgpack:"ok"`
					Last int64 `msgpack:"last"`
				}
				if err := s.Lua(&res, `
					local buf, q = vim.api.nvim_get_current_buf(), ...
					-- The previous loop's host work ends just after its last write:
					-- wait until it is idle (its answers in, nothing busy). Not timed.
					local host = require("flemma.host")
					vim.wait(5000, function()
						local st = host._pending() == 0 and host.request("flemma.status", buf)
						return st and not st.busy
					end, 1)
					vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(q, "\n", { plain = true }))
					require("flemma").cycle(buf)
					local ok = vim.wait(20000, function()
						local l = vim.api.nvim_buf_get_lines(buf, -5, -1, false) -- the last four lines
						return l[1] == "42." and l[3] == "@You:"
					end, 1)
					return { ok = ok, last = require("flemma.host").request("flemma.status", buf).last_result_unix_ns }`,
					strings.TrimSuffix(question, "\n")); err != nil {
					b.Fatal(err)
				}
				f.mu.Lock()
				times := append([]time.Time(nil), f.times...)
				f.mu.Unlock()
				if !res.OK || len(times) != 2 || res.Last == 0 {
					b.Fatalf("two-turn loop did not complete (%d requests); messages: %s", len(times), s.Messages())
				}
				gaps = append(gaps, times[1].Sub(time.Unix(0, res.Last)))
			}
			b.ReportMetric(float64(median(gaps).Microseconds()), "µs-median/result-to-request")
			if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
				if fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintf(fh, "nvim %s: last tool result -> request at the server median %s (n=%d)\n", nvimtest.Version(bin), median(gaps), len(gaps))
					fh.Close()
				}
			}
		})
	}
}

// BenchmarkChatBuffer10k measures what folding and highlighting cost in the
// 10,000-line conversation of internal/chatgen, inside Neovim
// (vim.loop.hrtime), syntax on, as a user has it:
//   - scan: flemma.outline.scan of all lines (what 'foldexpr' does once per
//     change of the buffer; every other line is a table lookup);
//   - refold: `zx`, every fold computed again (opening the buffer);
//   - edit: one line changed in the middle (a keystroke), folds updated,
//     with folding on and off (foldmethod=manual) for comparison;
//   - syntax-end: the syntax stack of the last line after the syntax state
//     was dropped (a jump to the end of a freshly opened buffer).
func BenchmarkChatBuffer10k(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	chat := chatgen.Conversation(chatgen.Options{Lines: 10000, Calls: 200})
	cases := map[string]string{
		"scan": `local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
			local t0 = vim.loop.hrtime(); require("flemma.outline").scan(lines); return vim.loop.hrtime() - t0`,
		"refold": `local t0 = vim.loop.hrtime(); vim.cmd("normal! zx"); vim.fn.foldclosed(vim.fn.line("$")); return vim.loop.hrtime() - t0`,
		"edit-fold": `local n = math.floor(vim.api.nvim_buf_line_count(0) / 2)
			local t0 = vim.loop.hrtime()
			vim.api.nvim_buf_set_lines(0, n - 1, n, false, { vim.api.nvim_buf_get_lines(0, n - 1, n, false)[1] .. "x" })
			vim.fn.foldlevel(vim.fn.line("$"))
			return vim.loop.hrtime() - t0`,
		"edit-nofold": `local n = math.floor(vim.api.nvim_buf_line_count(0) / 2)
			local t0 = vim.loop.hrtime()
			vim.api.nvim_buf_set_lines(0, n - 1, n, false, { vim.api.nvim_buf_get_lines(0, n - 1, n, false)[1] .. "x" })
			vim.fn.foldlevel(vim.fn.line("$"))
			return vim.loop.hrtime() - t0`,
	}
	for _, bin := range found {
		for _, name := range []string{"scan", "refold", "edit-fold", "edit-nofold", "syntax-end"} {
			b.Run(fmt.Sprintf("nvim-%s/%s", nvimtest.Version(bin), name), func(b *testing.B) {
				s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if err := s.Nv.Command("syntax on"); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Open("big.chat", chat); err != nil {
					b.Fatal(err)
				}
				if name == "edit-nofold" {
					// Set once: setting 'foldmethod' recomputes every fold.
					if err := s.Nv.Command("setlocal foldmethod=manual"); err != nil {
						b.Fatal(err)
					}
				}
				var samples []time.Duration
				for b.Loop() {
					var ns int64
					if name == "syntax-end" {
						// A fresh syntax state: the buffer's syntax loaded again.
						if err := s.Lua(nil, `vim.cmd("syntax clear"); vim.b.current_syntax = nil; vim.bo.syntax = "chat"`); err != nil {
							b.Fatal(err)
						}
						if err := s.Lua(&ns, `local t0 = vim.loop.hrtime(); vim.fn.synstack(vim.fn.line("$"), 1); return vim.loop.hrtime() - t0`); err != nil {
							b.Fatal(err)
						}
					} else if err := s.Lua(&ns, cases[name]); err != nil {
						b.Fatal(err)
					}
					samples = append(samples, time.Duration(ns))
				}
				med := median(samples)
				b.ReportMetric(float64(med.Microseconds()), "µs-median")
				if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
					if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						fmt.Fprintf(f, "nvim %s chat buffer %s: median %s (n=%d)\n", nvimtest.Version(bin), name, med, len(samples))
						f.Close()
					}
				}
			})
		}
	}
}

// BenchmarkDiffPreview5k is the time from a press to a pending edit's diff
// on a 5,000-line file: "preview" is the <C-]> that makes the call pending
// until its placeholder shows the diff lines; "view" is <CR> on the block
// until the side-by-side diff tab is open. Timed inside Neovim; each
// preview press has a new edit (no cached diff).
func BenchmarkDiffPreview5k(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	var file strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&file, "line %d: some text of a source file\n", i)
	}
	chat := toolChat("edit", "e1", `{"path": "big.txt", "label": "one line", "oldText": "line 2500: some text", "newText": "line 2500: other text"}`)
	lines := strings.Split(strings.TrimSuffix(chat, "\n"), "\n")
	const preview = `
		local buf = vim.api.nvim_get_current_buf()
		local lines, n = ...
		-- A new edit each time: no cached preview.
		local fresh = {}
		for i, l in ipairs(lines) do
			fresh[i] = l:gsub("other text", "other text " .. n)
		end
		vim.api.nvim_buf_set_lines(buf, 0, -1, false, fresh)
		local ns = require("flemma.buf").namespaces().marks
		local function shown()
			for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
				for _, vl in ipairs(m[4].virt_lines or {}) do
					if vl[1][2] == "DiffAdd" then return true end
				end
			end
			return false
		end
		local t0 = vim.loop.hrtime()
		require("flemma").cycle(buf)
		local ok = vim.wait(20000, function() return require("flemma.host")._pending() == 0 and shown() end, 1)
		return { ns = vim.loop.hrtime() - t0, ok = ok }`
	const view = `
		local t0 = vim.loop.hrtime()
		require("flemma.diffview").at_cursor(vim.api.nvim_get_current_buf())
		local ok = vim.wait(20000, function() return #vim.api.nvim_list_tabpages() == 2 end, 1)
		local ns = vim.loop.hrtime() - t0
		vim.cmd("tabclose")
		return { ns = ns, ok = ok }`
	for _, bin := range found {
		for _, mode := range []string{"preview", "view"} {
			b.Run(fmt.Sprintf("nvim-%s/%s", nvimtest.Version(bin), mode), func(b *testing.B) {
				s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if err := os.WriteFile(s.Dir+"/big.txt", []byte(file.String()), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Open("d.chat", chat); err != nil {
					b.Fatal(err)
				}
				var res struct {
					Ns int64 `msgpack:"ns"`
					OK bool  `msgpack:"ok"`
				}
				if mode == "view" {
					if err := s.Lua(&res, preview, lines, 0); err != nil || !res.OK {
						b.Fatalf("no preview: %v; messages: %s", err, s.Messages())
					}
				}
				var samples []time.Duration
				for b.Loop() {
					code := preview
					if mode == "view" {
						code = view
					}
					if err := s.Lua(&res, code, lines, len(samples)+1); err != nil {
						b.Fatal(err)
					}
					if !res.OK {
						b.Fatalf("no diff shown; messages: %s", s.Messages())
					}
					samples = append(samples, time.Duration(res.Ns))
				}
				b.StopTimer()
				med := median(samples[min(1, len(samples)-1):])
				b.ReportMetric(float64(med.Microseconds()), "µs-median/press")
				if path := os.Getenv("FLEMMA_BENCH_OUT"); path != "" {
					if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						fmt.Fprintf(f, "nvim %s %s: press to diff median %s (n=%d)\n", nvimtest.Version(bin), mode, med, len(samples)-1)
						f.Close()
					}
				}
			})
		}
	}
}

// BenchmarkTrustCopyPerCall measures what flemma.trust (the host's ledger
// as Neovim keeps it, for a restarted host) holds per call of a
// conversation once its calls are resolved: "kept" is every record kept (as
// before issue 23), "pruned" the records dropped and a 16-hex-digit tomb
// kept per call that ran, as the host's prune asks. The metric is Lua's heap
// (collectgarbage("count")) after a full collection, per call, for 100 and
// 10,000 calls.
func BenchmarkTrustCopyPerCall(b *testing.B) {
	found, _ := nvimtest.Neovims()
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	const code = `
		local n, prune, salt = ...
		local trust = require("flemma.trust")
		local buf = vim.api.nvim_create_buf(true, false)
		trust.get(buf)
		collectgarbage("collect")
		local base = collectgarbage("count")
		for i = 1, n do
			-- Salted per run: Lua interns strings, and a string of an earlier
			-- run still alive would cost this one nothing.
			local id = string.format("toolu_%08d%018d", salt, i)
			local h = string.format("%08x%024x", salt, i)
			trust.record(buf, { { id = id, received = h, status = "approved", by = "approve by urn:flemma:approval:config ($default)",
				hash = h, gen = 1, ran = true, wrote = true, withheld = false, seq = i } })
			if prune then
				trust.prune(buf, { id }, string.format("%06x%010x", salt, i * 4 + 3))
			end
		end
		collectgarbage("collect")
		local per = (collectgarbage("count") - base) * 1024 / n
		require("flemma.state").forget_buffer(buf)
		vim.api.nvim_buf_delete(buf, { force = true })
		return per`
	for _, bin := range found {
		for _, n := range []int{100, 10000} {
			for _, prune := range []bool{false, true} {
				name := "kept"
				if prune {
					name = "pruned"
				}
				b.Run(fmt.Sprintf("nvim-%s/calls=%d/%s", nvimtest.Version(bin), n, name), func(b *testing.B) {
					s, err := nvimtest.Start(nvimtest.Options{Nvim: bin, Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					var per float64
					salt := 0
					for b.Loop() {
						salt++
						if err := s.Lua(&per, code, n, prune, salt); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(per, "B/call")
				})
			}
		}
	}
}
