package journal

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// The audit log (issue 28 item 3): every call with its arguments and its
// result, every decision by anyone with what it said. The caller redacts
// what it gives (arguments, details) like tool output; the journal bounds
// it: at most MaxInputBytes of a call's arguments (an event's, its detail)
// and Options.MaxResultBytes of its result are kept, the whole sizes
// beside them (input_bytes, output_bytes). Retention (DefaultRetention)
// bounds the rest.

// MaxInputBytes bounds the arguments stored per call or event, and an
// event's detail (16 KiB): enough for any command or edit a user reviews,
// while a write of a large file does not grow the journal by its content
// twice (the result says what was written).
const MaxInputBytes = 16 << 10

// boundInput cuts s to MaxInputBytes at a UTF-8 boundary and returns its
// whole size; "" is stored as NULL.
func boundInput(s string) (any, int64) {
	if s == "" {
		return nil, 0
	}
	cut, _ := truncateUTF8(s, MaxInputBytes)
	return cut, int64(len(s))
}

// exportText writes what Export selects in a readable form, one entry per
// paragraph, oldest first:
//
//	2026-11-26 18:41:37  toolu_a  bash  approved, by user (status edit)
//	  input: {"command": "echo hi"}
//	2026-11-26 18:41:37  toolu_a  bash  ran: ok in 38 ms, 2 bytes of output (approve, by user (status edit))
//	  result: hi
//
// Results are shown with Filter.Results, up to 20 lines and 4 KiB each
// (the JSON lines have them whole). The JSON is streamed, not held.
func (j *Journal) exportText(ctx context.Context, w io.Writer, f Filter) error {
	f.Text = false
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(j.Export(ctx, pw, f)) }()
	defer pr.Close()
	bw := bufio.NewWriter(w)
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("journal: export: %w", err)
		}
		writeEntry(bw, m)
	}
	if err := sc.Err(); err != nil {
		if strings.HasPrefix(err.Error(), "journal: ") {
			return err
		}
		return fmt.Errorf("journal: export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("journal: export: %w", err)
	}
	return nil
}

// writeEntry writes one exported object (a call or an event) as text.
func writeEntry(w io.Writer, m map[string]any) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	when := str("time")
	if t, err := time.Parse(TimeFormat, when); err == nil {
		when = t.Local().Format("2006-01-02 15:04:05 MST") // the reader's clock, said
	}
	head := fmt.Sprintf("%s  %s  %s  ", when, orDash(str("call_id")), orDash(str("tool")))
	if m["kind"] == "event" {
		fmt.Fprintf(w, "%s%s, by %s\n", head, str("decision"), str("decided_by"))
		if d := str("detail"); d != "" {
			writeBlock(w, "detail", d, 0)
		}
		if in := str("input"); in != "" {
			writeBlock(w, "input", in, 0)
		}
		return
	}
	what := "started, never finished"
	if st, ok := m["status"].(string); ok {
		what = "ran: " + st
		if ms, ok := m["duration_ms"].(float64); ok {
			what += fmt.Sprintf(" in %.0f ms", ms)
		}
		if n, ok := m["output_bytes"].(float64); ok {
			what += fmt.Sprintf(", %d bytes of output", int64(n))
		}
		if k := str("error_kind"); k != "" {
			what += " (" + k + ")"
		}
	}
	if r := str("resolution"); r != "" {
		what += ", " + r + " by " + str("resolved_by")
	}
	fmt.Fprintf(w, "%s%s (%s, by %s)\n", head, what, str("decision"), str("decided_by"))
	if in, ok := m["input"].(string); ok && in != "" {
		writeBlock(w, "input", in, 0)
		if n, _ := m["input_bytes"].(float64); int(n) > len(in) {
			fmt.Fprintf(w, "  (input cut: %d of %d bytes kept)\n", len(in), int64(n))
		}
	}
	if r, ok := m["result"].(string); ok {
		writeBlock(w, "result", r, 20)
		if m["result_truncated"] == true {
			fmt.Fprintf(w, "  (the journal kept only the start of the result)\n")
		}
	}
}

// writeBlock writes "  label: text", continuation lines indented; at most
// max lines when max > 0.
func writeBlock(w io.Writer, label, text string, max int) {
	if max > 0 && len(text) > textResultBytes {
		cut, _ := truncateUTF8(text, textResultBytes)
		text = cut + "\n…"
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	more := 0
	if max > 0 && len(lines) > max {
		lines, more = lines[:max], len(lines)-max
	}
	fmt.Fprintf(w, "  %s: %s\n", label, lines[0])
	pad := strings.Repeat(" ", len(label)+4)
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "%s%s\n", pad, l)
	}
	if more > 0 {
		fmt.Fprintf(w, "%s… %d more line(s)\n", pad, more)
	}
}

// textResultBytes bounds a result in the readable form.
const textResultBytes = 4 << 10

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
