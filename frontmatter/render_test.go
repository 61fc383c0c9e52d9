package frontmatter

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"
)

func pt(s string) Piece { return Piece{Kind: PieceText, Text: s} }
func pe(s string) Piece { return Piece{Kind: PieceExpr, Text: s} }
func pc(s string) Piece { return Piece{Kind: PieceCode, Text: s} }

// at gives pieces consecutive buffer lines from line.
func at(line int, ps ...Piece) []Piece {
	for i := range ps {
		ps[i].Line = line + i
	}
	return ps
}

// text joins what a template wrote, slots as [slot i].
func text(outs []Out) string {
	var b strings.Builder
	for _, o := range outs {
		if o.Slot >= 0 {
			fmt.Fprintf(&b, "[slot %d]", o.Slot)
			continue
		}
		b.WriteString(o.Text)
	}
	return b.String()
}

// files is an IncludeFunc over a map of templates written in a small
// notation: "{{" and "{%" pieces split by the test's own splitter.
func files(m map[string]string) IncludeFunc {
	return func(from, p string) (string, []Piece, error) {
		name := path.Clean(path.Join(path.Dir(from), p))
		if from == "" {
			name = path.Clean(p)
		}
		src, ok := m[name]
		if !ok {
			return "", nil, errors.New("file not found")
		}
		return name, splitForTest(src), nil
	}
}

// splitForTest cuts "a {{ x }} b {% c %}" into pieces, one per line number.
func splitForTest(s string) []Piece {
	var out []Piece
	for line := 1; s != ""; line++ {
		i := strings.IndexAny(s, "{")
		if i < 0 || i+1 >= len(s) || (s[i+1] != '{' && s[i+1] != '%') {
			out = append(out, Piece{Kind: PieceText, Text: s, Line: line})
			break
		}
		if i > 0 {
			out = append(out, Piece{Kind: PieceText, Text: s[:i], Line: line})
		}
		kind, closer := PieceExpr, "}}"
		if s[i+1] == '%' {
			kind, closer = PieceCode, "%}"
		}
		j := strings.Index(s[i+2:], closer) + i + 2
		out = append(out, Piece{Kind: kind, Text: s[i+2 : j], Line: line})
		s = s[j+2:]
	}
	return out
}

func TestRender(t *testing.T) {
	e := NewEvaluator(quiet)
	vars := map[string]any{"name": "Ada", "items": []any{"a", "b", "c"}}
	inc := files(map[string]string{
		"greet.md":         "Hello {{ who }}!",
		"dir/outer.md":     "<{{ include('inner.md', { n = 2 }) }}>",
		"dir/inner.md":     "{% for i = 1, n do %}i{% end %}",
		"leak.md":          "{{ name }}",
		"self.md":          "{{ include('self.md') }}",
		"printing.md":      "{% print('p', 1, true) %}",
		"bad.md":           "x\n{{ 1 + }}",
		"dir/../escape.md": "",
	})
	cases := []struct {
		name   string
		pieces []Piece
		want   string
		err    string
	}{
		{"text and expressions", at(1, pt("hi "), pe(" name "), pt("!")), "hi Ada!", ""},
		{"loop", at(1, pc(" for _, it in ipairs(items) do "), pt("- "), pe(" it "), pt("\n"), pc(" end ")), "- a\n- b\n- c\n", ""},
		{"condition", at(1, pc(" if #items > 5 then "), pt("many"), pc(" else "), pt("few"), pc(" end ")), "few", ""},
		{"else and elseif", at(1, pc(" if #items > 5 then "), pt("many"), pc(" elseif #items > 2 then "), pt("some"), pc(" else "), pt("few"), pc(" end ")), "some", ""},
		{"a block that starts with a parenthesis", at(1, pc(" x = 1 "), pc(" (function() x = 2 end)() "), pe(" x ")), "2", ""},
		{"slot in a loop", at(1, pc(" for i = 1, 2 do "), Piece{Kind: PieceSlot}, pc(" end ")), "[slot 1][slot 1]", ""},
		{"print writes", at(1, pc(" print('x', 2) ")), "x\t2\n", ""},
		{"include", at(1, pe(" include('greet.md', { who = name }) ")), "Hello Ada!", ""},
		{"nested include resolves from the including file", at(1, pe(" include('dir/outer.md') ")), "<ii>", ""},
		{"print inside an include", at(1, pe(" include('printing.md') ")), "p\t1\ttrue\n", ""},
		{"an include sees only what it is passed", at(1, pe(" include('leak.md') ")), "", "Undefined variable 'name'"},
		{"an include that includes itself", at(1, pe(" include('self.md') ")), "", "deeper than 8"},
		{"missing include", at(1, pe(" include('nope.md') ")), "", "include('nope.md'): file not found"},
		{"an include's error names its line", at(1, pe(" include('bad.md') ")), "", "include('bad.md') line 2"},
		{"nil", at(1, pe(" nil ")), "", "is nil"},
		{"sandbox", at(1, pc(" os.execute('id') ")), "", "Undefined variable 'os'"},
		{"syntax error", at(1, pt("a"), pc(" for i = 1, 2 "), pt("b")), "", "Lua"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.NewRenderer(vars, inc, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			outs, err := r.Render(context.Background(), c.pieces)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q (wrote %q)", err, c.err, text(outs))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := text(outs); got != c.want {
				t.Errorf("wrote %q, want %q", got, c.want)
			}
		})
	}
}

// Globals a {% %} block assigns stay for the later messages of the send.
func TestRenderPersistsAcrossMessages(t *testing.T) {
	r, err := NewEvaluator(quiet).NewRenderer(nil, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Render(context.Background(), at(1, pc(" count = 41 "))); err != nil {
		t.Fatal(err)
	}
	outs, err := r.Render(context.Background(), at(5, pc(" count = count + 1 "), pe(" count ")))
	if err != nil || text(outs) != "42" {
		t.Fatalf("second message wrote %q, %v; want 42", text(outs), err)
	}
}

// The line of a failure is the buffer line of the piece that failed, also
// inside a multi-line block.
func TestRenderErrorLine(t *testing.T) {
	r, err := NewEvaluator(quiet).NewRenderer(nil, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Render(context.Background(), []Piece{
		{Kind: PieceText, Text: "a\n", Line: 10},
		{Kind: PieceCode, Text: " x = 1\n y = nil + 1\n", Line: 11},
	})
	var re *RenderError
	if !errors.As(err, &re) || re.Line != 12 {
		t.Fatalf("error %#v, want one on line 12", err)
	}
	// A block left open is reported on the last line, as such.
	_, err = r.Render(context.Background(), []Piece{
		{Kind: PieceCode, Text: " x = 1 ", Line: 20},
		{Kind: PieceText, Text: "a\n", Line: 20},
		{Kind: PieceCode, Text: " for i = 1, 3 ", Line: 21},
	})
	if !errors.As(err, &re) || re.Line != 21 || !strings.Contains(re.Msg, "end of the template") {
		t.Fatalf("error %#v, want one on line 21 at the end of the template", err)
	}
}

// Attacks: a template that writes without end, loops without end or
// includes without end is stopped by the send's budgets.
func TestRenderBombs(t *testing.T) {
	// Only the "time" bomb meets the deadline: the others are stopped by their
	// own limit, which must come first however loaded the machine is, so their
	// deadline is one no run reaches.
	quick := NewEvaluator(Limits{Deadline: 200 * time.Millisecond, CallDeadline: time.Second})
	patient := NewEvaluator(Limits{Deadline: time.Minute, CallDeadline: time.Minute})
	inc := files(map[string]string{"a.md": "{{ include('a.md') }}{{ include('a.md') }}"})
	cases := []struct {
		name   string
		pieces []Piece
		want   error
		msg    string
		e      *Evaluator
	}{
		{"output", at(1, pc(" for i = 1, 1e9 do "), pt("xxxxxxxx"), pc(" end ")), ErrTemplateBytes, "", patient},
		{"print", at(1, pc(" while true do print(string.rep('x', 1000)) end ")), ErrTemplateBytes, "", patient},
		{"time", at(1, pc(" while true do end ")), nil, "did not finish", quick},
		{"includes", at(1, pe(" include('a.md') ")), nil, "include", patient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.e.NewRenderer(nil, inc, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = r.Render(context.Background(), c.pieces)
			if err == nil {
				t.Fatal("rendered")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %q", err, c.msg)
			}
		})
	}
	// The press's budget, spent before: nothing runs.
	r, _ := quick.NewRenderer(nil, nil, 1<<20)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Render(ctx, at(1, pe(" 1 "))); !errors.Is(err, ErrTemplateBudget) {
		t.Fatalf("spent budget: %v", err)
	}
}
