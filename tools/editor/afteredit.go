package editor

import (
	"context"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/tools"
)

// AfterEdit is what a write or an edit of path (resolved, passed by the
// sandbox) adds to its result: the language servers' errors and warnings
// for the file's new text, e.g.
//
//	LSP diagnostics after the edit (gopls): 1 error
//	main.go:14:2: error: undefined: foo [compiler UndeclaredName]
//
// It waits at most o.AfterEditWait for a server to report. It says nothing
// ("") when it is off, when no running language server serves the file,
// when the file may not be read, or when the editor failed; it says so when
// the editor holds unsaved changes of the file (their diagnostics are of
// other text) and when no report came in time.
func AfterEdit(ctx context.Context, a Asker, o Options, call tools.Call, path string) string {
	o = o.withDefaults()
	if !o.AfterEdit || a == nil {
		return ""
	}
	r, err := newReach(call)
	if err != nil {
		return ""
	}
	resolved, ok := r.check(path)
	if !ok {
		return ""
	}
	q := Query{Op: "after_edit", Path: resolved, Severity: "warning", SettleMS: 300}
	ans, err := ask(ctx, a, Options{Timeout: o.AfterEditWait, MaxResults: 20}, q)
	if err != nil {
		return ""
	}
	switch {
	case ans.Unavailable == "modified":
		return "The editor has unsaved changes of this file: its buffer now differs from the file on disk (its diagnostics were not checked)."
	case ans.Unavailable == "noautoread":
		return "The editor holds this file in a buffer and 'autoread' is off, so the buffer was not read again and its diagnostics were not checked."
	case ans.Unavailable != "":
		return ""
	case ans.TimedOut:
		return fmt.Sprintf("No LSP diagnostics for the new text within %s.", o.AfterEditWait)
	case ans.Error != "":
		return ""
	}
	ds, _ := r.filterDiagnostics(ans.Diagnostics)
	servers := strings.Join(ans.Clients, ", ")
	if len(ds) == 0 {
		return fmt.Sprintf("LSP diagnostics after the edit (%s): no errors or warnings.", servers)
	}
	var b strings.Builder
	counts := map[string]int{}
	for _, d := range ds {
		counts[d.Severity]++
	}
	fmt.Fprintf(&b, "LSP diagnostics after the edit (%s): %s", servers, countText(counts))
	for _, d := range ds {
		fmt.Fprintf(&b, "\n%s:%d:%d: %s: %s", r.show(d.Path), d.Lnum, d.Col, d.Severity, oneLine(d.Message))
		if src := sourceOf(d); src != "" {
			fmt.Fprintf(&b, " [%s]", src)
		}
	}
	if ans.Dropped > 0 {
		fmt.Fprintf(&b, "\n(%d more)", ans.Dropped)
	}
	return b.String()
}
