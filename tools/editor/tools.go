package editor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/tools"
)

// Options for a call: the engine's current setup.
type OptionsFunc func() Options

// DiagnosticsInput is the input of diagnostics.
type DiagnosticsInput struct {
	Label    string  `json:"label" desc:"A short human-readable label for this operation"`
	Path     *string `json:"path" desc:"The file to report on (absolute or relative to the chat file's directory); null for every file open in the editor under the project folder"`
	Severity *string `json:"severity" desc:"The lowest severity to include: error, warning, info or hint (null: all)"`
}

// LSPInput is the input of lsp.
type LSPInput struct {
	Label     string  `json:"label" desc:"A short human-readable label for this operation"`
	Operation string  `json:"operation" desc:"definition, references, hover (type and documentation), document_symbols (the file's outline) or workspace_symbols (search the project by name)"`
	Path      *string `json:"path" desc:"The file (absolute or relative to the chat file's directory); null only for workspace_symbols"`
	Line      *int    `json:"line" desc:"1-based line of the symbol, for definition, references and hover"`
	Symbol    *string `json:"symbol" desc:"The identifier on that line to ask about (its first whole-word occurrence); null to give column instead"`
	Column    *int    `json:"column" desc:"1-based byte column on that line, when symbol is null"`
	Query     *string `json:"query" desc:"workspace_symbols: the name, or part of it, to search for"`
}

// BuffersInput is the input of buffers.
type BuffersInput struct {
	Label string `json:"label" desc:"A short human-readable label for this operation"`
}

var severityRank = map[string]int{"error": 1, "warning": 2, "info": 3, "hint": 4}

// Diagnostics is the diagnostics built-in.
func Diagnostics(a Asker, opts OptionsFunc) tools.Tool {
	return tools.Typed(tools.Spec{
		Name: "diagnostics",
		Description: "The editor's diagnostics (errors, warnings from language servers and linters, as Neovim shows them) " +
			"for one file, or for every file open in the editor under the project folder, with positions (line:column) and sources. " +
			"A file not open in the editor is opened hidden for a running language server, if one serves it.",
		Tags:    []string{"editor", "readonly"},
		Enabled: true,
		Timeout: 30 * time.Second,
	}, func(ctx context.Context, call tools.Call, in DiagnosticsInput) (tools.Output, error) {
		return runDiagnostics(ctx, a, opts().withDefaults(), call, in)
	})
}

// LSP is the lsp built-in.
func LSP(a Asker, opts OptionsFunc) tools.Tool {
	return tools.Typed(tools.Spec{
		Name: "lsp",
		Description: "Ask the editor's running language servers about code: definition, references, hover (type and docs), " +
			"document_symbols (outline of a file) or workspace_symbols (find a symbol by name). Name the position by path, " +
			"1-based line and the identifier (symbol) on it. Answers list path:line:column with the line's text.",
		Tags:     []string{"editor", "readonly", "lsp"},
		Enabled:  true,
		Timeout:  30 * time.Second,
		Requires: []string{Requirement},
	}, func(ctx context.Context, call tools.Call, in LSPInput) (tools.Output, error) {
		return runLSP(ctx, a, opts().withDefaults(), call, in)
	})
}

// Buffers is the buffers built-in.
func Buffers(a Asker, opts OptionsFunc) tools.Tool {
	return tools.Typed(tools.Spec{
		Name: "buffers",
		Description: "The files open in the user's editor, with unsaved changes flagged (the editor's text differs from the file on disk: " +
			"ask the user before changing such a file on disk), which one is current or visible, filetype, line count and language servers.",
		Tags:    []string{"editor", "readonly"},
		Enabled: true,
		Timeout: 30 * time.Second,
	}, func(ctx context.Context, call tools.Call, in BuffersInput) (tools.Output, error) {
		return runBuffers(ctx, a, opts().withDefaults(), call)
	})
}

// All returns the three tools.
func All(a Asker, opts OptionsFunc) []tools.Tool {
	return []tools.Tool{Diagnostics(a, opts), LSP(a, opts), Buffers(a, opts)}
}

func answerError(a Answer) error {
	switch {
	case a.TimedOut:
		return tools.Failf("The editor gave no answer in time: %s", a.Error)
	case a.Internal:
		return &tools.Internal{Err: errors.New(a.Error)}
	case a.Error != "":
		return errors.New(a.Error)
	}
	return nil
}

func askErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return tools.Failf("The editor gave no answer in time")
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &tools.Internal{Err: fmt.Errorf("ask the editor: %w", err)}
}

func runDiagnostics(ctx context.Context, a Asker, o Options, call tools.Call, in DiagnosticsInput) (tools.Output, error) {
	r, err := newReach(call)
	if err != nil {
		return tools.Output{}, err
	}
	q := Query{Op: "diagnostics", Under: r.project()}
	if in.Severity != nil && *in.Severity != "" {
		s := strings.ToLower(*in.Severity)
		if severityRank[s] == 0 {
			return tools.Output{}, tools.Failf("Unknown severity %q: use error, warning, info or hint", *in.Severity)
		}
		q.Severity = s
	}
	var shown string
	if in.Path != nil && *in.Path != "" {
		resolved, err := r.checkInput(*in.Path)
		if err != nil {
			return tools.Output{}, err
		}
		q.Path, shown = resolved, *in.Path
		q.SettleMS = 300
	}
	ans, err := ask(ctx, a, o, q)
	if err != nil {
		return tools.Output{}, askErr(err)
	}
	if ans.Unavailable != "" {
		return tools.Output{Text: fmt.Sprintf("%s is not open in the editor and no running language server serves it: the editor knows no diagnostics for it.", shown)}, nil
	}
	if err := answerError(ans); err != nil {
		return tools.Output{}, err
	}
	ds, hidden := r.filterDiagnostics(ans.Diagnostics)
	var b strings.Builder
	counts := map[string]int{}
	files := map[string]bool{}
	for _, d := range ds {
		fmt.Fprintf(&b, "%s:%d:%d: %s: %s", r.show(d.Path), d.Lnum, d.Col, d.Severity, oneLine(d.Message))
		if src := sourceOf(d); src != "" {
			fmt.Fprintf(&b, " [%s]", src)
		}
		b.WriteByte('\n')
		counts[d.Severity]++
		files[d.Path] = true
	}
	where := "the files open in the editor under " + r.project()
	if q.Path != "" {
		where = shown
	}
	if len(ds) == 0 {
		fmt.Fprintf(&b, "No diagnostics in %s", where)
		if q.Severity != "" {
			fmt.Fprintf(&b, " at severity %s or above", q.Severity)
		}
		b.WriteString(".\n")
	} else {
		fmt.Fprintf(&b, "%s in %d file(s).\n", countText(counts), len(files))
	}
	if ans.Dropped > 0 {
		fmt.Fprintf(&b, "(%d more not shown: at most %d are listed)\n", ans.Dropped, o.MaxResults)
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d in files the sandbox does not let tools read were left out)\n", hidden)
	}
	return tools.Output{Text: strings.TrimRight(b.String(), "\n")}, nil
}

func sourceOf(d Diagnostic) string {
	src := d.Source
	if d.Code != "" {
		if src != "" {
			src += " "
		}
		src += d.Code
	}
	return src
}

// countText is "2 errors, 1 warning".
func countText(counts map[string]int) string {
	var parts []string
	for _, s := range []string{"error", "warning", "info", "hint"} {
		n := counts[s]
		if n == 0 {
			continue
		}
		word := s
		if n > 1 {
			word += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, word))
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

var lspOps = map[string]bool{"definition": true, "references": true, "hover": true, "document_symbols": true, "workspace_symbols": true}

func runLSP(ctx context.Context, a Asker, o Options, call tools.Call, in LSPInput) (tools.Output, error) {
	op := strings.ToLower(strings.TrimSpace(in.Operation))
	if !lspOps[op] {
		return tools.Output{}, tools.Failf("Unknown operation %q: use definition, references, hover, document_symbols or workspace_symbols", in.Operation)
	}
	r, err := newReach(call)
	if err != nil {
		return tools.Output{}, err
	}
	q, shown, err := lspQuery(r, o, op, in)
	if err != nil {
		return tools.Output{}, err
	}
	ans, err := ask(ctx, a, o, q)
	if err != nil {
		return tools.Output{}, askErr(err)
	}
	if ans.Unavailable != "" {
		if shown == "" {
			return tools.Output{}, tools.Failf("No running language server covers the project folder")
		}
		return tools.Output{}, tools.Failf("No running language server serves %s (flemma uses the servers running in the editor; it starts none)", shown)
	}
	if err := answerError(ans); err != nil {
		return tools.Output{}, err
	}
	rep := lspReport{r: r, o: o, q: q, ans: ans, shown: shown, servers: strings.Join(ans.Clients, ", ")}
	switch op {
	case "hover":
		if err := rep.hover(); err != nil {
			return tools.Output{}, err
		}
	case "document_symbols", "workspace_symbols":
		rep.symbols()
	default: // definition, references
		rep.locations()
	}
	for _, e := range ans.Errors {
		fmt.Fprintf(&rep.b, "\n(error from %s)", oneLine(e))
	}
	return tools.Output{Text: strings.TrimRight(rep.b.String(), "\n")}, nil
}

// lspQuery is the question an lsp call asks the editor, from its input:
// a query for workspace_symbols; else a file (shown: as the input names
// it), and for all but document_symbols a position in it.
func lspQuery(r *reach, o Options, op string, in LSPInput) (q Query, shown string, err error) {
	q = Query{Op: "lsp", Method: op, Under: r.project(), MaxBytes: o.MaxBytes}
	if op == "workspace_symbols" {
		if in.Query == nil || strings.TrimSpace(*in.Query) == "" {
			return q, "", errors.New("workspace_symbols needs a query (the name to search for)")
		}
		q.Query = strings.TrimSpace(*in.Query)
		return q, "", nil
	}
	if in.Path == nil || *in.Path == "" {
		return q, "", fmt.Errorf("%s needs a path", op)
	}
	resolved, err := r.checkInput(*in.Path)
	if err != nil {
		return q, "", err
	}
	q.Path = resolved
	if op != "document_symbols" {
		if err := lspPosition(&q, op, in); err != nil {
			return q, "", err
		}
	}
	return q, *in.Path, nil
}

// lspPosition sets the place q asks about: a line (1-based), and the
// symbol on it, else a column (1-based).
func lspPosition(q *Query, op string, in LSPInput) error {
	if in.Line == nil || *in.Line < 1 {
		return fmt.Errorf("%s needs a line (1-based) and the symbol on it", op)
	}
	q.Line = *in.Line
	switch {
	case in.Symbol != nil && strings.TrimSpace(*in.Symbol) != "":
		q.Symbol = strings.TrimSpace(*in.Symbol)
	case in.Column != nil && *in.Column >= 1:
		q.Column = *in.Column
	default:
		return fmt.Errorf("%s needs the symbol on line %d (or its column)", op, q.Line)
	}
	return nil
}

// lspReport writes the editor's answer to an lsp question as the result
// text, leaving out what lies in files the sandbox does not let tools read.
type lspReport struct {
	b       strings.Builder
	r       *reach
	o       Options
	q       Query
	ans     Answer
	shown   string // the file as the input names it ("" for workspace_symbols)
	servers string // the language servers that answered
}

// hover is the hover text and where the symbol is defined; refused when
// it is defined in a file the sandbox does not let tools read.
func (p *lspReport) hover() error {
	for _, d := range p.ans.Definitions {
		if _, ok := p.r.check(d.Path); !ok {
			return tools.Failf("Sandbox: hover denied – %s is defined in a file the sandbox does not let tools read", symbolName(p.q))
		}
	}
	text := strings.TrimSpace(p.ans.Hover)
	if text == "" {
		fmt.Fprintf(&p.b, "No hover information for %s on line %d of %s.", symbolName(p.q), p.q.Line, p.shown)
		return nil
	}
	p.b.WriteString(text)
	if defs := p.r.locations(p.ans.Definitions); len(defs) > 0 {
		fmt.Fprintf(&p.b, "\n\nDefined at %s", p.r.place(defs[0]))
	}
	return nil
}

// symbols lists document_symbols' or workspace_symbols' answer: the
// project's symbols first, in the server's order, each with its place,
// kind, container and a short detail.
func (p *lspReport) symbols() {
	r := p.r
	syms := r.locations(p.ans.Symbols)
	hidden := len(p.ans.Symbols) - len(syms)
	sort.SliceStable(syms, func(i, j int) bool { return r.inProject(syms[i].Path) && !r.inProject(syms[j].Path) })
	switch {
	case len(syms) == 0 && p.q.Method == "workspace_symbols":
		fmt.Fprintf(&p.b, "No symbol matches %q (%s).", p.q.Query, p.servers)
	case len(syms) == 0:
		fmt.Fprintf(&p.b, "No symbols in %s (%s).", p.shown, p.servers)
	default:
		fmt.Fprintf(&p.b, "%d symbol(s) (%s):\n", len(syms), p.servers)
		for _, s := range syms {
			name := s.Name
			if s.Container != "" {
				name = s.Container + "." + name
			}
			fmt.Fprintf(&p.b, "%s: %s %s", r.place(s), strings.ToLower(s.Kind), name)
			if d := oneLine(s.Detail); d != "" && len(d) < 200 {
				fmt.Fprintf(&p.b, " — %s", d)
			}
			p.b.WriteByte('\n')
		}
	}
	note(&p.b, p.ans.Dropped, hidden, p.o)
}

// locations lists definition's or references' answer: each place with its
// line's text.
func (p *lspReport) locations() {
	locs := p.r.locations(p.ans.Locations)
	hidden := len(p.ans.Locations) - len(locs)
	what := "definition"
	if p.q.Method == "references" {
		what = "reference"
	}
	if len(locs) == 0 {
		fmt.Fprintf(&p.b, "No %s found for %s on line %d of %s (%s).", what, symbolName(p.q), p.q.Line, p.shown, p.servers)
	} else {
		fmt.Fprintf(&p.b, "%d %s(s) of %s (%s):\n", len(locs), what, symbolName(p.q), p.servers)
		for _, l := range locs {
			fmt.Fprintf(&p.b, "%s: %s\n", p.r.place(l), strings.TrimSpace(l.Text))
		}
	}
	note(&p.b, p.ans.Dropped, hidden, p.o)
}

func note(b *strings.Builder, dropped, hidden int, o Options) {
	if dropped > 0 {
		fmt.Fprintf(b, "(%d more not shown: at most %d are listed)\n", dropped, o.MaxResults)
	}
	if hidden > 0 {
		fmt.Fprintf(b, "(%d in files the sandbox does not let tools read, or that no longer exist, were left out)\n", hidden)
	}
}

func symbolName(q Query) string {
	if q.Symbol != "" {
		return q.Symbol
	}
	return fmt.Sprintf("column %d", q.Column)
}

func runBuffers(ctx context.Context, a Asker, o Options, call tools.Call) (tools.Output, error) {
	r, err := newReach(call)
	if err != nil {
		return tools.Output{}, err
	}
	ans, err := ask(ctx, a, o, Query{Op: "buffers"})
	if err != nil {
		return tools.Output{}, askErr(err)
	}
	if err := answerError(ans); err != nil {
		return tools.Output{}, err
	}
	var bufs []Buffer
	hidden := 0
	for _, bf := range ans.Buffers {
		resolved, ok := r.check(bf.Path)
		if !ok {
			hidden++
			continue
		}
		bf.Path = resolved
		bufs = append(bufs, bf)
	}
	sort.SliceStable(bufs, func(i, j int) bool { return bufs[i].Bufnr < bufs[j].Bufnr })
	var b strings.Builder
	modified := 0
	for _, bf := range bufs {
		var flags []string
		if bf.Modified {
			flags = append(flags, "MODIFIED (unsaved changes)")
			modified++
		}
		if bf.Current {
			flags = append(flags, "current")
		} else if bf.Visible {
			flags = append(flags, "visible")
		}
		if !bf.Loaded {
			flags = append(flags, "not loaded")
		}
		fmt.Fprintf(&b, "%s", r.show(bf.Path))
		if len(flags) > 0 {
			fmt.Fprintf(&b, "  [%s]", strings.Join(flags, ", "))
		}
		if bf.Filetype != "" {
			fmt.Fprintf(&b, "  %s", bf.Filetype)
		}
		if bf.Loaded {
			fmt.Fprintf(&b, "  %d lines", bf.Lines)
		}
		if len(bf.Clients) > 0 {
			fmt.Fprintf(&b, "  lsp: %s", strings.Join(bf.Clients, ", "))
		}
		b.WriteByte('\n')
	}
	switch {
	case len(bufs) == 0:
		b.WriteString("No file is open in the editor.\n")
	case modified > 0:
		fmt.Fprintf(&b, "%d file(s) open, %d with unsaved changes: the editor's text of those differs from the file on disk.\n", len(bufs), modified)
	default:
		fmt.Fprintf(&b, "%d file(s) open, none with unsaved changes.\n", len(bufs))
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d open file(s) the sandbox does not let tools read are not listed)\n", hidden)
	}
	return tools.Output{Text: strings.TrimRight(b.String(), "\n")}, nil
}
