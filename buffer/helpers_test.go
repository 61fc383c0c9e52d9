package buffer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sketch is a compact one-line-per-node dump used by the table tests.
func sketch(d *Document) string {
	var b strings.Builder
	if fm := d.Frontmatter; fm != nil {
		fmt.Fprintf(&b, "fm %s %d-%d %q\n", fm.Language, fm.StartLine, fm.EndLine, fm.Code)
	}
	if t := d.Preamble; t != nil {
		fmt.Fprintf(&b, "pre %d-%d %q\n", t.StartLine, t.EndLine, t.Value())
	}
	for _, m := range d.Messages {
		fmt.Fprintf(&b, "@%s %d-%d\n", m.Role, m.StartLine, m.EndLine)
		for _, s := range m.Segments {
			b.WriteString("  ")
			switch s := s.(type) {
			case *Text:
				fmt.Fprintf(&b, "text %d-%d %q", s.StartLine, s.EndLine, s.Value())
			case *Thinking:
				fmt.Fprintf(&b, "think %d-%d %q", s.StartLine, s.EndLine, s.Content())
				if s.Redacted {
					b.WriteString(" redacted")
				}
				if s.Provider != "" {
					fmt.Fprintf(&b, " sig=%s:%s", s.Provider, s.Signature)
				}
			case *Aborted:
				fmt.Fprintf(&b, "aborted %d %q", s.StartLine, s.Message)
			case *Summary:
				fmt.Fprintf(&b, "summary %d-%d %q %q", s.StartLine, s.EndLine, s.Note, s.Content())
				if d.Summary == s {
					b.WriteString(" (in force)")
				}
			case *ToolUse:
				fmt.Fprintf(&b, "use %s %s %d-%d %s", s.Name, s.ID, s.HeaderLine, s.EndLine, inputJSON(s.Input()))
			case *ToolResult:
				st := string(s.Status)
				if st == "" {
					st = "done"
				}
				fmt.Fprintf(&b, "result %s %d-%d %s", s.ToolUseID, s.HeaderLine, s.EndLine, st)
				if s.IsError {
					b.WriteString(" error")
				}
				if s.HeaderForm {
					b.WriteString(" header")
				}
				fmt.Fprintf(&b, " %q", s.Content)
			default:
				fmt.Fprintf(&b, "%T", s)
			}
			b.WriteString("\n")
		}
	}
	for _, g := range d.Diagnostics {
		fmt.Fprintf(&b, "! %d:%d %s %s: %s\n", g.Line, g.Col, g.Severity, g.Kind, g.Message)
	}
	return b.String()
}

func inputJSON(m map[string]any) string {
	if m == nil {
		return "nil"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}

// dump is the detailed, readable dump written to the golden files.
func dump(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "document: %d lines\n", d.LineCount)
	body := func(indent, s string) {
		for _, l := range strings.Split(s, "\n") {
			fmt.Fprintf(&b, "%s| %s\n", indent, l)
		}
	}
	if fm := d.Frontmatter; fm != nil {
		fmt.Fprintf(&b, "frontmatter %d-%d language=%q\n", fm.StartLine, fm.EndLine, fm.Language)
		if fm.EndLine-fm.StartLine > 1 {
			body("  ", fm.Code)
		}
	}
	if t := d.Preamble; t != nil {
		fmt.Fprintf(&b, "preamble %d-%d\n", t.StartLine, t.EndLine)
		body("  ", t.Value())
	}
	for _, m := range d.Messages {
		fmt.Fprintf(&b, "message %s %d-%d\n", m.Role, m.StartLine, m.EndLine)
		for _, s := range m.Segments {
			switch s := s.(type) {
			case *Text:
				fmt.Fprintf(&b, "  text %d-%d\n", s.StartLine, s.EndLine)
				body("    ", s.Value())
			case *Thinking:
				fmt.Fprintf(&b, "  thinking %d-%d provider=%q signature=%q redacted=%v\n",
					s.StartLine, s.EndLine, s.Provider, s.Signature, s.Redacted)
				if s.EndLine-s.StartLine > 1 {
					body("    ", s.Content())
				}
			case *Aborted:
				fmt.Fprintf(&b, "  aborted %d message=%q\n", s.StartLine, s.Message)
			case *Summary:
				fmt.Fprintf(&b, "  summary %d-%d note=%q in_force=%v\n", s.StartLine, s.EndLine, s.Note, d.Summary == s)
				if s.EndLine-s.StartLine > 1 {
					body("    ", s.Content())
				}
			case *ToolUse:
				fmt.Fprintf(&b, "  tool_use %d-%d name=%q id=%q fence=%d len=%d language=%q suffix=%q\n",
					s.HeaderLine, s.EndLine, s.Name, s.ID, s.FenceLine, s.FenceLen, s.Language, s.Suffix)
				fmt.Fprintf(&b, "    input %s\n", inputJSON(s.Input()))
			case *ToolResult:
				fmt.Fprintf(&b, "  tool_result %d-%d id=%q status=%q error=%v header_form=%v fence=%d len=%d language=%q info=%q suffix=%q\n",
					s.HeaderLine, s.EndLine, s.ToolUseID, s.Status, s.IsError, s.HeaderForm, s.FenceLine, s.FenceLen, s.Language, s.Info, s.Suffix)
				if s.EndLine-s.FenceLine > 1 {
					body("    ", s.Content)
				}
			}
		}
	}
	ids := func(us []*ToolUse) string {
		var out []string
		for _, u := range us {
			out = append(out, u.ID)
		}
		return strings.Join(out, " ")
	}
	if d.Summary != nil {
		fmt.Fprintf(&b, "tool uses sent: %s\n", ids(d.ToolUses()))
		fmt.Fprintf(&b, "tool uses in the file: %s\n", ids(d.Whole().ToolUses()))
	}
	fmt.Fprintf(&b, "unresolved: %s\n", ids(d.Unresolved()))
	fmt.Fprintf(&b, "incomplete: %s\n", ids(d.Incomplete()))
	fmt.Fprintf(&b, "diagnostics: %d\n", len(d.Diagnostics))
	for _, g := range d.Diagnostics {
		fmt.Fprintf(&b, "  %s [%s %s]\n", g, g.Severity, g.Kind)
	}
	return b.String()
}

// splitFile turns file contents into buffer lines the way Neovim does: a
// final newline ends the last line rather than starting an empty one.
func splitFile(data string) []string {
	if data == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(data, "\n"), "\n")
}

// chatFiles lists the .chat files of the repository's testdata folders.
func chatFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../testdata/*.chat", "../testdata/parser/*.chat"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no .chat files under ../testdata")
	}
	return files
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return splitFile(string(data))
}
