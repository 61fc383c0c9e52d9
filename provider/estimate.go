package provider

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// Estimation of the input tokens of a request (issue 30: the threshold
// that offers compaction, and "tokens that will be sent" for the usage
// estimate). No provider's tokenizer is at hand offline, so the estimate is
// a rule of thumb, the same for every wire: a token per 4 bytes of text
// (English prose is close to it; code and non-Latin scripts cost more, so
// the estimate is low for them), a few tokens of framing per message and
// part, an image at the largest size the providers bill without scaling
// (about 1,600 tokens), a PDF page as about 1,500 (its text and its image).
// It is for deciding whether a conversation nears a model's window, not
// for billing.
const (
	bytesPerToken     = 4
	tokensPerMessage  = 4
	tokensPerPart     = 3
	tokensPerImage    = 1600
	tokensPerPDFPage  = 1500
	tokensPerToolDef  = 10
	tokensUnknownFile = tokensPerImage // a file not loaded yet (an estimate without I/O)
)

// EstimateTokens estimates the input tokens of sending system, msgs and
// tools: what a request with them would cost of the model's context
// window, before its answer.
func EstimateTokens(system string, msgs []Message, tools []ToolDef) int {
	n := textTokens(system)
	for _, t := range tools {
		n += tokensPerToolDef + textTokens(t.Name) + textTokens(t.Description)
		if b, err := json.Marshal(t.InputSchema); err == nil {
			n += (len(b) + bytesPerToken - 1) / bytesPerToken
		}
	}
	for _, m := range msgs {
		n += tokensPerMessage
		for _, p := range m.Parts {
			n += tokensPerPart + partTokens(p)
		}
	}
	return n
}

// EstimateDocument estimates the input tokens of sending a parsed buffer
// to provider with tools: the tokens that will be sent (after a compaction
// summary, its text instead of what it replaces). File references count
// as tokensUnknownFile each (nothing is read), {{ }} as their code, and
// calls without results as they stand, so it answers for any buffer, also
// one that cannot be sent yet.
func EstimateDocument(doc *buffer.Document, provider string, tools []ToolDef) int {
	system, msgs := Conversation(doc, provider)
	return EstimateTokens(system, msgs, tools)
}

// EstimateRequest is EstimateTokens of a request.
func EstimateRequest(r Request) int { return EstimateTokens(r.System, r.Messages, r.Tools) }

func partTokens(p Part) int {
	switch p.Kind {
	case PartText:
		return textTokens(p.Text)
	case PartThinking:
		if p.Thinking != nil {
			return textTokens(p.Thinking.Content) + textTokens(p.Thinking.Signature)/4
		}
	case PartToolUse:
		if p.ToolUse != nil {
			return textTokens(p.ToolUse.Name) + textTokens(string(p.ToolUse.Input))
		}
	case PartToolResult:
		if r := p.ToolResult; r != nil {
			n := textTokens(r.Content)
			for _, f := range r.Files {
				n += fileTokens(f)
			}
			return n
		}
	case PartFile:
		return fileTokens(p.File)
	case PartExpr, PartCode:
		if p.Expr != nil {
			return textTokens(p.Expr.Code) // its value is not known before the send evaluates it
		}
	}
	return 0
}

func fileTokens(f *File) int {
	switch {
	case f == nil:
		return 0
	case f.Data == nil:
		return tokensUnknownFile
	case strings.HasPrefix(f.MIME, "image/"):
		return tokensPerImage
	case f.MIME == "application/pdf":
		return tokensPerPDFPage * max(1, pdfPages(f.Data))
	}
	return (len(f.Data) + bytesPerToken - 1) / bytesPerToken
}

// pdfPages counts the page objects of a PDF ("/Type /Page", not
// "/Pages"): a rough count (compressed object streams hide them).
func pdfPages(b []byte) int {
	n := 0
	for _, sep := range [][]byte{[]byte("/Type /Page"), []byte("/Type/Page")} {
		rest := b
		for {
			i := bytes.Index(rest, sep)
			if i < 0 {
				break
			}
			rest = rest[i+len(sep):]
			if len(rest) == 0 || rest[0] != 's' {
				n++
			}
		}
	}
	return n
}

func textTokens(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }
