package provider

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// AbortedByUser is the message of the abort marker written when the user
// interrupts a response.
const AbortedByUser = "Response interrupted by the user."

// Writer turns the events of one response into the lines appended to the
// buffer (send.md §4). It is pure and not safe for concurrent use.
//
// Model text is untrusted: it is stripped of terminal control sequences,
// every line that would read as structure (a role marker, a tool header, a
// thinking tag) is escaped with buffer.EscapeLine, and a code fence the
// text left open is closed before the next block, so that nothing the
// model writes as text can become a message, a tool call or a placeholder.
// Only the structured tool calls of the stream become Tool Use blocks.
//
// The lines start with the "@Assistant:" marker (preceded by a blank line
// when the buffer's last line is not blank). Text is written as it
// arrives; tool calls as complete blocks; a thinking block once it ends
// (its signature, or the first text, call or search after it), so the
// blocks stand in stream order, before what they led to. Lines only grow:
// between two calls of Lines, every line but the last of the earlier result
// is unchanged, so a caller can replace the buffer from that last line on —
// except the opening line of a thinking block whose signature came after
// the answer had begun (Gemini signs at the end of the response), which is
// rewritten with it. Finish and FinishError end the response
// (they may remove the marker, and add the abort marker and the "@You:"
// prompt), so their result replaces the whole region.
type Writer struct {
	lead    []string        // "" (when needed) and "@Assistant:"
	body    []string        // finished lines after the marker
	cur     strings.Builder // the last line, still open
	curText bool            // cur holds model text (escaped when it ends)
	fence   buffer.FenceState
	started bool // a non-blank piece was written

	signalled bool // anything was emitted, whitespace included (prefix rule)
	endsNL    bool // … and it ended with a newline
	afterTh   bool // the last thing written was a thinking block

	thinking []*thinkBlock // blocks not yet written, in arrival order
	open     *thinkBlock   // the block receiving thinking deltas
	late     *lateBlock    // a block written before its signature came

	stop       string   // the stop reason of EventDone
	incomplete []string // tool calls whose input was cut ("name (id)")
	lost       int      // pieces of the stream that could not be read
	cited      []Source // what the answer cites (EventCitation), written at its end
	webOpen    bool     // the last thing written was a web search line
}

type thinkBlock struct {
	content             strings.Builder
	signature, provider string
	redacted, closed    bool
}

// lateBlock is a thinking block written unsigned because the answer it led
// to began before the block was closed (Gemini signs at the end of the
// response): a signature that comes later is put into its opening line.
type lateBlock struct {
	b        *thinkBlock
	start, n int // its lines in body
}

// NewWriter starts a response. existingLastLines are the last lines of the
// buffer as it is before the send (one is enough; nil for an empty buffer):
// when the last one is not blank, a blank line separates it from the new
// "@Assistant:" marker.
func NewWriter(existingLastLines []string) *Writer {
	w := &Writer{lead: []string{"@Assistant:"}}
	if n := len(existingLastLines); n > 0 && strings.TrimSpace(existingLastLines[n-1]) != "" {
		w.lead = []string{"", "@Assistant:"}
	}
	return w
}

// Add takes one event. Text is written at once; a tool call is written as
// a block; thinking is kept until its block ends (see Writer).
func (w *Writer) Add(e Event) {
	switch e.Kind {
	case EventText:
		t := e.Text
		if strings.TrimSpace(t) != "" {
			w.flushThinking() // in stream order: the thinking came first
		}
		if w.afterTh {
			if strings.TrimSpace(t) == "" {
				return // whitespace between thinking and the answer
			}
			// The answer goes on in a paragraph of its own.
			w.emit("\n", false)
			t = strings.TrimLeft(t, "\r\n")
			w.afterTh = false
		}
		if w.webOpen && strings.TrimSpace(t) != "" {
			w.emit("\n", false) // the answer goes on in a paragraph of its own
			w.webOpen = false
		}
		w.emit(buffer.Sanitize(t), true)
	case EventToolUse:
		if e.ToolUse != nil {
			w.flushThinking()
			w.block(toolUseBlock(e.ToolUse))
			w.afterTh = false
			if e.ToolUse.Incomplete {
				w.incomplete = append(w.incomplete, e.ToolUse.Name+" ("+e.ToolUse.ID+")")
			}
		}
	case EventThinking:
		if w.open == nil {
			w.open = &thinkBlock{}
			w.thinking = append(w.thinking, w.open)
			w.late = nil // a signature now closes this block
		}
		w.open.content.WriteString(e.Text)
	case EventThinkingSignature:
		if w.open == nil && w.late != nil {
			w.signLate(e.Signature, e.Provider)
			return
		}
		if w.open == nil {
			w.open = &thinkBlock{}
			w.thinking = append(w.thinking, w.open)
		}
		w.open.signature, w.open.provider, w.open.closed = e.Signature, e.Provider, true
		w.open = nil
	case EventRedactedThinking:
		w.open, w.late = nil, nil
		b := &thinkBlock{redacted: true, closed: true}
		b.content.WriteString(e.Text)
		w.thinking = append(w.thinking, b)
	case EventWebSearch:
		// A search the provider ran: written where it happened in the
		// answer, so the file keeps what the model looked at.
		if line := webLine(e); line != "" {
			w.flushThinking()
			w.closeFence()
			w.emit(w.prefix()+line+"\n", true)
			w.afterTh, w.webOpen = false, true
		}
	case EventCitation:
		w.cited = append(w.cited, e.Sources...)
	case EventUnreadable:
		w.lost++
	case EventDone:
		w.stop = e.StopReason
		w.flushCited()
		w.flushThinking()
	}
}

// flushCited writes the sources the answer cited, once.
func (w *Writer) flushCited() {
	src := webSources(w.cited, 0)
	w.cited = nil
	if len(src) == 0 {
		return
	}
	w.closeFence()
	w.emit(w.prefix()+"*Cited:* "+sourceLinks(src)+"\n", true)
	w.afterTh = false
}

// Lost is the number of pieces of the stream that could not be read.
func (w *Writer) Lost() int { return w.lost }

// StopReason is the provider's stop reason of the response ("end_turn",
// "tool_use", "max_tokens", … as EventDone gave it; "" before it ended).
func (w *Writer) StopReason() string { return w.stop }

// Cut says why a response that ended normally must still not be taken as
// whole ("" when it may): it stopped at the output limit, was stopped by a
// content filter or left incomplete, or a tool call's input was cut. Finish
// then ends it with the abort marker and this message, so that none of its
// tool calls runs (the cycle gives every call of an aborted message an
// error result) and the model reads on the next send what happened.
func (w *Writer) Cut() string {
	calls := ""
	if len(w.incomplete) > 0 {
		calls = " The input of " + strings.Join(w.incomplete, ", ") + " is incomplete."
	}
	if w.lost > 0 {
		// What was not read may have been text or a call: the answer
		// has a hole, so none of its calls may run.
		n := "1 piece"
		if w.lost > 1 {
			n = strconv.Itoa(w.lost) + " pieces"
		}
		calls += " " + n + " of the stream could not be read and " + map[bool]string{true: "is", false: "are"}[w.lost == 1] + " missing (the raw text is in flemma's log)."
		if w.stop == "end_turn" || w.stop == "tool_use" || w.stop == "" {
			return "Response incomplete: none of its tool calls was run." + calls
		}
	}
	switch w.stop {
	case "max_tokens":
		return "Response cut at the output limit (max_tokens): none of its tool calls was run." + calls
	case "model_context_window_exceeded": // Anthropic: the context window filled up mid-answer
		return "Response cut: the model's context window is full: none of its tool calls was run." + calls
	case "content_filter", "safety", "recitation":
		return "Response stopped by the provider's content filter (" + w.stop + "): none of its tool calls was run." + calls
	case "incomplete":
		return "Response left incomplete by the provider: none of its tool calls was run." + calls
	case "pause_turn": // Anthropic: a long server-side turn (web search) stopped midway
		return "Response paused by the provider during its web search: none of its tool calls was run; send again to ask anew." + calls
	}
	if calls != "" {
		return "Response ended inside a tool call: none of its tool calls was run." + calls
	}
	return ""
}

// Lines returns the lines written so far: the placeholder marker alone
// before the first content.
func (w *Writer) Lines() []string {
	out := make([]string, 0, len(w.lead)+len(w.body)+1)
	out = append(out, w.lead...)
	if w.started {
		out = append(out, w.body...)
		last := w.cur.String()
		if w.curText {
			last = buffer.EscapeLine(last)
		}
		out = append(out, last)
	}
	return out
}

// Finish ends the response and returns its final lines.
//
// Completed (interrupted false): any thinking not yet written, then a blank
// line (unless the last line is blank), "@You:" and an empty line for the
// user's next message. Interrupted: the thinking that arrived (signed or
// not: it was billed, and the reasoning of Chat Completions servers is
// never signed), then a blank line and the marker
// "<!-- flemma:aborted: Response interrupted by the user. -->" that marks
// the whole message cut, then the same prompt. Either way, a response that wrote nothing returns no lines:
// the placeholder goes and the buffer is as it was before the send.
func (w *Writer) Finish(interrupted bool) []string {
	if interrupted {
		return w.abort(AbortedByUser)
	}
	if cut := w.Cut(); cut != "" {
		return w.abort(cut)
	}
	w.flushThinking()
	return w.prompt()
}

// FinishError ends a response that failed with err: context.Canceled is an
// interruption (Finish(true)); any other error keeps what was written and
// marks it with "<!-- flemma:aborted: Response interrupted by an error:
// MESSAGE -->", so the model learns on the next send that its answer was
// cut. Nothing written gives no lines.
func (w *Writer) FinishError(err error) []string {
	if errors.Is(err, context.Canceled) {
		return w.Finish(true)
	}
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	msg = strings.ReplaceAll(collapseSpace(buffer.Sanitize(msg)), "-->", "->")
	return w.abort("Response interrupted by an error: " + cut(msg, 300))
}

func (w *Writer) abort(message string) []string {
	w.flushCited()
	w.flushThinking()
	if !w.started {
		return nil
	}
	// The message may name the model's calls: it must stay one comment.
	message = collapseSpace(buffer.Sanitize(message))
	for strings.Contains(message, "--") { // "-->" and "--!>" close an HTML comment
		message = strings.ReplaceAll(message, "--", "-")
	}
	message = cut(message, 400)
	w.block("<!-- flemma:aborted: " + message + " -->\n")
	return w.prompt()
}

// prompt returns the final lines with the "@You:" prompt, or none.
func (w *Writer) prompt() []string {
	if !w.started {
		return nil
	}
	w.closeFence()
	out := w.Lines()
	if out[len(out)-1] != "" {
		out = append(out, "")
	}
	return append(out, "@You:", "")
}

// prefix is the separator before a block (send.md §4.1): nothing at the
// start of the response, "\n" after a newline, else "\n\n" — so a block
// always follows one blank line.
func (w *Writer) prefix() string {
	switch {
	case !w.signalled:
		return ""
	case w.endsNL:
		return "\n"
	}
	return "\n\n"
}

// block writes one of the writer's own blocks (a tool call, a thinking
// block, the abort marker) after the separator, closing first any code
// fence the model's text left open.
func (w *Writer) block(text string) {
	w.closeFence()
	w.emit(w.prefix()+text, false)
}

// closeFence ends a code fence that the model's text opened and did not
// close (the open line counts), so that the blocks and the "@You:" prompt
// that follow are not read as its content.
func (w *Writer) closeFence() {
	f := w.fence
	if w.curText && w.cur.Len() > 0 {
		f.Feed(w.cur.String())
	}
	closer := f.Closer()
	if closer == "" {
		return
	}
	if w.cur.Len() > 0 {
		w.emit("\n", true)
	}
	w.emit(closer+"\n", false)
	w.fence = buffer.FenceState{}
}

// emit appends to the response; text marks model text (escaped line by
// line, fences followed) as opposed to the writer's own blocks. Until
// something non-blank arrives, whitespace is dropped (it still counts for
// the prefix rule), and leading blank lines of the first real piece are
// dropped too.
func (w *Writer) emit(s string, text bool) {
	if s == "" {
		return
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	w.signalled = true
	w.endsNL = strings.HasSuffix(s, "\n")
	if !w.started {
		if strings.TrimSpace(s) == "" {
			return
		}
		for {
			i := strings.IndexByte(s, '\n')
			if i < 0 || strings.TrimSpace(s[:i]) != "" {
				break
			}
			s = s[i+1:]
		}
		w.started = true
		if strings.HasPrefix(s, "**Tool Use:**") && !text {
			w.body = append(w.body, "")
		}
	}
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			w.cur.WriteString(s)
			if text && s != "" {
				w.curText = true
			}
			return
		}
		w.cur.WriteString(s[:i])
		line := w.cur.String()
		if w.curText || text {
			w.fence.Feed(line)
			line = buffer.EscapeLine(line)
		}
		w.body = append(w.body, line)
		w.cur.Reset()
		w.curText = false
		s = s[i+1:]
	}
}

// flushThinking writes the pending thinking blocks. It is called when the
// response goes on with something else (text, a tool call, a search) and at
// its end, so the blocks stand where they came in the stream. A block still
// open (no signature yet) is written unsigned and kept as late: a signature
// that arrives after it is put into its opening line (signLate).
func (w *Writer) flushThinking() {
	for _, b := range w.thinking {
		text := thinkingBlock(b)
		if text == "" {
			continue
		}
		if w.afterTh {
			w.emit(text, false) // consecutive thinking blocks stay together
		} else {
			w.block(text)
		}
		w.afterTh = true
		if !b.closed {
			n := strings.Count(text, "\n")
			w.late = &lateBlock{b: b, start: len(w.body) - n, n: n}
		}
	}
	w.thinking, w.open = nil, nil
}

// signLate gives the late block its signature and writes it again in place.
// This is the one change to lines already written (Lines); the cycle
// replaces the whole response region at each write, so it shows at the next
// one.
func (w *Writer) signLate(sig, prov string) {
	l := w.late
	w.late = nil
	l.b.signature, l.b.provider, l.b.closed = sig, prov, true
	lines := strings.Split(strings.TrimSuffix(thinkingBlock(l.b), "\n"), "\n")
	body := append([]string{}, w.body[:l.start]...)
	body = append(body, lines...)
	w.body = append(body, w.body[l.start+l.n:]...)
}

// thinkingBlock renders a block (send.md §4.3); "" when there is nothing
// to keep. The content is model text: sanitized and escaped like the
// answer, and trimmed. Escaping is undone before the thinking is sent
// back. Anthropic's signature covers the thinking text itself, so a block
// it signed is written byte for byte instead (not trimmed); when the text
// cannot be held by buffer lines as it is (a carriage return, a control
// character, invalid UTF-8), the cleaned text is shown and the exact text
// travels in the signature (exactSignature). The other providers' signatures
// do not depend on the text shown.
func thinkingBlock(b *thinkBlock) string {
	raw := b.content.String()
	signed := b.signature != "" && b.provider != "" && !strings.ContainsAny(b.signature, "\"\n\r")
	if signed && b.provider == "anthropic" && !b.redacted && buffer.Sanitize(raw) == raw {
		open := "<thinking " + b.provider + ":signature=\"" + b.signature + "\">"
		if raw == "" {
			return open + "\n</thinking>\n"
		}
		return open + "\n" + buffer.EscapeText(raw) + "\n</thinking>\n"
	}
	content := buffer.EscapeText(strings.TrimSpace(buffer.Sanitize(strings.TrimSpace(raw))))
	if b.redacted {
		if content == "" {
			return ""
		}
		return "<thinking redacted>\n" + content + "\n</thinking>\n"
	}
	open := "<thinking>"
	if signed {
		sig := b.signature
		if b.provider == "anthropic" {
			sig = exactSignature(raw, sig)
		}
		open = "<thinking " + b.provider + ":signature=\"" + sig + "\">"
	} else if content == "" {
		return ""
	}
	if content == "" {
		return open + "\n</thinking>\n"
	}
	return open + "\n" + content + "\n</thinking>\n"
}

// exactPrefix starts a signature that carries the exact thinking text
// (base64) before the provider's signature: "flemma-exact:TEXT:SIG". No
// provider's signature starts so (':' and '-' are not base64).
const exactPrefix = "flemma-exact:"

// exactSignature wraps a signature with the exact text it signs.
func exactSignature(text, sig string) string {
	return exactPrefix + base64.StdEncoding.EncodeToString([]byte(text)) + ":" + sig
}

// signedThinking returns the thinking text and the signature to send back
// for a signed block as the buffer holds it: the exact text when the
// signature carries it (exactSignature), else the block's content.
func signedThinking(content, sig string) (string, string) {
	rest, ok := strings.CutPrefix(sig, exactPrefix)
	if !ok {
		return content, sig
	}
	enc, inner, ok := strings.Cut(rest, ":")
	text, err := base64.StdEncoding.DecodeString(enc)
	if !ok || err != nil || inner == "" {
		return content, sig // not ours after all: the provider judges it
	}
	return string(text), inner
}

// toolUseBlock renders a tool call (send.md §4.2) with its input on one
// line, in the style of the .chat format, inside a fence longer than any
// backtick run of the input. The name and id come from the provider and
// are made header-safe (see headerToken).
func toolUseBlock(u *ToolUse) string {
	input := displayJSON(u.Input)
	fence := buffer.Fence(input)
	return "**Tool Use:** `" + headerToken(u.Name, "unnamed_tool") + "` (`" + headerToken(u.ID, "flemma_call") + "`)\n\n" +
		fence + "json\n" + input + "\n" + fence + "\n"
}

// headerToken makes a tool name or id from the stream safe to stand in a
// block header: only [A-Za-z0-9_.:-], at most 128 bytes; any other byte
// becomes '_'. A value with a backtick, a parenthesis or a newline could
// otherwise end the header early and forge what follows. Ids keep their
// wire identity: normalizeToolID maps the original and the cleaned id alike.
func headerToken(s, empty string) string {
	b := []byte(s)
	if len(b) > 128 {
		b = b[:128]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return empty
	}
	return string(b)
}
