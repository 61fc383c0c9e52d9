package preview

import (
	"sort"
	"strings"
)

// builtins holds the summary writers of the built-in tools (SPEC §7). Each
// writes parts separated by two spaces and ends with "  # <label>" when the
// input has a label; absent fields (missing or JSON null) and empty strings
// leave their part out.
var builtins = map[string]func(*line, map[string]any){
	"bash": func(l *line, in map[string]any) {
		// $ make test  # running tests
		p := parts{l: l}
		if v, ok := trimmed(in, "command"); ok {
			p.word()
			l.raw("$ ")
			l.trimmedValue(v)
		}
		p.label(in)
	},
	"read": func(l *line, in map[string]any) {
		// src/config.lua  +0,50  # reading config
		p := parts{l: l}
		if v, ok := field(in, "path"); ok {
			p.word()
			l.value(v)
		}
		p.end()
		offset, hasOffset := field(in, "offset")
		limit, hasLimit := field(in, "limit")
		if hasOffset || hasLimit {
			p.word()
			l.raw("+")
			if hasOffset {
				l.value(offset)
			} else {
				l.raw("0")
			}
			if hasLimit {
				l.raw(",")
				l.value(limit)
			}
		}
		p.label(in)
	},
	"edit": func(l *line, in map[string]any) {
		// config.lua  # fixing typo
		p := parts{l: l}
		if v, ok := field(in, "path"); ok {
			p.word()
			l.value(v)
		}
		p.label(in)
	},
	"write": func(l *line, in map[string]any) {
		// output.txt (2.3KB)  # saving log
		p := parts{l: l}
		if v, ok := field(in, "path"); ok {
			p.word()
			l.value(v)
		}
		// The size is shown for any string content, "" included (0B).
		switch c := in["content"].(type) {
		case nil:
		case string:
			p.word()
			l.raw("(" + FormatSize(int64(len(c))) + ")")
		default:
			if classify(c) == scalar {
				p.word()
				l.raw("(" + FormatSize(int64(len(scalarText(c)))) + ")")
			}
		}
		p.label(in)
	},
	"grep": func(l *line, in map[string]any) {
		// /TODO/ in src/ (*.go)  # finding todos
		p := parts{l: l}
		if v, ok := field(in, "pattern"); ok {
			p.word()
			l.raw("/")
			l.value(v)
			l.raw("/")
		}
		p.in(in)
		if v, ok := field(in, "glob"); ok {
			p.word()
			l.raw("(")
			l.value(v)
			l.raw(")")
		}
		p.label(in)
	},
	"find": func(l *line, in map[string]any) {
		// *.go in src/  # listing sources
		p := parts{l: l}
		if v, ok := field(in, "pattern"); ok {
			p.word()
			l.value(v)
		}
		p.in(in)
		p.label(in)
	},
	"ls": func(l *line, in map[string]any) {
		// src/ (depth 2)  # looking around
		p := parts{l: l}
		if v, ok := field(in, "path"); ok {
			p.word()
			l.value(v)
		}
		// Depth 1 is the default, so only deeper listings say so.
		if d, ok := number(in["max_depth"]); ok && d > 1 {
			p.word()
			l.raw("(depth ")
			l.value(in["max_depth"])
			l.raw(")")
		}
		p.label(in)
	},
	"diagnostics": func(l *line, in map[string]any) {
		// main.go  errors and worse  # checking the build
		p := parts{l: l}
		p.word()
		if v, ok := field(in, "path"); ok {
			l.value(v)
		} else {
			l.raw("open files")
		}
		p.end()
		if v, ok := trimmed(in, "severity"); ok {
			p.word()
			l.raw(">= ")
			l.trimmedValue(v)
		}
		p.label(in)
	},
	"lsp": func(l *line, in map[string]any) {
		// references main.go:14 Helper  # who calls it
		// workspace_symbols "Helper"
		p := parts{l: l}
		if v, ok := trimmed(in, "operation"); ok {
			p.word()
			l.trimmedValue(v)
		}
		p.end()
		if v, ok := field(in, "path"); ok {
			p.word()
			l.value(v)
			if n, ok := field(in, "line"); ok {
				l.raw(":")
				l.value(n)
			}
		}
		if v, ok := trimmed(in, "symbol"); ok {
			p.word()
			l.trimmedValue(v)
		} else if c, ok := field(in, "column"); ok {
			p.word()
			l.raw("col ")
			l.value(c)
		}
		if v, ok := trimmed(in, "query"); ok {
			p.word()
			l.raw("\"")
			l.trimmedValue(v)
			l.raw("\"")
		}
		p.label(in)
	},
	"buffers": func(l *line, in map[string]any) {
		// open files  # before editing
		p := parts{l: l}
		p.word()
		l.raw("open files")
		p.label(in)
	},
	"calculator": func(l *line, in map[string]any) {
		// 2 + 2
		p := parts{l: l}
		if v, ok := trimmed(in, "expression"); ok {
			p.word()
			l.trimmedValue(v)
		}
		p.label(in)
	},
	"calculator_async": func(l *line, in map[string]any) {
		// sqrt(16)  # 500ms
		p := parts{l: l}
		if v, ok := trimmed(in, "expression"); ok {
			p.word()
			l.trimmedValue(v)
		}
		p.end()
		if v, ok := field(in, "delay"); ok {
			p.word()
			l.raw("# ")
			l.value(v)
			l.raw("ms")
		}
		p.label(in)
	},
}

// BuiltinTools lists, sorted, the tools that have a built-in formatter.
func BuiltinTools() []string {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// parts writes a summary made of parts separated by two spaces, each part
// made of words separated by one space.
type parts struct {
	l      *line
	n      int  // parts begun
	inPart bool // a part is open
}

// word starts a word, opening a part if none is open.
func (p *parts) word() {
	if p.inPart {
		p.l.raw(" ")
		return
	}
	if p.n > 0 {
		p.l.raw("  ")
	}
	p.n++
	p.inPart = true
}

// end closes the open part, if any.
func (p *parts) end() { p.inPart = false }

// in writes "in <path>" when the input names a search path.
func (p *parts) in(in map[string]any) {
	if v, ok := field(in, "path"); ok {
		p.word()
		p.l.raw("in ")
		p.l.value(v)
	}
}

// label writes the closing "# <label>" part.
func (p *parts) label(in map[string]any) {
	p.end()
	if v, ok := trimmed(in, "label"); ok {
		p.word()
		p.l.raw("# ")
		p.l.trimmedValue(v)
	}
	p.end()
}

// field returns in[key] unless it is absent or an empty string.
func field(in map[string]any, key string) (any, bool) {
	v := in[key]
	if classify(v) == absent {
		return nil, false
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, false
	}
	return v, true
}

// trimmed is field for fields whose surrounding white space means nothing
// (a command, an expression, a label): a value that is only white space is
// absent, and the caller writes it with trimmedValue.
func trimmed(in map[string]any, key string) (any, bool) {
	v, ok := field(in, key)
	if !ok {
		return nil, false
	}
	if s, isString := v.(string); isString && strings.TrimSpace(s) == "" {
		return nil, false
	}
	return v, true
}

// trimmedValue is value with the surrounding white space of a string removed.
func (l *line) trimmedValue(v any) {
	if s, ok := v.(string); ok {
		l.text(strings.TrimSpace(s))
		return
	}
	l.value(v)
}

// value writes a field's value unquoted: scalars as text, tables summarised.
func (l *line) value(v any) {
	switch x := v.(type) {
	case string:
		l.text(x)
		return
	}
	switch classify(v) {
	case scalar:
		l.text(scalarText(v))
	case table:
		l.writeTable(v)
	}
}
