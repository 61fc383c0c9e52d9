package preview

import (
	"strings"
	"sync"
	"testing"
)

// TestPinned checks the strings SPEC §8, seed 004 and the reference pin.
func TestPinned(t *testing.T) {
	for _, tc := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		// SPEC §8 and seed 004 (which win over the Lua code on write's spacing).
		{"bash", map[string]any{"command": "make test", "label": "running tests"}, "bash: $ make test  # running tests"},
		{"read", map[string]any{"path": "src/config.lua", "offset": 0.0, "limit": 50.0, "label": "reading config"}, "read: src/config.lua  +0,50  # reading config"},
		{"write", map[string]any{"path": "output.txt", "content": strings.Repeat("x", 2355)}, "write: output.txt (2.3KB)"},
		{"write", map[string]any{"path": "output.txt", "content": strings.Repeat("x", 2355), "label": "saving log"}, "write: output.txt (2.3KB)  # saving log"},
		{"calculator", map[string]any{"expression": "2 + 2"}, "calculator: 2 + 2"},
		{"calculator_async", map[string]any{"expression": "sqrt(16)", "delay": 500.0}, "calculator_async: sqrt(16)  # 500ms"},
		{"bash", map[string]any{"command": "git status", "label": "checking repo"}, "bash: $ git status  # checking repo"},
		{"read", map[string]any{"path": "config.lua", "offset": 100.0, "limit": 50.0, "label": "reading tail"}, "read: config.lua  +100,50  # reading tail"},
		{"edit", map[string]any{"path": "config.lua", "label": "fixing typo"}, "edit: config.lua  # fixing typo"},
		// seed-era.md §6.2 [T] (write spacing per SPEC).
		{"bash", map[string]any{"command": "ls -la /tmp", "label": "list files"}, "bash: $ ls -la /tmp  # list files"},
		{"bash", map[string]any{"command": "echo hello"}, "bash: $ echo hello"},
		{"read", map[string]any{"path": "./src/main.lua", "offset": 10.0, "limit": 50.0, "label": "read config"}, "read: ./src/main.lua  +10,50  # read config"},
		{"read", map[string]any{"path": "./src/main.lua", "offset": 10.0}, "read: ./src/main.lua  +10"},
		{"read", map[string]any{"path": "./src/main.lua", "limit": 50.0}, "read: ./src/main.lua  +0,50"},
		{"read", map[string]any{"path": "./src/main.lua", "label": "check file"}, "read: ./src/main.lua  # check file"},
		{"edit", map[string]any{"path": "./src/main.lua", "label": "fix typo"}, "edit: ./src/main.lua  # fix typo"},
		{"edit", map[string]any{"path": "./src/main.lua"}, "edit: ./src/main.lua"},
		{"write", map[string]any{"path": "./src/main.lua", "content": strings.Repeat("x", 1536), "label": "create module"}, "write: ./src/main.lua (1.5KB)  # create module"},
		{"write", map[string]any{"path": "./readme.txt", "content": "hello"}, "write: ./readme.txt (5B)"},
		{"write", map[string]any{"path": "./empty.txt", "content": "", "label": "create empty"}, "write: ./empty.txt (0B)  # create empty"},
		{"calculator", map[string]any{"expression": "2 + 2 * 3"}, "calculator: 2 + 2 * 3"},
		{"calculator_async", map[string]any{"expression": "1+1"}, "calculator_async: 1+1"},
		{"noop", map[string]any{}, "noop"},
		// seed-era.md §6.3 [T].
		{"run_cmd", map[string]any{"command": "ls -la /tmp"}, `run_cmd: command="ls -la /tmp"`},
		{"search", map[string]any{"path": "./src", "query": "foo"}, `search: path="./src", query="foo"`},
		{"math_eval", map[string]any{"expression": "1+1", "precision": 2.0}, `math_eval: expression="1+1", precision=2`},
		{"toggle", map[string]any{"enabled": true}, `toggle: enabled=true`},
		{"tool", map[string]any{"items": []any{1.0, 2.0, 3.0}}, `tool: items=[3 items]`},
		{"tool", map[string]any{"items": []any{1.0}}, `tool: items=[1 item]`},
		{"tool", map[string]any{"config": map[string]any{"host": "h", "port": 1.0}}, `tool: config={host, port}`},
		{"tool", map[string]any{"config": map[string]any{"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}}, `tool: config={a, b, +2 more}`},
		{"tool", map[string]any{"opts": map[string]any{}}, `tool: opts={}`},
		{"tool", map[string]any{"x": 10.0, "z": "hi", "y": []any{1.0, 2.0, 3.0}}, `tool: x=10, z="hi", y=[3 items]`},
		{"run_cmd", map[string]any{"command": `echo "hello"`}, `run_cmd: command="echo \"hello\""`},
		{"run_cmd", map[string]any{"command": "echo hello\necho world"}, `run_cmd: command="echo hello↵echo world"`},
		// Our decisions for grep/find/ls.
		{"grep", map[string]any{"pattern": "TODO", "path": "src/", "glob": "*.go", "label": "finding todos"}, "grep: /TODO/ in src/ (*.go)  # finding todos"},
		{"find", map[string]any{"pattern": "*.go", "path": "src/"}, "find: *.go in src/"},
		{"ls", map[string]any{"path": "src/", "max_depth": 2.0}, "ls: src/ (depth 2)"},
	} {
		if got := Format(tc.tool, tc.in, 80, Options{}); got != tc.want {
			t.Errorf("Format(%q, %v, 80) = %q, want %q", tc.tool, tc.in, got, tc.want)
		}
	}
}

func TestCustom(t *testing.T) {
	var gotMax []int
	custom := func(s string) func(int) (string, bool) {
		return func(n int) (string, bool) {
			gotMax = append(gotMax, n)
			return s, true
		}
	}
	// seed-era.md §6.3: width_tool at max 50 receives available = 38.
	Format("width_tool", map[string]any{"a": 1.0}, 50, Options{Custom: custom("x")})
	if len(gotMax) != 1 || gotMax[0] != 38 {
		t.Errorf("Custom called with %v, want [38]", gotMax)
	}
	// Too narrow for the prefix: never negative.
	gotMax = nil
	Format("width_tool", nil, 5, Options{Custom: custom("x")})
	if len(gotMax) != 1 || gotMax[0] != 0 {
		t.Errorf("Custom called with %v, want [0]", gotMax)
	}
	// Called once even when the line is rebuilt with larger budgets.
	gotMax = nil
	long := "a" + strings.Repeat("\u0301", 1000) + strings.Repeat("b", 100)
	if got := Format("t", nil, 30, Options{Custom: custom(long)}); !strings.HasSuffix(got, "bbb…") {
		t.Errorf("Format with zero-width run = %q, want a cut line of b", got)
	}
	if len(gotMax) != 1 {
		t.Errorf("Custom called %d times, want once", len(gotMax))
	}
	// The wide prefix counts in cells.
	gotMax = nil
	Format("検索", nil, 20, Options{Custom: custom("x")})
	if len(gotMax) != 1 || gotMax[0] != 14 {
		t.Errorf("Custom called with %v, want [14] (20 − 6 cells of \"検索: \")", gotMax)
	}
	if got, want := Format("newline_tool", nil, 80, Options{Custom: custom("line1\nline2")}), "newline_tool: line1↵line2"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	if got, want := Format("custom_tool", nil, 80, Options{Custom: custom("custom: value")}), "custom_tool: custom: value"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

func TestNarrowWidths(t *testing.T) {
	in := map[string]any{"command": "make test", "label": "running tests"}
	for _, tc := range []struct {
		width int
		wide  bool
		want  string
	}{
		{-5, false, ""},
		{0, false, ""},
		{1, false, "…"},
		{2, false, "b…"},
		{3, false, "ba…"},
		{4, false, "bas…"},
		{5, false, "bash…"},
		{1, true, "b"}, // "…" is two cells under ambiwidth=double
		{2, true, "…"},
		{3, true, "b…"},
	} {
		got := Format("bash", in, tc.width, Options{AmbiguousWide: tc.wide})
		if got != tc.want {
			t.Errorf("Format(bash, %d, wide=%v) = %q, want %q", tc.width, tc.wide, got, tc.want)
		}
	}
	// A wide first character that cannot fit leaves only the marker.
	if got := Format("日本", nil, 2, Options{}); got != "…" {
		t.Errorf("Format(日本, 2) = %q, want %q", got, "…")
	}
	if got := Format("日本", nil, 4, Options{}); got != "日本" {
		t.Errorf("Format(日本, 4) = %q, want %q", got, "日本")
	}
	if got := Format("日本語", nil, 4, Options{}); got != "日…" {
		t.Errorf("Format(日本語, 4) = %q, want %q", got, "日…")
	}
}

// TestUnmeasurable covers a line whose text grows without taking cells
// (Hangul leading jamo join into one two-cell cluster, however many): the
// work stops at maxCellBytes per cell and the line is marked as cut.
func TestUnmeasurable(t *testing.T) {
	in := map[string]any{"s": strings.Repeat("ᄀ", 1<<20)}
	for _, w := range []int{1, 10, 80} {
		got := Format("t", in, w, Options{})
		checkLine(t, "jamo", got, w, false)
		if !strings.HasSuffix(got, ellipsis) {
			t.Errorf("Format(jamo, %d) = %.40q..., want a line ending in …", w, got)
		}
		if len(got) > maxCellBytes*(w+1)+64 {
			t.Errorf("Format(jamo, %d) is %d bytes, want at most about %d", w, len(got), maxCellBytes*(w+1))
		}
	}
}

func TestConcurrent(t *testing.T) {
	in := map[string]any{"command": "echo 日本語 🎉", "label": "parallel"}
	want := Format("bash", in, 20, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := Format("bash", in, 20, Options{}); got != want {
					t.Errorf("concurrent Format = %q, want %q", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0B"},
		{5, "5B"},
		{1023, "1023B"},
		{1024, "1.0KB"},
		{1536, "1.5KB"},
		{2355, "2.3KB"},
		{12345, "12.1KB"},
		{51200, "50.0KB"},
		{1<<20 - 1, "1024.0KB"}, // as Lua's %.1f does
		{1 << 20, "1.0MB"},
		{3 << 20, "3.0MB"},
		{1 << 30, "1.0GB"},
		{5 << 40, "5120.0GB"},
		{-1, "-1B"},
	} {
		if got := FormatSize(tc.n); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestFit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		w    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"日本語", 6, "日本語"},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"},
		{"a日本", 4, "a日…"},
		{"a日本", 3, "a…"},
		{"e\u0301e\u0301e\u0301", 3, "e\u0301e\u0301e\u0301"},
		{"e\u0301e\u0301e\u0301x", 3, "e\u0301e\u0301…"},
		{"👨‍👩‍👧👨‍👩‍👧", 4, "👨‍👩‍👧👨‍👩‍👧"},
		{"👨‍👩‍👧👨‍👩‍👧x", 4, "👨‍👩‍👧…"},
		{"🇯🇵🇫🇷🇩🇪🇬🇧", 3, "🇯🇵🇫🇷…"}, // go-runewidth counts a flag as one cell; the pair is never split
		{"abc", 0, ""},
		{"", 5, ""},
	} {
		got := fit(tc.s, tc.w, narrowCells)
		if got != tc.want {
			t.Errorf("fit(%q, %d) = %q, want %q", tc.s, tc.w, got, tc.want)
		}
		if fb := fitBytes([]byte(tc.s), tc.w, narrowCells); fb != got {
			t.Errorf("fitBytes(%q, %d) = %q, want %q like fit", tc.s, tc.w, fb, got)
		}
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"a\nb", "a↵b"},
		{"a\r\nb", "a↵b"},
		{"a\rb", "a↵b"},
		{"a\n\nb", "a↵↵b"},
		{"a\r\n\r\nb", "a↵↵b"},
		{"a\u2028b\u2029c\u0085d", "a↵b↵c↵d"},
		{"a\tb", "a b"},
		{"a\x00b\x1bc\x7fd\u0090e", "abcde"},
		{"\u202eabc\u202c\u2067x\u2069\u200e\u200f\u061c", "abcx"},
		{"\xff\xfeok\xc3", "\ufffdok\ufffd"},
		{"👩‍💻", "👩‍💻"},
		{"a" + strings.Repeat("\u0301", 40), "a" + strings.Repeat("\u0301", maxMarks)},
		{strings.Repeat("\u200b", 40) + "x", strings.Repeat("\u200b", maxMarks) + "x"},
		{"ab" + strings.Repeat("\u093f", 20) + "c", "ab" + strings.Repeat("\u093f", maxMarks) + "c"},
	} {
		l := line{eol: "↵"}
		l.text(tc.in)
		if got := string(l.buf); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "↵"},
		{"$", "$"},
		{"\n", "↵"},
		{"\x01¬", "¬"},
	} {
		if got := cleanEOL(tc.in); got != tc.want {
			t.Errorf("cleanEOL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{-3, "-3"},
		{42, "42"},
		{0.5, "0.5"},
		{0.1, "0.1"},
		{1.0 / 3, "0.33333333333333"},
		{1e20, "1e+20"},
		{123456789012345, "123456789012345"},
		{1e-5, "1e-05"},
	} {
		if got := formatFloat(tc.f, 64); got != tc.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
