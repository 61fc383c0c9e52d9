package e2e

// Latency on screen: Neovim in its terminal UI under a pseudo-terminal
// (nvimtest.TUI), keys written to the terminal, the time until the terminal
// output shows their effect. The budgets are in docs/budgets.txt and
// `make bench-check` compares these figures with them.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/chatgen"
	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// endlessAnswer is a fake Anthropic server whose answer streams prose a
// word at a time, pace apart, until the request is cancelled or max words
// were sent: an answer that lasts as long as a measurement needs. Its words
// hold no digits and no commas (the ruler's "line,col" stays unique on the
// screen) and none of the characters the benchmarks type.
type endlessAnswer struct {
	pace time.Duration
	max  int

	mu   sync.Mutex
	sent int // words of the last answer
}

var answerWords = strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly " +
	"judge boxing matches and pack my box with five dozen liquor jugs")

func (e *endlessAnswer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") != "test-key" {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(v map[string]any) bool {
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], data); err != nil {
			return false
		}
		w.(http.Flusher).Flush()
		return true
	}
	ev(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": "test-model", "content": []any{}, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	ev(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	// Word n leaves at start + n·pace: a timer per word (time.After) ran
	// late by its own latency every time, and a stream of 2,000 words "one
	// per ms" took 3.5 s on a loaded machine instead of 2 (its rate
	// depending on the load); behind the schedule, words leave at once.
	start := time.Now()
	n := 0
	for ; n < e.max; n++ {
		word := answerWords[n%len(answerWords)] + " "
		switch {
		case n%84 == 83:
			word = answerWords[n%len(answerWords)] + ".\n\n"
		case n%14 == 13:
			word = answerWords[n%len(answerWords)] + "\n"
		}
		if !ev(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}}) {
			break
		}
		if wait := time.Until(start.Add(time.Duration(n+1) * e.pace)); e.pace > 0 && wait > 0 {
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				e.setSent(n)
				return
			}
		}
	}
	e.setSent(n)
	ev(map[string]any{"type": "content_block_stop", "index": 0})
	ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": n}})
	ev(map[string]any{"type": "message_stop"})
}

func (e *endlessAnswer) setSent(n int) {
	e.mu.Lock()
	e.sent = n
	e.mu.Unlock()
}

// percentile p (0–100) of samples, nearest rank.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(k, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchNeovims is neovims for benchmarks.
func benchNeovims(b *testing.B) []string {
	found, missing := nvimtest.Neovims()
	if len(missing) > 0 && os.Getenv("CI") != "" {
		b.Fatalf("Neovim not found: %s", strings.Join(missing, ", "))
	}
	if len(found) == 0 {
		b.Skip("no Neovim available")
	}
	return found
}

func startTUI(b *testing.B, bin, setup string, env ...string) *nvimtest.TUI {
	b.Helper()
	tui, err := nvimtest.StartTUI(nvimtest.TUIOptions{Nvim: bin, Dir: b.TempDir(), Setup: setup, Env: env})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tui.Close)
	return tui
}

func tuiLua(b *testing.B, tui *nvimtest.TUI, result any, code string, args ...any) {
	b.Helper()
	if err := tui.Lua(result, code, args...); err != nil {
		b.Fatalf("%v\nterminal:\n%s", err, tui.Screen())
	}
}

// waitMode waits until Neovim is in mode, sending key (if any) again every
// 100 ms; a minute without it is an error.
func waitMode(b *testing.B, tui *nvimtest.TUI, mode, key string) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		var m string
		tuiLua(b, tui, &m, `return vim.fn.mode()`)
		if m == mode {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("Neovim stays in mode %q, not %q; terminal:\n%s", m, mode, tui.Screen())
		}
		if key != "" && i%50 == 49 {
			tuiLua(b, tui, nil, `vim.api.nvim_input(...)`, key)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settle is the pause that ends one redraw's output on the terminal.
const settle = 3 * time.Millisecond

// streamPause is the pause between two keys while an answer streams: until
// Neovim has handled the last key and what was queued before it (an RPC
// round trip, answered between two main-loop iterations) and the terminal
// output has paused for settle (the end of a redraw, as Type reads it), at
// most 20 ms (the stream writes every 16 ms). It was a fixed 40 ms (a quiet
// 20 ms, which a stream rarely leaves): two thirds of the benchmark's time.
func streamPause(b *testing.B, tui *nvimtest.TUI) {
	b.Helper()
	var x int
	if err := tui.Nv.Eval("0", &x); err != nil {
		b.Fatal(err)
	}
	tui.Quiet(settle, 20*time.Millisecond)
}

// keystrokeChat is the conversation of a keystroke benchmark: internal/chatgen
// with one call per 50 lines, all answered, and a last @You: message that
// makes it exactly n lines long (so the ruler's line numbers of its last two
// lines, 9999 and 10000, differ in every digit).
func keystrokeChat(n int) string {
	keystrokeChats.Lock()
	defer keystrokeChats.Unlock()
	if c, ok := keystrokeChats.m[n]; ok {
		return c
	}
	if keystrokeChats.m == nil {
		keystrokeChats.m = map[int]string{}
	}
	keystrokeChats.m[n] = makeKeystrokeChat(n)
	return keystrokeChats.m[n]
}

// keystrokeChats are the chats made so far, by size: each is made once per
// run of the binary (both Neovims, both benchmarks).
var keystrokeChats struct {
	sync.Mutex
	m map[int]string
}

func makeKeystrokeChat(n int) string {
	gen := chatgen.Conversation(chatgen.Options{Lines: n - 300, Calls: n / 50})
	out := strings.Split(strings.TrimSuffix(gen, "\n"), "\n")
	if len(out) > n-10 {
		panic(fmt.Sprintf("chatgen made %d lines for %d", len(out), n-300))
	}
	out = append(out, "Now please explain the results in detail:")
	for i := 1; len(out) < n; i++ {
		out = append(out, fmt.Sprintf("- point %d of what I would like to know", i))
	}
	return strings.Join(out, "\n") + "\n"
}

// BenchmarkKeystroke measures keystroke → screen in a real terminal: Neovim
// (TUI, 120x40) under a pseudo-terminal with the plugin, the built host and
// the config a user writes (defaults), a chat of 10k or 20k lines from
// internal/chatgen in the upper window and a scratch buffer in a split
// below. A key is written to the terminal; the time runs until the terminal
// output showing its effect has arrived (and the output has paused for
// 3 ms). Cases:
//   - idle/chat/insert: typing a character in the middle of the chat;
//     idle/chat/normal: `p` there (the unnamed register holds a character);
//     idle/chat/move: `j`/`k` between its last two lines (the ruler shows
//     the new line);
//   - idle/other/insert and idle/other/normal: the same in the scratch
//     buffer, the chat visible above;
//   - stream/…: the same while an answer streams into the chat (a local
//     server, one word every 20 ms), the chat's window showing the answer.
//     The chat is read-only while it streams, so there only `j`/`k`.
//
// Reported: p50 and p90 in ms (ms-p50, ms-p90).
func BenchmarkKeystroke(b *testing.B) {
	found := benchNeovims(b)
	srv := httptest.NewServer(&endlessAnswer{pace: 20 * time.Millisecond, max: 30000})
	defer srv.Close()
	for _, bin := range found {
		for _, size := range []int{10000, 20000} {
			b.Run(fmt.Sprintf("nvim-%s/%dk", nvimtest.Version(bin), size/1000), func(b *testing.B) {
				benchKeystrokes(b, bin, size, srv.URL)
			})
		}
	}
}

func benchKeystrokes(b *testing.B, bin string, size int, url string) {
	tui := startTUI(b, bin, sendSetup(url, `, models = { ["test-model"] = { max_output_tokens = 8192, thinking = "none" } }`), "ANTHROPIC_API_KEY=test-key")
	path := filepath.Join(tui.Dir, "big.chat")
	if err := os.WriteFile(path, []byte(keystrokeChat(size)), 0o644); err != nil {
		b.Fatal(err)
	}
	// The chat above (27 rows), a scratch buffer below.
	var wins struct {
		Chat  int `msgpack:"chat"`
		Other int `msgpack:"other"`
		Buf   int `msgpack:"buf"`
		Lines int `msgpack:"lines"`
	}
	tuiLua(b, tui, &wins, `
		vim.cmd("edit " .. vim.fn.fnameescape(...))
		local chat, buf = vim.api.nvim_get_current_win(), vim.api.nvim_get_current_buf()
		vim.cmd("belowright 10new")
		vim.bo.buftype = "nofile"
		local text = {}
		for i = 1, 30 do text[i] = "scratch line " .. i .. " with some words to type into" end
		vim.api.nvim_buf_set_lines(0, 0, -1, false, text)
		local other = vim.api.nvim_get_current_win()
		vim.api.nvim_set_current_win(chat)
		return { chat = chat, other = other, buf = buf, lines = vim.api.nvim_buf_line_count(buf) }`, path)
	tui.Settle(50*time.Millisecond, 60*time.Second)

	// place puts the cursor of win on line (0: keep) and makes win current in
	// normal mode; top, when set, is the window's first line.
	// settleOrPace is the pause between two keystrokes: until Neovim has
	// done all it had to (idle), or streamPause while a stream keeps it
	// busy.
	streaming := false
	settleOrPace := func() {
		if streaming {
			streamPause(b, tui)
		} else if !tui.Settle(10*time.Millisecond, 30*time.Second) {
			b.Fatalf("Neovim did not settle in 30 s; terminal:\n%s", tui.Screen())
		}
	}
	place := func(win, line, top int) {
		tuiLua(b, tui, nil, `
			local win, line, top = ...
			if vim.fn.mode() ~= "n" then vim.api.nvim_input("<Esc>") end
			vim.api.nvim_set_current_win(win)
			if line > 0 then vim.api.nvim_win_set_cursor(win, { line, 0 }) end
			if top > 0 then vim.fn.winrestview({ topline = top }) else vim.cmd("normal! zz") end`, win, line, top)
		// <Esc> over RPC is a key like any other: wait until it is handled
		// (again, in case a message's prompt took the first one).
		waitMode(b, tui, "n", "<Esc>")
		settleOrPace()
	}
	insert := func() {
		tuiLua(b, tui, nil, `vim.api.nvim_input("i")`)
		waitMode(b, tui, "i", "")
		settleOrPace()
	}
	// A prose line in the middle of the chat, and the scratch buffer's line 5.
	var mid int
	tuiLua(b, tui, &mid, `
		local buf = ...
		local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
		for l = math.floor(#lines / 2), #lines do
			if lines[l]:find("^Line %d+ of turn") and lines[l + 1]:find("^Line %d+ of turn") then return l end
		end
		return 0`, wins.Buf)
	if mid == 0 || wins.Lines != size {
		b.Fatalf("no prose line in the middle of the chat, or not %d lines (%d)", size, wins.Lines)
	}
	// Each key types a character found nowhere else on the screen (a new
	// one each time, so its redraw is told apart from the last one's).
	pool := []rune("αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ")

	measure := func(b *testing.B, next func(i int) (keys, want string)) {
		var samples []time.Duration
		i := 0
		for b.Loop() {
			keys, want := next(i)
			d, err := tui.Type(keys, want, settle, 60*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if os.Getenv("FLEMMA_BENCH_TRACE") != "" {
				fmt.Fprintf(os.Stderr, "%s %q: %v\n", b.Name(), keys, d)
			}
			samples = append(samples, d)
			settleOrPace()
			i++
		}
		b.StopTimer()
		b.ReportMetric(ms(percentile(samples, 50)), "ms-p50")
		b.ReportMetric(ms(percentile(samples, 90)), "ms-p90")
	}
	typeChar := func(i int) (string, string) {
		c := string(pool[i%len(pool)])
		return c, c
	}
	// Normal mode: p puts the unnamed register, set to the next character
	// before the key (not timed). (`r` + a character is not used: Neovim
	// 0.7.2's terminal input loses a multibyte character after `r`.)
	put := func(i int) (string, string) {
		c := string(pool[i%len(pool)])
		tuiLua(b, tui, nil, `vim.fn.setreg('"', ..., "c")`, c)
		return "p", c
	}
	// j/k between the last two lines: the ruler's line numbers differ in
	// every digit, so the terminal gets the whole number.
	move := func(line int) func(int) (string, string) {
		return func(i int) (string, string) {
			if i%2 == 0 {
				return "j", fmt.Sprint(line + 1)
			}
			return "k", fmt.Sprint(line)
		}
	}

	for _, st := range []string{"idle", "stream"} {
		// The end of the chat in view: the answer streams in below it.
		chatLine, chatTop := wins.Lines-1, wins.Lines-3
		if st == "stream" {
			streaming = true
			place(wins.Chat, wins.Lines, chatTop)
			mark := tui.Mark()
			tuiLua(b, tui, nil, `require("flemma").cycle(...)`, wins.Buf)
			if err := tui.WaitFor(mark, "quick", 30*time.Second); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(st+"/chat/move", func(b *testing.B) {
			place(wins.Chat, chatLine, chatTop)
			measure(b, move(chatLine))
		})
		if st == "idle" {
			b.Run(st+"/chat/insert", func(b *testing.B) {
				place(wins.Chat, mid, 0)
				insert()
				measure(b, typeChar)
			})
			b.Run(st+"/chat/normal", func(b *testing.B) {
				place(wins.Chat, mid, 0)
				measure(b, put)
				// The line as it was.
				tuiLua(b, tui, nil, `vim.cmd("silent! undo 0")`)
			})
		}
		b.Run(st+"/other/insert", func(b *testing.B) {
			place(wins.Chat, chatLine, chatTop)
			place(wins.Other, 5, 1)
			insert()
			measure(b, typeChar)
		})
		b.Run(st+"/other/normal", func(b *testing.B) {
			place(wins.Chat, chatLine, chatTop)
			place(wins.Other, 5, 1)
			measure(b, put)
		})
		if st == "stream" {
			// Still streaming? Then every case above ran during the stream.
			var busy bool
			tuiLua(b, tui, &busy, `return require("flemma.buf") and require("flemma.state").buffer(...).progress ~= nil`, wins.Buf)
			if !busy {
				b.Fatal("the answer ended before the measurements did")
			}
			tuiLua(b, tui, nil, `require("flemma").cancel(...)`, wins.Buf)
		}
	}
}

// redrawProbe records, inside Neovim, what each stream flush costs the
// editor: the host's write (flemma.buf.apply, with the folds and
// highlighting it updates) plus the redraw that follows it (a decoration
// provider's on_start..on_end brackets a whole redraw). With its argument
// true (FLEMMA_BENCH_TRACE) it also keeps each flush's parts: the write, the
// redraw and how many lines the redraw drew (on_line, a Lua call per line
// drawn, left out of the timed runs).
const redrawProbe = `
local buf = require("flemma.buf")
local apply = buf.apply
local trace = ...
local ns = vim.api.nvim_create_namespace("flemma.bench.redraw")
local pending, t0, drawn
_G.FLEMMA_FLUSHES = {}
_G.FLEMMA_FLUSH_PARTS = {}
buf.apply = function(...)
  local a = vim.loop.hrtime()
  local res = apply(...)
  pending = (pending or 0) + vim.loop.hrtime() - a
  return res
end
vim.api.nvim_set_decoration_provider(ns, {
  on_start = function()
    t0, drawn = vim.loop.hrtime(), 0
  end,
  on_win = function()
    return trace
  end,
  on_line = function()
    drawn = drawn + 1
  end,
  on_end = function()
    if t0 and pending then
      local r = vim.loop.hrtime() - t0
      table.insert(FLEMMA_FLUSHES, pending + r)
      table.insert(FLEMMA_FLUSH_PARTS, { pending, r, drawn })
      pending = nil
    end
    t0 = nil
  end,
})`

// BenchmarkStreamRedraw: a 2,000-token answer (one word per ms) streamed
// into a 50,000-line chat in a real terminal (TUI under a pty), with the
// defaults (folds, syntax, rulers on) and, in a second Neovim in the same
// run, with them off (chat.markdown = "none", chat.rulers = false,
// fold.enabled = false, :syntax off). Reported: the worst and the median
// cost of one flush to the editor (the host's write and the redraw after
// it, in ms, features on), and the wall time from <C-]> to the final @You:
// on the screen, on and off, and their ratio.
func BenchmarkStreamRedraw(b *testing.B) {
	found := benchNeovims(b)
	srv := httptest.NewServer(&endlessAnswer{pace: time.Millisecond, max: 2000})
	defer srv.Close()
	chat := keystrokeChat(50000)
	const models = `, models = { ["test-model"] = { max_output_tokens = 8192, thinking = "none" } }`
	for _, bin := range found {
		b.Run("nvim-"+nvimtest.Version(bin), func(b *testing.B) {
			type side struct {
				tui  *nvimtest.TUI
				wall []time.Duration
			}
			open := func(extra string, syntaxOff bool) *side {
				tui := startTUI(b, bin, sendSetup(srv.URL, models+extra), "ANTHROPIC_API_KEY=test-key")
				path := filepath.Join(tui.Dir, "long.chat")
				if err := os.WriteFile(path, []byte(chat), 0o644); err != nil {
					b.Fatal(err)
				}
				tuiLua(b, tui, nil, `local path, off = ...; vim.cmd("edit " .. vim.fn.fnameescape(path)); if off then vim.cmd("syntax off") end`, path, syntaxOff)
				tuiLua(b, tui, nil, redrawProbe, os.Getenv("FLEMMA_BENCH_TRACE") != "")
				return &side{tui: tui}
			}
			on := open("", false)
			off := open(`, chat = { markdown = "none", rulers = false }, fold = { enabled = false }`, true)
			stream := func(s *side) {
				tuiLua(b, s.tui, nil, `
					local n = ...
					vim.api.nvim_buf_set_lines(0, n, -1, false, {})
					vim.api.nvim_win_set_cursor(0, { n, 0 })
					vim.cmd("normal! zt")
					FLEMMA_FLUSHES, FLEMMA_FLUSH_PARTS = {}, {}`, 50000)
				if !s.tui.Settle(20*time.Millisecond, 60*time.Second) {
					b.Fatalf("Neovim did not settle; terminal:\n%s", s.tui.Screen())
				}
				d, err := s.tui.Type("\x1d", "@You:", settle, 60*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				s.wall = append(s.wall, d)
			}
			var flushes []time.Duration
			for b.Loop() {
				stream(on)
				var ns []int64
				tuiLua(b, on.tui, &ns, `return FLEMMA_FLUSHES`)
				for _, n := range ns {
					flushes = append(flushes, time.Duration(n))
				}
				if os.Getenv("FLEMMA_BENCH_TRACE") != "" {
					// Each flush as write+redraw ms (lines drawn).
					var parts [][3]int64
					tuiLua(b, on.tui, &parts, `return FLEMMA_FLUSH_PARTS`)
					fmt.Fprintf(os.Stderr, "%s flushes, write+redraw ms (lines drawn):", b.Name())
					for _, p := range parts {
						fmt.Fprintf(os.Stderr, " %.1f+%.1f(%d)", float64(p[0])/1e6, float64(p[1])/1e6, p[2])
					}
					fmt.Fprintln(os.Stderr)
				}
				stream(off)
			}
			b.StopTimer()
			if len(flushes) == 0 {
				b.Fatal("no flush was measured")
			}
			won, woff := median(on.wall), median(off.wall)
			b.ReportMetric(ms(percentile(flushes, 100)), "ms-max-flush")
			b.ReportMetric(ms(percentile(flushes, 50)), "ms-p50-flush")
			b.ReportMetric(float64(len(flushes))/float64(len(on.wall)), "flushes/stream")
			b.ReportMetric(ms(won), "ms-wall-on")
			b.ReportMetric(ms(woff), "ms-wall-off")
			b.ReportMetric(float64(won)/float64(woff), "ratio-wall")
		})
	}
}
