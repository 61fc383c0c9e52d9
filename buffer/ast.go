package buffer

import (
	"fmt"
	"strings"
)

// Status is the lifecycle status of a tool result. The empty Status means a
// completed result (success or error); any other value marks a placeholder
// that still awaits a decision or an execution.
type Status string

// The placeholder statuses. Phase 1 of the cycle writes pending, approved,
// denied or aborted; rejected is written by the user.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusDenied   Status = "denied"
	StatusRejected Status = "rejected"
	StatusAborted  Status = "aborted"
)

// Valid reports whether s is one of the five placeholder statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusApproved, StatusDenied, StatusRejected, StatusAborted:
		return true
	}
	return false
}

// ParseStatus maps a status word to a Status. It accepts the five statuses
// and the aliases "reject" and "deny"; matching is case-sensitive, as in the
// Lua Flemma.
func ParseStatus(word string) (Status, bool) {
	switch word {
	case "pending", "approved", "denied", "rejected", "aborted":
		return Status(word), true
	case "reject":
		return StatusRejected, true
	case "deny":
		return StatusDenied, true
	}
	return "", false
}

// Document is a parsed .chat buffer. Every node carries 1-based line
// numbers into the lines given to Parse.
type Document struct {
	Frontmatter *Frontmatter // nil when absent
	// Preamble holds the non-blank text between the frontmatter (or line 1)
	// and the first role marker. It belongs to no message and is never sent;
	// Parse reports it with a warning. nil when there is none.
	Preamble *Text
	Messages []*Message
	// Summary is the compaction summary in force: the last well-formed
	// one (see Summary). nil when there is none.
	Summary     *Summary
	Diagnostics []Diagnostic // sorted by Line, then Col
	LineCount   int          // number of lines given to Parse

	ix        *index // built by Parse; nil for hand-made documents
	all       *index // every block, the summary ignored (Whole); nil: as ix
	openFence int    // opener line of a code fence still open at the end, or 0
}

// Frontmatter is the fenced block that opens a buffer on line 1.
// Code line k (1-based within Code) is buffer line StartLine+k.
type Frontmatter struct {
	Language  string // the tag after the opening fence, verbatim ("lua", "json", …)
	Code      string // lines strictly between the fences, joined by "\n"
	StartLine int    // the opening fence: always 1
	EndLine   int    // the closing fence
}

// Message is the text from a role marker line up to the line before the next
// marker (or the last line). EndLine therefore includes trailing blank lines.
type Message struct {
	Role      string // text between '@' and ':' ("You", "Assistant", "System", …), case-sensitive
	StartLine int    // the marker line
	EndLine   int
	Segments  []Segment // in line order; an empty message has none

	diags *[]Diagnostic // reported while parsing its blocks (for ParseFrom); nil: none
}

// Segment is one node of a message: *Text, *Thinking, *ToolUse,
// *ToolResult, *Aborted or *Summary.
type Segment interface {
	// Lines returns the first and last line of the segment (1-based,
	// inclusive).
	Lines() (start, end int)
}

// Text is a run of ordinary lines. It never starts or ends with a blank
// (whitespace-only) line; inner lines are kept verbatim.
type Text struct {
	StartLine, EndLine int
	// lines are the lines StartLine..EndLine, copied from the slice given
	// to Parse (the strings are shared, not copied).
	lines []string
}

// Value returns the lines joined by "\n". It joins them on each call:
// Parse does not, because most parses (a <C-]> press) never read the
// text, and prose is most of a buffer's bytes.
func (t *Text) Value() string { return strings.Join(t.lines, "\n") }

// Thinking is a <thinking> block of an @Assistant: message.
type Thinking struct {
	lines     []string // the lines between the tags (see Content)
	Provider  string   // from <thinking PROVIDER:signature="…">; "" when unsigned
	Signature string
	Redacted  bool // <thinking redacted>
	// StartLine is the opening tag, EndLine the closing tag. A self-closing
	// tag has StartLine == EndLine.
	StartLine, EndLine int
}

// Content returns the lines between the tags joined by "\n" ("" for a
// self-closing tag). Like Text.Value, it joins them on each call.
func (t *Thinking) Content() string { return strings.Join(t.lines, "\n") }

// Aborted is the marker <!-- flemma:aborted: MESSAGE --> written when a
// response was interrupted.
type Aborted struct {
	Message            string
	StartLine, EndLine int // always equal
}

// Summary is a compaction summary (issue 30): in a @You: message, the lines
// between the marker <!-- flemma:summary: NOTE --> and the closing
// <!-- /flemma:summary -->. The last one of a document is the one in force
// (Document.Summary): what comes before its marker is not sent (its text
// goes instead), and the tool calls and results there are no pending work
// — the queries of the Document (ToolUses, Result, Unresolved, …) do not
// see them. Deleting the block brings them back.
type Summary struct {
	Note  string   // the marker's text after "flemma:summary:", trimmed; informative only
	lines []string // the lines between the markers (see Content)
	// StartLine is the marker, EndLine the closing marker.
	StartLine, EndLine int
}

// Content returns the lines between the markers joined by "\n", as the
// buffer holds them (escaped lines keep their backslash: UnescapeText
// gives the model's words back).
func (s *Summary) Content() string { return strings.Join(s.lines, "\n") }

// ToolUse is a **Tool Use:** block of an @Assistant: message.
type ToolUse struct {
	Name, ID string
	// Args is the input of a ToolUse made by hand (a chain's step, a
	// test), already decoded; Input returns it. Parse leaves it nil: it
	// checks RawInput and Input decodes it when asked.
	Args     map[string]any
	RawInput string // the fence body verbatim (lines joined by "\n")
	Language string // fence language: "json", "" (read as JSON) or another case of "json"
	FenceLen int    // number of backticks of the fence
	Suffix   string // header text after "(`id`)", trailing blanks removed; normally ""

	HeaderLine int // the **Tool Use:** line
	FenceLine  int // the opening fence
	EndLine    int // the closing fence

	object bool // Parse found RawInput a JSON object, not refused (see Input)
}

// Input returns the tool's input: the decoded JSON object of RawInput,
// with keys whose value is JSON null left out (recursively), or Args for a
// ToolUse made by hand. It is nil when the input is valid JSON but not an
// object, or was refused (Parse reports both with a warning).
//
// Parse only checks the input; Input decodes it on each call (a few
// microseconds for a typical input) and returns a map of the caller's
// own, which it may modify without changing what another reader sees. A
// press reads the inputs of its few open calls, a send reads each once:
// decoding every input of every parse cost a tool-heavy buffer a third of
// its parse (docs/design.md, "Parser").
func (u *ToolUse) Input() map[string]any {
	if u.Args != nil || !u.object {
		return u.Args
	}
	return decodeObject(u.RawInput)
}

// IsObject reports whether Input is not nil, without decoding the input.
func (u *ToolUse) IsObject() bool { return u.Args != nil || u.object }

// ToolResult is a **Tool Result:** block of a @You: message.
type ToolResult struct {
	ToolUseID string
	// IsError is set when the header ends with "(error)", or when a v0.11
	// header suffix names the status error (e.g. "(status=error)").
	IsError bool
	// Status is "" for a completed result. A fence with language
	// flemma:tool makes a placeholder (status from its status= token,
	// pending when missing or unknown); failing that, a v0.11 header
	// suffix such as "(pending)" does.
	Status     Status
	HeaderForm bool   // Status came from the v0.11 header suffix
	Suffix     string // header text after the id, trailing blanks removed (e.g. " (error)")
	Info       string // fence info string after the language, trimmed (e.g. "status=pending timeout=30")
	Language   string // fence language ("flemma:tool", "json", "")
	Content    string // fence body lines joined by "\n"; "" for an empty fence
	FenceLen   int    // number of backticks of the fence

	HeaderLine int // the **Tool Result:** line
	FenceLine  int // the opening fence
	EndLine    int // the closing fence
}

// Lines implements Segment.
func (t *Text) Lines() (start, end int) { return t.StartLine, t.EndLine }

// Lines implements Segment.
func (t *Thinking) Lines() (start, end int) { return t.StartLine, t.EndLine }

// Lines implements Segment.
func (a *Aborted) Lines() (start, end int) { return a.StartLine, a.EndLine }

// Lines implements Segment: from the marker to the closing marker.
func (s *Summary) Lines() (start, end int) { return s.StartLine, s.EndLine }

// Lines implements Segment: from the header to the closing fence.
func (u *ToolUse) Lines() (start, end int) { return u.HeaderLine, u.EndLine }

// Lines implements Segment: from the header to the closing fence.
func (r *ToolResult) Lines() (start, end int) { return r.HeaderLine, r.EndLine }

// Severity ranks a Diagnostic. The values equal vim.diagnostic.severity.
type Severity int

// Severities, numbered as vim.diagnostic.severity.
const (
	SeverityError   Severity = 1
	SeverityWarning Severity = 2
	SeverityInfo    Severity = 3
	SeverityHint    Severity = 4
)

func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	case SeverityInfo:
		return "info"
	case SeverityHint:
		return "hint"
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// Diagnostic kinds: the construct a Diagnostic is about.
const (
	KindFrontmatter = "frontmatter"
	KindMessage     = "message"
	KindThinking    = "thinking"
	KindToolUse     = "tool_use"
	KindToolResult  = "tool_result"
	KindSummary     = "summary"
)

// Diagnostic is a problem found by Parse. The parser never fails: it keeps
// the offending lines as Text and reports what was wrong here.
type Diagnostic struct {
	Line     int // 1-based
	Col      int // 1-based byte column; 0 if unknown
	Severity Severity
	Kind     string // one of the Kind constants
	Message  string
}

// String formats the diagnostic as "line:col: message" ("line: message"
// when the column is unknown).
func (d Diagnostic) String() string {
	if d.Col > 0 {
		return fmt.Sprintf("%d:%d: %s", d.Line, d.Col, d.Message)
	}
	return fmt.Sprintf("%d: %s", d.Line, d.Message)
}
