package provider

import (
	"net/url"
	"strings"
)

// Reasoning round trips of Chat Completions servers (Config.Reasoning,
// providers.<name>.reasoning): how the reasoning a server streamed goes
// back to it in later requests.
const (
	// ReasoningContent: as the assistant message's reasoning_content, on
	// every message that made tool calls and on every message of the
	// current turn (DeepSeek's thinking mode refuses a request with a
	// tool-call message that lacks it; Kimi and vLLM read it the same way).
	ReasoningContent = "reasoning_content"
	// ReasoningNone: never (Mistral refuses the unknown field with a 422;
	// Google's endpoint takes thought signatures instead).
	ReasoningNone = "none"
)

// chatDialect is what a Chat Completions server documents beyond the
// common wire.
type chatDialect struct {
	// reasoning is ReasoningContent or ReasoningNone.
	reasoning string
	// google: Google's OpenAI-compatible endpoint (Gemini API, Vertex AI):
	// function calls carry extra_content.google.thought_signature.
	google bool
	// pdf: the server documents PDFs as {"type":"file"} content parts
	// (OpenAI, Azure OpenAI, OpenRouter).
	pdf bool
}

// dialectOf is the dialect of the server at base (the configured base
// URL) with the configured reasoning round trip ("" = the server's own).
func dialectOf(base, reasoning string) chatDialect {
	host := ""
	if u, err := url.Parse(base); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	d := chatDialect{reasoning: ReasoningContent}
	d.pdf = host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com") || host == "openrouter.ai"
	switch {
	case host == "api.mistral.ai" || strings.HasSuffix(host, ".mistral.ai"):
		d.reasoning = ReasoningNone
	case strings.HasSuffix(host, "generativelanguage.googleapis.com") || strings.HasSuffix(host, "aiplatform.googleapis.com"):
		d.reasoning, d.google = ReasoningNone, true
	}
	switch strings.ToLower(strings.TrimSpace(reasoning)) {
	case ReasoningContent:
		d.reasoning = ReasoningContent
	case ReasoningNone, "drop", "off":
		d.reasoning = ReasoningNone
	}
	return d
}

// Signer is the name signed thinking blocks of a provider carry in the
// buffer (<thinking NAME:signature="…">): the wire's for the built-in
// wires (their signatures mean the same to every endpoint of the wire),
// the configured name for a Chat Completions server, reduced to the
// letters and digits a thinking tag can hold.
func Signer(name, wire string) string {
	if w, ok := wireOf(wire); ok && w.Signs {
		return w.Name
	}
	var b strings.Builder
	for _, c := range []byte(name) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "chat"
	}
	return b.String()
}
