package preview

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenWidths are the widths every golden case is rendered at.
var goldenWidths = []int{10, 20, 38, 80}

type goldenCase struct {
	name  string
	tool  string
	json  string         // the input as the model sends it; decoded like the host does
	input map[string]any // used instead of json when set (huge or Go-typed inputs)
	opts  Options
	note  string // printed instead of the input when the input is too big to show
}

func (c goldenCase) decode(t *testing.T) map[string]any {
	t.Helper()
	if c.input != nil || c.json == "" {
		return c.input
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(c.json), &in); err != nil {
		t.Fatalf("%s: bad test input %s: %v", c.name, c.json, err)
	}
	return in
}

// big returns s repeated until it is at least n bytes long.
func big(s string, n int) string {
	return strings.Repeat(s, (n+len(s)-1)/len(s))
}

var goldenFiles = map[string][]goldenCase{
	"bash": {
		{name: "command and label", tool: "bash", json: `{"label":"running tests","command":"make test","timeout":null}`},
		{name: "no label", tool: "bash", json: `{"command":"echo hello"}`},
		{name: "null label, timeout", tool: "bash", json: `{"label":null,"command":"sleep 5","timeout":10}`},
		{name: "empty and blank label", tool: "bash", json: `{"label":"   ","command":"  git status  "}`},
		{name: "label only", tool: "bash", json: `{"label":"mystery"}`},
		{name: "empty input", tool: "bash", json: `{}`},
		{name: "nil input", tool: "bash"},
		{name: "multi-line script", tool: "bash", json: `{"label":"build","command":"cd src\nmake\r\nmake install\rdone\n"}`},
		{name: "tabs", tool: "bash", json: `{"command":"printf 'a\tb'\t| cat"}`},
		{name: "CJK command", tool: "bash", json: `{"label":"日本語のラベル","command":"echo 日本語のテキストです"}`},
		{name: "emoji", tool: "bash", json: `{"label":"👨‍👩‍👧 family 🇯🇵","command":"echo 🎉🎉🎉 party 🎉"}`},
		{name: "combining accents", tool: "bash", json: `{"label":"cafe\u0301 re\u0301sume\u0301","command":"echo e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301"}`},
		{name: "command is an array", tool: "bash", json: `{"command":["ls","-la"],"label":"argv"}`},
		{name: "controls and bidi", tool: "bash", json: `{"command":"echo \u001b[31mred\u001b[0m \u202eevil\u202c ok","label":"bell\u0007"}`},
		{name: "huge command", tool: "bash", input: map[string]any{"command": big("echo lorem ipsum; ", 1<<20), "label": "loop"}, note: "1 MiB command"},
	},
	"read": {
		{name: "path range label", tool: "read", json: `{"label":"reading config","path":"src/config.lua","offset":0,"limit":50}`},
		{name: "offset only", tool: "read", json: `{"path":"./src/main.lua","offset":10,"limit":null,"label":null}`},
		{name: "limit only", tool: "read", json: `{"path":"./src/main.lua","limit":50}`},
		{name: "label only", tool: "read", json: `{"path":"./src/main.lua","label":"check file"}`},
		{name: "fractional offset", tool: "read", json: `{"path":"a.txt","offset":10.5,"limit":1e20}`},
		{name: "range without path", tool: "read", json: `{"offset":100,"limit":50,"label":"reading tail"}`},
		{name: "CJK path", tool: "read", json: `{"path":"文書/設定ファイル.lua","offset":1,"limit":20}`},
		{name: "emoji path", tool: "read", json: `{"path":"notes/🚀launch🚀.md","label":"🚀"}`},
		{name: "newline in path", tool: "read", json: `{"path":"odd\nname.txt"}`},
		{name: "empty input", tool: "read", json: `{}`},
		{name: "huge path", tool: "read", input: map[string]any{"path": big("very/deep/", 200000), "offset": 1.0}, note: "2 MB path"},
	},
	"edit": {
		{name: "path and label", tool: "edit", json: `{"label":"fixing typo","path":"config.lua","oldText":"teh","newText":"the"}`},
		{name: "path only", tool: "edit", json: `{"path":"./src/main.lua","oldText":"a","newText":""}`},
		{name: "CJK path and label", tool: "edit", json: `{"path":"ドキュメント.md","label":"誤字を修正"}`},
		{name: "combining path", tool: "edit", json: `{"path":"Re\u0301sume\u0301/cafe\u0301.txt"}`},
		{name: "missing path", tool: "edit", json: `{"label":"no path","oldText":"x","newText":"y"}`},
		{name: "huge texts are not shown", tool: "edit", input: map[string]any{"path": "big.txt", "oldText": big("x", 1<<20), "newText": big("y", 1<<20), "label": "rewrite"}, note: "1 MiB oldText and newText"},
	},
	"write": {
		{name: "2.3KB with label", tool: "write", input: map[string]any{"path": "output.txt", "content": big("a", 2355), "label": "saving log"}, note: "2355-byte content"},
		{name: "5 bytes", tool: "write", json: `{"path":"./readme.txt","content":"hello"}`},
		{name: "empty content", tool: "write", json: `{"path":"./empty.txt","content":"","label":"create empty"}`},
		{name: "null content", tool: "write", json: `{"path":"./x.txt","content":null}`},
		{name: "multibyte content counts bytes", tool: "write", json: `{"path":"日本.txt","content":"日本語"}`},
		{name: "1.5KB", tool: "write", input: map[string]any{"path": "./src/main.lua", "content": big("z", 1536), "label": "create module"}, note: "1536-byte content"},
		{name: "megabytes", tool: "write", input: map[string]any{"path": "blob.bin", "content": big("0123456789", 3<<20)}, note: "3 MiB content"},
		{name: "content without path", tool: "write", json: `{"content":"abc","label":"where?"}`},
		{name: "emoji label", tool: "write", json: `{"path":"a/b/c.txt","content":"x","label":"💾 save"}`},
	},
	"grep": {
		{name: "all fields", tool: "grep", json: `{"label":"finding todos","pattern":"TODO","path":"src/","glob":"*.go","limit":null}`},
		{name: "pattern only", tool: "grep", json: `{"pattern":"func \\w+\\(","path":null,"glob":null}`},
		{name: "pattern and path", tool: "grep", json: `{"pattern":"a/b","path":"lua/flemma"}`},
		{name: "pattern and glob", tool: "grep", json: `{"pattern":"\"quoted\"","glob":"**/*.{ts,tsx}","limit":10}`},
		{name: "CJK pattern", tool: "grep", json: `{"pattern":"設定|構成","path":"ドキュメント"}`},
		{name: "no pattern", tool: "grep", json: `{"path":"src"}`},
		{name: "huge pattern", tool: "grep", input: map[string]any{"pattern": big("(a|b)", 1<<20), "path": "."}, note: "1 MiB pattern"},
	},
	"find": {
		{name: "pattern path label", tool: "find", json: `{"label":"listing sources","pattern":"*.go","path":"src/","limit":null}`},
		{name: "pattern only", tool: "find", json: `{"pattern":"src/**/*.tsx","path":null}`},
		{name: "CJK", tool: "find", json: `{"pattern":"*.md","path":"資料"}`},
		{name: "no pattern", tool: "find", json: `{"path":"src"}`},
	},
	"ls": {
		{name: "path", tool: "ls", json: `{"path":"src/","max_depth":null,"limit":null}`},
		{name: "depth 2 and label", tool: "ls", json: `{"path":"src/","max_depth":2,"label":"looking around"}`},
		{name: "depth 1 is not shown", tool: "ls", json: `{"path":".","max_depth":1}`},
		{name: "fractional depth", tool: "ls", json: `{"path":"lib","max_depth":2.5}`},
		{name: "emoji path", tool: "ls", json: `{"path":"📁/🗂️","max_depth":3}`},
		{name: "empty input", tool: "ls", json: `{}`},
	},
	"diagnostics": {
		{name: "one file", tool: "diagnostics", json: `{"path":"main.go","severity":null,"label":"checking the build"}`},
		{name: "every open file, errors", tool: "diagnostics", json: `{"path":null,"severity":"error","label":"what is broken"}`},
		{name: "empty input", tool: "diagnostics", json: `{}`},
	},
	"lsp": {
		{name: "references", tool: "lsp", json: `{"operation":"references","path":"main.go","line":14,"symbol":"Helper","column":null,"query":null,"label":"who calls it"}`},
		{name: "hover by column", tool: "lsp", json: `{"operation":"hover","path":"lib/lib.go","line":4,"symbol":null,"column":6,"query":null,"label":"type"}`},
		{name: "document symbols", tool: "lsp", json: `{"operation":"document_symbols","path":"lib/lib.go","line":null,"symbol":null,"column":null,"query":null,"label":"outline"}`},
		{name: "workspace symbols", tool: "lsp", json: `{"operation":"workspace_symbols","path":null,"line":null,"symbol":null,"column":null,"query":"Helper","label":"find it"}`},
		{name: "empty input", tool: "lsp", json: `{}`},
	},
	"buffers": {
		{name: "label", tool: "buffers", json: `{"label":"before editing"}`},
		{name: "empty input", tool: "buffers", json: `{}`},
	},
	"calculator": {
		{name: "expression", tool: "calculator", json: `{"expression":"2 + 2"}`},
		{name: "pinned", tool: "calculator", json: `{"expression":"2 + 2 * 3"}`},
		{name: "label", tool: "calculator", json: `{"expression":"math.sqrt(2)^2","label":"rounding check"}`},
		{name: "surrounding space and newline", tool: "calculator", json: `{"expression":"  1 +\n 2  "}`},
		{name: "missing expression", tool: "calculator", json: `{"expression":null}`},
		{name: "long expression", tool: "calculator", input: map[string]any{"expression": big("1+", 5000) + "1"}, note: "10 KB expression"},
	},
	"calculator_async": {
		{name: "with delay", tool: "calculator_async", json: `{"expression":"sqrt(16)","delay":500}`},
		{name: "without delay", tool: "calculator_async", json: `{"expression":"1+1","delay":null}`},
		{name: "zero delay", tool: "calculator_async", json: `{"expression":"1+1","delay":0}`},
		{name: "fractional delay and label", tool: "calculator_async", json: `{"expression":"2^10","delay":12.5,"label":"slow maths"}`},
		{name: "delay only", tool: "calculator_async", json: `{"delay":250}`},
	},
	"generic": {
		{name: "one string", tool: "run_cmd", json: `{"command":"ls -la /tmp"}`},
		{name: "sorted strings", tool: "search", json: `{"query":"foo","path":"./src"}`},
		{name: "string and number", tool: "math_eval", json: `{"expression":"1+1","precision":2}`},
		{name: "boolean", tool: "toggle", json: `{"enabled":true}`},
		{name: "array", tool: "tool", json: `{"items":[1,2,3]}`},
		{name: "one-item array", tool: "tool", json: `{"items":["a"]}`},
		{name: "empty array", tool: "tool", json: `{"items":[]}`},
		{name: "small object", tool: "tool", json: `{"config":{"port":1,"host":"h"}}`},
		{name: "bigger object", tool: "tool", json: `{"config":{"d":1,"c":2,"b":3,"a":4}}`},
		{name: "empty object", tool: "tool", json: `{"opts":{}}`},
		{name: "scalars before tables", tool: "tool", json: `{"y":[1,2,3],"z":"hi","x":10}`},
		{name: "quotes escaped", tool: "run_cmd", json: `{"command":"echo \"hello\""}`},
		{name: "newlines collapsed", tool: "run_cmd", json: `{"command":"echo hello\necho world"}`},
		{name: "label listed like any key", tool: "my_search", json: `{"label":"searching","query":"preview width","limit":null}`},
		{name: "numbers", tool: "nums", json: `{"a":0,"b":-3,"c":0.1,"d":0.3333333333333333,"e":1e20,"f":123456789012345,"g":2.5e-7}`},
		{name: "empty input", tool: "noop", json: `{}`},
		{name: "nil input", tool: "noop"},
		{name: "only nulls", tool: "noop", json: `{"a":null,"b":null}`},
		{name: "empty string value", tool: "t", json: `{"s":""}`},
		{name: "CJK keys and values", tool: "検索", json: `{"質問":"設定ファイルはどこ","件数":5}`},
		{name: "emoji and combining", tool: "t", json: `{"mood":"🙂‍↔️ fine","name":"Zoe\u0308","flags":"🇫🇷🇩🇪"}`},
		{name: "key with newline", tool: "t", json: `{"a\nb":"c\td"}`},
		{name: "huge array", tool: "bulk", input: map[string]any{"ids": make([]any, 100000), "mode": "all"}, note: "100000-item array"},
		{name: "huge object", tool: "bulk", input: map[string]any{"m": hugeObject(10000)}, note: "10000-key object"},
		{name: "huge string", tool: "bulk", input: map[string]any{"blob": big("ab\"c\n", 1<<20)}, note: "1 MiB string with quotes and newlines"},
		{name: "Go-typed values", tool: "typed", input: map[string]any{"n": 7, "u": uint8(3), "f": float32(0.1), "names": []string{"a", "b"}, "m": map[int]bool{2: true, 1: false}, "p": ptr("x"), "nilp": (*string)(nil), "num": json.Number("12.50")}, note: "int, uint8, float32, []string, map[int]bool, *string, nil *string, json.Number"},
	},
	"custom": {
		{name: "custom string", tool: "my_search", json: `{"query":"foo","limit":5}`, opts: Options{Custom: func(int) (string, bool) { return `"foo" (limit 5)`, true }}},
		{name: "custom sees the width left", tool: "width_tool", json: `{}`, opts: Options{Custom: func(n int) (string, bool) { return fmt.Sprintf("max_length=%d", n), true }}},
		{name: "custom multi-line", tool: "newline_tool", json: `{}`, opts: Options{Custom: func(int) (string, bool) { return "line1\nline2\r\nline3", true }}},
		{name: "custom empty", tool: "quiet", json: `{"a":1}`, opts: Options{Custom: func(int) (string, bool) { return "", true }}},
		{name: "custom declines", tool: "bash", json: `{"command":"ls"}`, opts: Options{Custom: func(int) (string, bool) { return "unused", false }}},
		{name: "custom overrides built-in", tool: "bash", json: `{"command":"ls"}`, opts: Options{Custom: func(int) (string, bool) { return "custom: value", true }}},
		{name: "custom not trimmed", tool: "t", json: `{}`, opts: Options{Custom: func(int) (string, bool) { return "  padded\t", true }}},
		{name: "custom CJK", tool: "t", json: `{}`, opts: Options{Custom: func(int) (string, bool) {
			return "中文内容，很长很长很长很长很长很长很长很长", true
		}}},
	},
	"text": {
		{name: "eol from listchars", tool: "run_cmd", json: `{"command":"a\nb\r\nc\rd"}`, opts: Options{EOL: "$"}},
		{name: "eol wide glyph", tool: "run_cmd", json: `{"command":"a\nb"}`, opts: Options{EOL: "⏎"}},
		{name: "eol that is a control falls back", tool: "run_cmd", json: `{"command":"a\nb"}`, opts: Options{EOL: "\n"}},
		{name: "unicode line separators", tool: "t", json: `{"s":"a\u2028b\u2029c\u0085d"}`},
		{name: "C0 C1 DEL dropped", tool: "t", json: `{"s":"a\u0000b\u0001c\u007fd\u009be"}`},
		{name: "bidi controls dropped", tool: "bash", json: `{"command":"ls \u202e\u2066txt.exe\u2069\u200f"}`},
		{name: "zero-width joiner kept", tool: "t", json: `{"s":"👩‍💻 dev"}`},
		{name: "invalid UTF-8", tool: "t", input: map[string]any{"s": "ok\xff\xfe\xfdend \xe6\x97 cut"}, note: `"ok\xff\xfe\xfdend \xe6\x97 cut"`},
		{name: "invalid UTF-8 tool name", tool: "bad\xffname", json: `{"a":1}`},
		{name: "ambiwidth double", tool: "bash", json: `{"command":"echo ±½×÷ ①②③④⑤⑥⑦⑧⑨⑩ αβγδεζηθ","label":"ambiguous"}`, opts: Options{AmbiguousWide: true}},
		{name: "ambiwidth single", tool: "bash", json: `{"command":"echo ±½×÷ ①②③④⑤⑥⑦⑧⑨⑩ αβγδεζηθ","label":"ambiguous"}`},
		{name: "wide char straddles the cut", tool: "t", json: `{"s":"ab日本語日本語日本語日本語日本語日本語日本語日本語"}`},
		{name: "zero-width run", tool: "t", input: map[string]any{"s": "a" + big("\u0301", 3<<20) + "bcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"}, note: "a + 3 MiB of combining acute + 98 ASCII"},
		{name: "zalgo capped at 16 marks", tool: "t", json: `{"s":"Z\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030d\u030e\u030f\u0310\u0311\u0312\u0313\u0314algo"}`},
		{name: "one-cell megabyte", tool: "t", input: map[string]any{"s": "क" + big("\u093f", 1<<20) + "tail"}, note: "क + 1 MiB of U+093F (one cluster, one cell) + tail"},
		{name: "empty tool name", tool: "", json: `{"a":1}`},
	},
}

func hugeObject(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprintf("k%05d", i)] = i
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func describe(c goldenCase) string {
	switch {
	case c.note != "":
		return "(" + c.note + ")"
	case c.input == nil && c.json == "":
		return "nil"
	}
	return c.json
}

func TestGolden(t *testing.T) {
	for file, cases := range goldenFiles {
		t.Run(file, func(t *testing.T) {
			var out bytes.Buffer
			for _, c := range cases {
				in := c.decode(t)
				fmt.Fprintf(&out, "### %s\n", c.name)
				fmt.Fprintf(&out, "tool:  %q\n", c.tool)
				fmt.Fprintf(&out, "input: %s\n", describe(c))
				if c.opts.EOL != "" {
					fmt.Fprintf(&out, "eol:   %q\n", c.opts.EOL)
				}
				if c.opts.AmbiguousWide {
					fmt.Fprintf(&out, "ambiwidth: double\n")
				}
				for _, w := range goldenWidths {
					got := Format(c.tool, in, w, c.opts)
					checkLine(t, fmt.Sprintf("%s/%s@%d", file, c.name, w), got, w, c.opts.AmbiguousWide)
					fmt.Fprintf(&out, "%3d |%s|\n", w, got)
				}
				out.WriteString("\n")
			}
			compareGolden(t, filepath.Join("testdata", file+".golden"), out.Bytes())
		})
	}
}

// TestGoldenCoversBuiltins makes sure a new built-in formatter gets a golden file.
func TestGoldenCoversBuiltins(t *testing.T) {
	for _, name := range BuiltinTools() {
		if _, ok := goldenFiles[name]; !ok {
			t.Errorf("built-in formatter %q has no golden cases", name)
		}
	}
}

// checkLine asserts the invariants of every preview line.
func checkLine(t *testing.T, what, got string, width int, ambiWide bool) {
	t.Helper()
	c := narrowCells
	if ambiWide {
		c = wideCells
	}
	if w := c.StringWidth(got); w > width {
		t.Errorf("%s: width(%q) = %d, want <= %d", what, got, w, width)
	}
	if !ambiWide && !runewidth.DefaultCondition.EastAsianWidth {
		if w := runewidth.StringWidth(got); w > width {
			t.Errorf("%s: runewidth.StringWidth(%q) = %d, want <= %d", what, got, w, width)
		}
	}
	if !utf8.ValidString(got) {
		t.Errorf("%s: %q is not valid UTF-8", what, got)
	}
	for _, r := range got {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 {
			t.Errorf("%s: %q contains control or line-break rune %U", what, got, r)
			break
		}
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./preview -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test ./preview -update rewrites it):\n%s", path, diffLines(string(want), string(got)))
	}
}

// diffLines lists the lines that differ, with their line numbers.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}
