// Package editor holds the read-only built-ins that Neovim answers: what the
// editor knows that no file says — the diagnostics of its buffers
// (`diagnostics`), its language servers' answers (`lsp`: definition,
// references, hover, document and workspace symbols) and its open buffers
// with their unsaved changes (`buffers`) — and the diagnostics a write or an
// edit leaves (AfterEdit).
//
// The tools ask through an Asker (the engine, over RPC): a question is
// bounded in time (Options.Timeout; the editor ends it by itself too) and in
// size (Options.MaxResults, Options.MaxBytes). The confinement is here, in
// the host, never in Neovim: the path a call names passes the sandbox's read
// check (deny_read applies even with the sandbox disabled, as for
// attachments: the language server reaches every file) before Neovim is
// asked, and every location in an answer — a reference, a definition, a
// symbol, a diagnostic's file, a buffer — is checked the same way and
// dropped when it fails. A hover is refused when the symbol's definition
// (or its type's) lies in such a file, since the hover text is that file's
// content.
package editor

import (
	"context"
	"time"
)

// Asker sends a question to the editor and waits for its answer, at most
// until ctx ends (then the editor is told to stop).
type Asker interface {
	Ask(ctx context.Context, q Query) (Answer, error)
}

// Query is one question to the editor (lua/flemma/editor.lua query).
type Query struct {
	// Op is "diagnostics", "buffers", "lsp" or "after_edit".
	Op string `msgpack:"op"`
	// Path is the file asked about, resolved; "" for every buffer.
	Path string `msgpack:"path,omitempty"`
	// Under bounds "every buffer" (diagnostics) and the language servers
	// asked for workspace symbols: the project's folder.
	Under    string `msgpack:"under,omitempty"`
	Severity string `msgpack:"severity,omitempty"` // lowest severity wanted
	Method   string `msgpack:"method,omitempty"`   // lsp: definition, references, hover, document_symbols, workspace_symbols
	Line     int    `msgpack:"line,omitempty"`     // 1-based
	Column   int    `msgpack:"column,omitempty"`   // 1-based byte column
	Symbol   string `msgpack:"symbol,omitempty"`
	Query    string `msgpack:"query,omitempty"`
	Max      int    `msgpack:"max,omitempty"`       // items at most
	MaxBytes int    `msgpack:"max_bytes,omitempty"` // hover text at most
	// TimeoutMS is the question's bound; the editor answers "no answer
	// within …" by itself then.
	TimeoutMS int64 `msgpack:"timeout_ms,omitempty"`
	// SettleMS is how long to wait for more diagnostics after a server's
	// first report (servers publish in stages).
	SettleMS int64 `msgpack:"settle_ms,omitempty"`
}

// Answer is what the editor answered.
type Answer struct {
	Error    string `msgpack:"error"`
	Internal bool   `msgpack:"internal"` // a fault of flemma's Lua, for the log
	TimedOut bool   `msgpack:"timed_out"`
	// Unavailable says why nothing could be asked: "no_client" (no
	// running language server serves the file), "modified" (the file has
	// unsaved changes in the editor), "noautoread" (a buffer holds it and
	// 'autoread' is off: it is not read again), "not_open" (not loaded,
	// and no server to ask).
	Unavailable string       `msgpack:"unavailable"`
	Clients     []string     `msgpack:"clients"` // the language servers that answered
	Errors      []string     `msgpack:"errors"`  // a server's error, per server
	Diagnostics []Diagnostic `msgpack:"diagnostics"`
	Buffers     []Buffer     `msgpack:"buffers"`
	Locations   []Location   `msgpack:"locations"`
	Definitions []Location   `msgpack:"definitions"` // hover: where the symbol and its type are defined
	Symbols     []Location   `msgpack:"symbols"`
	Hover       string       `msgpack:"hover"`
	Dropped     int          `msgpack:"dropped"` // items over Query.Max
}

// Diagnostic is one vim.diagnostic entry; positions are 1-based, columns
// in bytes.
type Diagnostic struct {
	Path     string `msgpack:"path"`
	Lnum     int    `msgpack:"lnum"`
	Col      int    `msgpack:"col"`
	EndLnum  int    `msgpack:"end_lnum"`
	EndCol   int    `msgpack:"end_col"`
	Severity string `msgpack:"severity"` // error, warning, info, hint
	Message  string `msgpack:"message"`
	Source   string `msgpack:"source"`
	Code     string `msgpack:"code"`
}

// Buffer is one of the user's listed buffers.
type Buffer struct {
	Path     string   `msgpack:"path"`
	Bufnr    int      `msgpack:"bufnr"`
	Modified bool     `msgpack:"modified"`
	Loaded   bool     `msgpack:"loaded"`
	Visible  bool     `msgpack:"visible"`
	Current  bool     `msgpack:"current"`
	Lines    int      `msgpack:"lines"`
	Filetype string   `msgpack:"filetype"`
	Clients  []string `msgpack:"clients"`
}

// Location is a place in a file a language server named: a reference, a
// definition, a symbol. Line is 0-based; Col is the 0-based byte column
// when the editor had the file loaded (with its Text), else -1 and
// Character is the server's offset in Encoding, converted here.
type Location struct {
	Path      string `msgpack:"path"`
	Line      int    `msgpack:"line"`
	Character int    `msgpack:"character"`
	Encoding  string `msgpack:"encoding"`
	Col       *int   `msgpack:"col"`
	Text      string `msgpack:"text"`
	// Symbols only.
	Name      string `msgpack:"name"`
	Kind      string `msgpack:"kind"`
	Container string `msgpack:"container"`
	Detail    string `msgpack:"detail"`
}

// Options bound the questions; the engine reads them from setup's
// tools.editor at each call.
type Options struct {
	Timeout    time.Duration // a question's bound (10 s)
	MaxResults int           // items per answer (100)
	MaxBytes   int           // hover text (20,000 bytes)
	// AfterEdit turns the diagnostics after a write or an edit on
	// (tools.editor.diagnostics_after_edit), AfterEditWait bounds the
	// wait for the language server (tools.editor.diagnostics_wait, 3 s).
	AfterEdit     bool
	AfterEditWait time.Duration
}

// DefaultOptions are setup's defaults.
func DefaultOptions() Options {
	return Options{Timeout: 10 * time.Second, MaxResults: 100, MaxBytes: 20000, AfterEdit: true, AfterEditWait: 3 * time.Second}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxResults <= 0 {
		o.MaxResults = d.MaxResults
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = d.MaxBytes
	}
	if o.AfterEditWait <= 0 {
		o.AfterEditWait = d.AfterEditWait
	}
	return o
}

// Requirement is the registry requirement of the lsp tool: a language
// server runs in the editor (the engine answers it).
const Requirement = "editor:lsp"

// ask bounds a question by o.Timeout (and ctx), and tells the editor the
// bound so that it ends the question by itself as well.
func ask(ctx context.Context, a Asker, o Options, q Query) (Answer, error) {
	q.TimeoutMS = o.Timeout.Milliseconds()
	if q.Max == 0 {
		q.Max = o.MaxResults
	}
	// The editor's own timer fires first, so its answer ("no answer
	// within …") is what the model reads; ctx is the backstop.
	ctx, cancel := context.WithTimeout(ctx, o.Timeout+2*time.Second)
	defer cancel()
	return a.Ask(ctx, q)
}
