package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// BlockError names a block of the buffer that stops a send. FromDocument
// returns them joined (errors.Join); errors.As finds the first.
type BlockError struct {
	Kind   string // buffer.KindToolUse or buffer.KindToolResult: the block at Line
	Line   int    // 1-based line of the block's header
	ID     string // the tool use id
	Name   string // the tool name, when known
	Reason string
}

func (e *BlockError) Error() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	if e.Kind == buffer.KindToolResult {
		return fmt.Sprintf("line %d: the tool result for%s %s %s", e.Line, name, e.ID, e.Reason)
	}
	return fmt.Sprintf("line %d: the tool call%s %s %s", e.Line, name, e.ID, e.Reason)
}

// FromDocument builds the conversation to send from a parsed buffer, for the
// named provider:
//
//   - the last @System: message is the system prompt (trimmed);
//   - @You: gives a user message of text, file references (@./path,
//     @../path, @~/path, @//abs, optionally ;type=MIME; "\@" escapes one)
//     as PartFile parts, {{ expr }} as PartExpr and {% code %} as PartCode
//     parts ("\{{" and "\{%" escape one),
//     and completed tool results (in buffer order; the
//     providers put the results first on the wire); a result of `read` that
//     is a file reference carries that file (ToolResult.Files). Files are
//     not read here: the engine loads them (LoadFiles' callers) through
//     the sandbox's read rules;
//   - @Assistant: gives an assistant message of text, thinking, and tool
//     uses (their input exactly as the buffer holds it, nulls included);
//     a thinking signature is kept only when it was made by this provider
//     (the others become unsigned thinking), redacted thinking only for
//     Anthropic; an abort marker becomes the text "<!-- MESSAGE -->" in a
//     message without tool uses and is dropped otherwise;
//   - an interrupted answer without tool uses that ends the conversation
//     (nothing of the user's after it) is left out (interruptedTail);
//   - text and thinking are unescaped (buffer.UnescapeText): a line the
//     writer escaped so that it would not read as structure goes back to
//     the model as the model wrote it;
//   - other roles are not sent; consecutive messages of one role merge;
//   - a compaction summary in force (buffer.Document.Summary) is sent
//     instead of the conversation above it: the messages and the
//     segments before its marker are left out (the last @System: still
//     counts, wherever it is), and its text goes as user text after
//     SummaryPreface — unescaped, but never read for file references or
//     {{ }} (the model wrote it);
//
// Sending is refused, with a *BlockError per block naming its line, while a
// tool use has no completed result (none, or a placeholder of any status),
// a result has no tool use, or a tool use id is duplicated — counting the
// blocks after the summary in force only.
func FromDocument(doc *buffer.Document, provider string) (system string, msgs []Message, err error) {
	if provider == "replay" { // replays Anthropic streams, signatures included
		provider = "anthropic"
	}
	if errs := blockErrors(doc); len(errs) > 0 {
		return "", nil, errors.Join(errs...)
	}
	system, msgs = conversation(doc, provider)
	if len(msgs) == 0 {
		return "", nil, errors.New("no messages to send")
	}
	return system, msgs, nil
}

// Conversation is what FromDocument would send, without its refusals: a
// tool use without a result or a placeholder is sent as it stands (the
// call without its result). It is for estimates (EstimateDocument), never
// for a request.
func Conversation(doc *buffer.Document, provider string) (system string, msgs []Message) {
	if provider == "replay" {
		provider = "anthropic"
	}
	return conversation(doc, provider)
}

func conversation(doc *buffer.Document, provider string) (system string, msgs []Message) {
	last := interruptedTail(doc)
	for _, m := range doc.Messages {
		if m == last {
			continue
		}
		if doc.Compacted(m.EndLine) && m.Role != "System" {
			continue // replaced by the summary
		}
		var msg Message
		switch m.Role {
		case "System":
			var texts []string
			for _, s := range m.Segments {
				if t, ok := s.(*buffer.Text); ok {
					texts = append(texts, buffer.UnescapeText(t.Value()))
				}
			}
			system = strings.TrimSpace(strings.Join(texts, "\n"))
			continue
		case "You":
			msg = Message{Role: RoleUser, Parts: userParts(doc, m)}
		case "Assistant":
			msg = Message{Role: RoleAssistant, Parts: assistantParts(doc, m, provider)}
		default:
			continue
		}
		if len(msg.Parts) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == msg.Role {
			msgs[n-1].Parts = append(msgs[n-1].Parts, msg.Parts...)
			continue
		}
		msgs = append(msgs, msg)
	}
	return system, msgs
}

// interruptedTail returns the conversation's last message when it is an
// assistant answer that was interrupted (it ends with an abort marker: <C-c>,
// an error, a cut) and has no tool calls; nil otherwise. Such a message is
// not sent while nothing of the user's follows it: a conversation must not
// end in a partial answer (current Claude models reject an assistant
// "prefill", and the others would read it as the start of their own
// answer), so the next press asks again as if it had not been there. The
// buffer keeps it; once the user writes under the next @You:, it goes as a
// closed turn with its marker as a comment. An interrupted answer with tool
// calls gets error results for them (the cycle), so a user message follows it.
func interruptedTail(doc *buffer.Document) *buffer.Message {
	for i := len(doc.Messages) - 1; i >= 0; i-- {
		m := doc.Messages[i]
		switch m.Role {
		case "Assistant":
			if m.AbortMarker() == nil || len(m.ToolUses()) > 0 {
				return nil
			}
			return m
		case "You":
			for _, p := range userParts(doc, m) {
				if p.Kind != PartText || strings.TrimSpace(p.Text) != "" {
					return nil
				}
			}
		}
	}
	return nil
}

// blockErrors lists, by line, every block that must be fixed before sending.
func blockErrors(doc *buffer.Document) []error {
	type lineErr struct {
		line int
		err  error
	}
	var out []lineErr
	add := func(e *BlockError) { out = append(out, lineErr{e.Line, e}) }
	for _, u := range doc.ToolUses() {
		if first := doc.Use(u.ID); first != u {
			add(&BlockError{Kind: buffer.KindToolUse, Line: u.HeaderLine, ID: u.ID, Name: u.Name,
				Reason: fmt.Sprintf("reuses the id of the call on line %d; give it a unique id", first.HeaderLine)})
			continue
		}
		r := doc.Result(u.ID)
		switch {
		case r == nil:
			add(&BlockError{Kind: buffer.KindToolUse, Line: u.HeaderLine, ID: u.ID, Name: u.Name,
				Reason: "has no result yet; press <C-]> to categorize and run it"})
		case r.Status != "":
			add(&BlockError{Kind: buffer.KindToolResult, Line: r.HeaderLine, ID: u.ID, Name: u.Name,
				Reason: fmt.Sprintf("is still %s; sending is refused until it has a real result", r.Status)})
		}
	}
	for _, r := range doc.ToolResults() {
		if doc.Use(r.ToolUseID) == nil {
			add(&BlockError{Kind: buffer.KindToolResult, Line: r.HeaderLine, ID: r.ToolUseID,
				Reason: "answers no tool call in this buffer; remove it or fix its id"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	errs := make([]error, len(out))
	for i, e := range out {
		errs[i] = e.err
	}
	return errs
}

// SummaryPreface opens the text of a compaction summary in a request, so
// that the model knows the turns it summarizes are not there.
const SummaryPreface = "[The earlier part of this conversation is not included: it was compacted into this summary, which you wrote.]"

// SummaryText is the user text a compaction summary is sent as.
func SummaryText(s *buffer.Summary) string {
	return SummaryPreface + "\n\n" + buffer.UnescapeText(s.Content())
}

func userParts(doc *buffer.Document, m *buffer.Message) []Part {
	var parts []Part
	for _, s := range m.Segments {
		if start, _ := s.Lines(); doc.Compacted(start) {
			continue // before the summary's marker, in its message
		}
		switch s := s.(type) {
		case *buffer.Summary:
			if s == doc.Summary {
				parts = append(parts, Part{Kind: PartText, Text: SummaryText(s)})
			}
		case *buffer.Text:
			parts = append(parts, splitUser(buffer.UnescapeText(s.Value()), s.StartLine)...)
		case *buffer.ToolResult:
			if s.Status != "" || doc.Result(s.ToolUseID) != s {
				continue // placeholders are refused above; a duplicate is not sent
			}
			r := &ToolResult{ToolUseID: s.ToolUseID, Content: s.Content, IsError: s.IsError}
			if u := doc.Use(s.ToolUseID); u != nil && u.Name == "read" && !s.IsError {
				if f := readReference(s.Content); f != nil {
					r.Files = []*File{f}
				}
			}
			parts = append(parts, Part{Kind: PartToolResult, ToolResult: r})
		}
	}
	return parts
}

func assistantParts(doc *buffer.Document, m *buffer.Message, provider string) []Part {
	hasToolUse := len(m.ToolUses()) > 0
	var parts []Part
	for _, s := range m.Segments {
		switch s := s.(type) {
		case *buffer.Text:
			parts = append(parts, Part{Kind: PartText, Text: buffer.UnescapeText(s.Value())})
		case *buffer.Thinking:
			th := &Thinking{Content: buffer.UnescapeText(s.Content()), Provider: s.Provider, Signature: s.Signature, Redacted: s.Redacted}
			if s.Redacted {
				if provider != "anthropic" {
					continue // opaque data only Anthropic can read
				}
				th.Provider = "anthropic"
			} else if s.Provider != provider {
				th.Signature = "" // another provider's signature means nothing here
			}
			if strings.TrimSpace(th.Content) == "" && th.Signature == "" {
				continue
			}
			parts = append(parts, Part{Kind: PartThinking, Thinking: th})
		case *buffer.ToolUse:
			if doc.Use(s.ID) != s {
				continue
			}
			input := json.RawMessage("{}")
			if s.IsObject() {
				input = objectJSON([]byte(s.RawInput))
			}
			parts = append(parts, Part{Kind: PartToolUse, ToolUse: &ToolUse{ID: s.ID, Name: s.Name, Input: input}})
		case *buffer.Aborted:
			if !hasToolUse {
				parts = append(parts, Part{Kind: PartText, Text: "<!-- " + s.Message + " -->"})
			}
		}
	}
	for len(parts) > 0 {
		p := parts[len(parts)-1]
		if p.Kind != PartText || strings.TrimSpace(p.Text) != "" {
			break
		}
		parts = parts[:len(parts)-1]
	}
	return parts
}

// SummarizeInstruction is the fixed request of a compaction (:Flemma
// compact): the last user text of the summarization request, after the
// conversation so far.
const SummarizeInstruction = "Write a summary of this conversation so far that can replace it: the conversation will go on from your summary alone, without the messages above. " +
	"Keep everything needed to continue: the user's requests and goals in their own terms; the decisions made and why; the current state of the work " +
	"(files read or changed, with their paths; commands run and the results that still matter; errors met and how they were solved); " +
	"what is left to do and what was about to happen next; anything the user asked to keep in mind. " +
	"Be specific and complete, and leave out what no longer matters. " +
	"Answer with the summary only, in plain text or Markdown, without a preamble and without calling any tool."

// ForSummary returns the conversation msgs with SummarizeInstruction
// appended as the user's last text: the request that asks the model to
// summarize it. msgs is not changed.
func ForSummary(msgs []Message) []Message {
	out := make([]Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	ask := Part{Kind: PartText, Text: SummarizeInstruction}
	if n := len(out); n > 0 && out[n-1].Role == RoleUser {
		out[n-1].Parts = append(append([]Part(nil), out[n-1].Parts...), ask)
		return out
	}
	return append(out, Message{Role: RoleUser, Parts: []Part{ask}})
}
