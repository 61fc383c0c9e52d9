package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// chat is the OpenAI Chat Completions client: the wire of the named
// OpenAI-compatible providers (Ollama, llama.cpp, vLLM, LM Studio,
// OpenRouter, LiteLLM, DeepSeek, Mistral, Azure OpenAI…). The base URL
// includes the version ("http://localhost:11434/v1"); the request goes to
// <base>/chat/completions.
func init() {
	registerWire(Wire{Name: "chat_completions", Selectable: true, List: listChat,
		Protected: []string{"messages", "model", "stream", "stream_options", "tool_choice", "tools"},
		New:       func(name string, cfg Config) Provider { return &chat{cfg: cfg, name: name} }})
}

type chat struct {
	cfg  Config
	name string // the configured name, e.g. "ollama"
}

const chatBase = "https://api.openai.com/v1"

func (c *chat) Name() string { return c.name }

func (c *chat) Stream(ctx context.Context, req Request, emit func(Event)) error {
	key, err := c.cfg.credential(ctx, c.name)
	if err != nil {
		return err
	}
	return c.streamWith(ctx, req, emit, key, c.cfg.BaseURL, http.Header{})
}

// streamWith sends req to the server at base with key (and the headers
// h): the Copilot provider gives its own token, endpoint and headers.
func (c *chat) streamWith(ctx context.Context, req Request, emit func(Event), key, base string, h http.Header) error {
	d := dialectOf(chatURL(base), c.cfg.Reasoning)
	body, err := chatBody(req, c.name, d)
	if err != nil {
		return &Error{Provider: c.name, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	c.cfg.setKey(h, key, "Authorization", "Bearer ")
	resp, err := post(ctx, c.cfg.HTTPClient, c.name, chatURL(base), h, body)
	if err != nil {
		return redact(err, key)
	}
	defer resp.Body.Close()
	p := &chatParser{emit: emit, provider: c.name, signer: Signer(c.name, chatWire)}
	err = consume(ctx, c.name, resp.Body, p)
	if p.finished && ctx.Err() == nil {
		// The answer is whole once a finish_reason came: a server that
		// sends no usage chunk, or drops the connection after it, lost
		// nothing.
		var pe *Error
		if err == nil || (errors.As(err, &pe) && pe.Status == 0 && !p.failed) {
			p.finish()
			return nil
		}
	}
	// Failed, stalled or cancelled: what arrived is kept (the writer marks
	// it cut), and the tokens the server reported are counted.
	p.flushText()
	p.reportUsage()
	return redact(err, key)
}

// chatURL is <base>/chat/completions, any query of the base kept.
func chatURL(base string) string {
	if base == "" {
		base = chatBase
	}
	b, q, _ := strings.Cut(base, "?")
	u := strings.TrimRight(b, "/") + "/chat/completions"
	if q != "" {
		u += "?" + q
	}
	return u
}

// chatBody builds the request body: tools and messages last. max_tokens and
// temperature only when set (local servers have their own defaults);
// reasoning_effort only for a thinking level set on purpose (many servers
// refuse fields they do not know).
func chatBody(req Request, name string, d chatDialect) ([]byte, error) {
	p := req.Params
	if p.Model == "" {
		return nil, fmt.Errorf("no model: set providers.%s.model (or model, or :Flemma switch %s <model>)", name, name)
	}
	body := map[string]any{
		"model":          p.Model,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	// What the catalogue knows of the model (any section: a gateway may
	// serve any of them) bounds what is sent; of a model it does not know
	// only what the user set is sent, and the server's defaults apply.
	_, info := req.modelInfo(chatWire)
	reasoning := info.Known && info.Thinking != ThinkingNone
	if p.MaxTokens > 0 {
		n := outputTokens(p, info, 0)
		// OpenAI's reasoning models refuse max_tokens.
		if reasoning && info.Provider == "openai" {
			body["max_completion_tokens"] = n
		} else {
			body["max_tokens"] = n
		}
	}
	if p.Temperature != nil && !info.NoSampling {
		body["temperature"] = *p.Temperature
	}
	if lvl := strings.ToLower(strings.TrimSpace(p.Thinking)); lvl != "" && (reasoning || !info.Known) {
		th, err := resolveThinking(Params{Thinking: p.Thinking}, "", "")
		if err != nil {
			return nil, err
		}
		if th.on {
			effort := th.level
			if info.Provider == "openai" {
				effort = effortFor(info, th.level) // the model's own words
			} else { // a gateway's reasoning_effort: the common words
				switch effort {
				case "minimal":
					effort = "low"
				case "max":
					effort = "high"
				}
			}
			body["reasoning_effort"] = effort
		}
	}
	if len(req.Tools) > 0 {
		tools := make([]any, 0, len(req.Tools))
		for _, t := range sortedTools(req.Tools) {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": wireName(t.Name), "description": t.Description, "parameters": schemaOrEmpty(t.InputSchema)}})
		}
		body["tools"] = tools
		body["tool_choice"] = "auto"
	}
	body["messages"] = chatMessages(req.System, req.Messages, Signer(name, chatWire), d, info.ThoughtSignatures)
	return encodeOrdered(body, "tools", "messages")
}

// chatMessages converts the conversation. Tool results become "tool"
// messages before the user's text. Reasoning of this server (unsigned, or
// signed by signer) goes back as the dialect documents it: as
// reasoning_content on every message that made tool calls and on every
// message of the current turn (after the last user text) — DeepSeek's
// thinking mode refuses a tool-call message without it, and drops it
// elsewhere — or not at all (Mistral refuses the field). Thought
// signatures of signer go back on the message's tool calls
// (extra_content.google.thought_signature, Google's endpoint): the n-th
// signed block on the n-th call; with signatures required (Gemini 3), a
// current-turn call that has none carries Google's documented placeholder.
// Reasoning of another provider becomes "<thinking>" text.
func chatMessages(system string, msgs []Message, signer string, d chatDialect, requireSignatures bool) []any {
	var out []any
	if system != "" {
		out = append(out, map[string]any{"role": "system", "content": system})
	}
	turn := 0 // index of the last user message with text
	names := map[string]string{}
	for i, m := range msgs {
		for _, p := range m.Parts {
			if m.Role == RoleUser && p.Kind == PartText && strings.TrimSpace(p.Text) != "" {
				turn = i
			}
			if p.Kind == PartToolUse {
				names[p.ToolUse.ID] = wireName(p.ToolUse.Name)
			}
		}
	}
	for i, m := range msgs {
		if m.Role == RoleUser {
			var text strings.Builder
			var files []any // image parts: the results' files, then the user's
			hasImage := false
			for _, p := range m.Parts {
				if p.Kind == PartToolResult {
					for _, f := range p.ToolResult.Files {
						c := chatFile(f, d)
						hasImage = hasImage || c["type"] != "text"
						files = append(files, map[string]any{"type": "text", "text": "Attached by the tool call " + p.ToolResult.ToolUseID + ":"}, c)
					}
				}
			}
			for _, p := range m.Parts {
				switch p.Kind {
				case PartToolResult:
					r := p.ToolResult
					content := r.Content
					if r.IsError {
						if content == "" {
							content = "Tool execution failed"
						}
						content = "Error: " + content
					}
					msg := map[string]any{"role": "tool", "tool_call_id": r.ToolUseID, "content": content}
					if n := names[r.ToolUseID]; n != "" {
						msg["name"] = n
					}
					out = append(out, msg)
				case PartText:
					text.WriteString(p.Text)
				case PartFile:
					c := chatFile(p.File, d)
					if c["type"] != "text" {
						hasImage = true
						if s := text.String(); strings.TrimSpace(s) != "" {
							files = append(files, map[string]any{"type": "text", "text": s})
						}
						text.Reset()
						files = append(files, c)
					} else {
						text.WriteString(c["text"].(string))
					}
				}
			}
			if !hasImage {
				// Tool messages are text only: without images the notes
				// join the user's text.
				var notes []string
				for _, f := range files {
					if t := f.(map[string]any)["text"].(string); !strings.HasPrefix(t, "Attached by") {
						notes = append(notes, t)
					}
				}
				if len(notes) > 0 {
					text.WriteString("\n" + strings.Join(notes, "\n"))
				}
				if s := strings.TrimSpace(text.String()); s != "" {
					out = append(out, map[string]any{"role": "user", "content": s})
				}
				continue
			}
			// Tool messages are text only: the images follow them in a user
			// message (the results' first, then the user's own).
			if s := text.String(); strings.TrimSpace(s) != "" {
				files = append(files, map[string]any{"type": "text", "text": s})
			}
			out = append(out, map[string]any{"role": "user", "content": files})
			continue
		}
		var text strings.Builder
		var foreign, reasoning, sigs []string
		var calls []map[string]any
		for _, p := range m.Parts {
			switch p.Kind {
			case PartText:
				text.WriteString(p.Text)
			case PartThinking:
				t := p.Thinking
				c := strings.TrimSpace(t.Content)
				if t.Redacted {
					continue
				}
				own := t.Provider == "" || t.Provider == signer
				if own && t.Signature != "" {
					sigs = append(sigs, t.Signature)
				}
				switch {
				case c == "":
				case own:
					reasoning = append(reasoning, c)
				default:
					foreign = append(foreign, c)
				}
			case PartToolUse:
				calls = append(calls, map[string]any{"id": p.ToolUse.ID, "type": "function",
					"function": map[string]any{"name": wireName(p.ToolUse.Name), "arguments": string(objectJSON(p.ToolUse.Input))}})
			}
		}
		content := strings.TrimSpace(text.String())
		if len(foreign) > 0 {
			content = strings.TrimSpace(foreignThinking(foreign) + "\n\n" + content)
		}
		if content == "" && len(calls) == 0 {
			continue
		}
		msg := map[string]any{"role": "assistant"}
		if content != "" {
			msg["content"] = content
		}
		if d.google {
			for j, call := range calls {
				sig := ""
				if j < len(sigs) {
					sig = sigs[j]
				} else if j == 0 && requireSignatures && i > turn {
					sig = vertexForeignSignature
				}
				if sig != "" {
					call["extra_content"] = map[string]any{"google": map[string]any{"thought_signature": sig}}
				}
			}
		}
		if len(calls) > 0 {
			list := make([]any, len(calls))
			for j, c := range calls {
				list[j] = c
			}
			msg["tool_calls"] = list
		}
		if len(reasoning) > 0 && d.reasoning == ReasoningContent && (len(calls) > 0 || i > turn) {
			msg["reasoning_content"] = strings.Join(reasoning, "\n\n")
		}
		out = append(out, msg)
	}
	return out
}

// chatParser turns chat.completion.chunk events into Events. Tool calls
// are assembled per index from their argument deltas and emitted when the
// finish_reason comes; the response is done with the usage chunk (or the
// end of the stream after the finish_reason). A chunk it cannot decode is
// handed on as EventUnreadable, never dropped in silence.
type chatParser struct {
	emit     func(Event)
	provider string
	signer   string // the name thought signatures are written under
	calls    []*chatCall
	byIndex  map[int]*chatCall
	usage    *Usage
	reported bool   // usage emitted
	textSig  string // a thought signature on the text (no call carried one)
	tags     thinkTags
	stop     string
	finished bool // a finish_reason came
	ended    bool // … and the usage chunk after it
	failed   bool // an error chunk
	done1    bool // EventDone emitted
}

type chatCall struct {
	id, name, sig string
	args          bytes.Buffer
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	CachedTokens        int `json:"cached_tokens"`           // Moonshot, flat
	PromptCacheHit      int `json:"prompt_cache_hit_tokens"` // DeepSeek
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// googleExtra is Google's extra_content on a delta or a tool call.
type googleExtra struct {
	Google struct {
		ThoughtSignature string `json:"thought_signature"`
	} `json:"google"`
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			// Content is a string, null, or (Mistral) a list of parts:
			// contentPieces.
			Content          json.RawMessage `json:"content"`
			Refusal          *string         `json:"refusal"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        any             `json:"reasoning"` // a string (Ollama, OpenRouter, vLLM); objects are ignored
			ExtraContent     *googleExtra    `json:"extra_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
				ExtraContent *googleExtra `json:"extra_content"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string    `json:"finish_reason"`
		Usage        *chatUsage `json:"usage"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (p *chatParser) done() bool { return p.ended || p.failed }

func (p *chatParser) handle(_ string, data []byte) error {
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return unreadable(p.emit, data, err)
	}
	if ch.Usage != nil {
		// Before an error: the tokens of a failed response are billed too.
		p.setUsage(ch.Usage)
		if p.finished {
			p.ended = true
		}
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		p.failed = true
		msg, _ := jsonErrorMessage(data)
		if msg == "" {
			msg = "stream error"
		}
		var code struct {
			Code any    `json:"code"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(ch.Error, &code)
		status := 0
		if n, ok := code.Code.(float64); ok && n >= 400 && n < 600 {
			status = int(n)
		}
		return &Error{Provider: p.provider, Message: withHint(msg), Retryable: retryCode(code.Code, code.Type) || retryableStatus(status)}
	}
	if len(ch.Choices) == 0 {
		return nil
	}
	c := ch.Choices[0]
	d := c.Delta
	if d.ReasoningContent != nil && *d.ReasoningContent != "" {
		p.emit(Event{Kind: EventThinking, Text: *d.ReasoningContent})
	} else if s, ok := d.Reasoning.(string); ok && s != "" {
		p.emit(Event{Kind: EventThinking, Text: s})
	}
	if s, ok := p.plainText(d.Content); ok {
		// The common case: a string once any opening think tag is decided.
		if s != "" {
			p.emit(Event{Kind: EventText, Text: s})
		}
	} else {
		pieces, err := contentPieces(d.Content)
		if err != nil {
			p.emit(Event{Kind: EventUnreadable, Text: string(data), Detail: "delta.content: " + err.Error()})
		}
		for _, pc := range pieces {
			if pc.thinking {
				p.emit(Event{Kind: EventThinking, Text: pc.text})
				continue
			}
			p.emitPieces(p.tags.feed(pc.text))
		}
	}
	if d.Refusal != nil && *d.Refusal != "" {
		p.emitPieces(p.tags.feed(*d.Refusal))
	}
	if x := d.ExtraContent; x != nil && x.Google.ThoughtSignature != "" {
		p.textSig = x.Google.ThoughtSignature
	}
	for _, tc := range d.ToolCalls {
		idx := -1
		if tc.Index != nil {
			idx = *tc.Index
		}
		call := p.byIndex[idx]
		if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
			// A new call; some servers reuse index 0 for every call.
			call = &chatCall{id: tc.ID}
			p.calls = append(p.calls, call)
			if p.byIndex == nil {
				p.byIndex = map[int]*chatCall{}
			}
			p.byIndex[idx] = call
		}
		if call.id == "" {
			call.id = tc.ID
		}
		if call.name == "" {
			call.name = tc.Function.Name
		}
		if x := tc.ExtraContent; x != nil && x.Google.ThoughtSignature != "" {
			call.sig = x.Google.ThoughtSignature
		}
		if a := bytes.TrimSpace(tc.Function.Arguments); len(a) > 0 && string(a) != "null" {
			var s string
			if a[0] == '"' && json.Unmarshal(a, &s) == nil {
				call.args.WriteString(s)
			} else {
				call.args.Write(a) // an object instead of a string (non-conforming servers)
			}
		}
	}
	if c.Usage != nil {
		p.setUsage(c.Usage)
	}
	if c.FinishReason != nil && *c.FinishReason != "" && !p.finished {
		p.finished = true
		p.flushText()
		switch *c.FinishReason {
		case "stop", "end_turn", "eos":
			p.stop = "end_turn"
		case "tool_calls", "function_call":
			p.stop = "tool_use"
		case "length", "max_tokens", "model_length":
			p.stop = "max_tokens"
		case "content_filter", "safety":
			p.stop = "content_filter"
		case "error":
			p.failed = true
			return &Error{Provider: p.provider, Message: "the server ended the response with an error (finish_reason error)", Retryable: true}
		default:
			p.stop = "incomplete"
		}
		if p.stop == "end_turn" && len(p.calls) > 0 {
			p.stop = "tool_use" // Ollama ends tool calls with "stop"
		}
		// Thought signatures, in the order of the calls that carried them
		// (Gemini signs the first call of a parallel set); the text's own
		// only when no call carried one.
		signed := false
		for _, call := range p.calls {
			if call.sig != "" {
				p.emit(Event{Kind: EventThinkingSignature, Signature: call.sig, Provider: p.signer})
				signed = true
			}
		}
		if !signed && p.textSig != "" {
			p.emit(Event{Kind: EventThinkingSignature, Signature: p.textSig, Provider: p.signer})
		}
		for i, call := range p.calls {
			id := call.id
			if id == "" {
				id = fmt.Sprintf("call_%d", i)
			}
			raw := call.args.Bytes()
			p.emit(Event{Kind: EventToolUse, ToolUse: &ToolUse{ID: id, Name: internalName(call.name),
				Input: objectJSON(raw), Incomplete: incompleteJSON(raw)}})
		}
	}
	return nil
}

// plainText is delta.content when it is a string that needs no splitting:
// the think-tag splitter is past the start of the answer and holds nothing.
func (p *chatParser) plainText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' || p.tags.state != tagsText || p.tags.pending != "" || p.tags.trimNL {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// emitPieces hands on what the think-tag splitter decided.
func (p *chatParser) emitPieces(ps []piece) {
	for _, pc := range ps {
		kind := EventText
		if pc.thinking {
			kind = EventThinking
		}
		p.emit(Event{Kind: kind, Text: pc.text})
	}
}

// flushText hands on text the think-tag splitter still holds.
func (p *chatParser) flushText() { p.emitPieces(p.tags.flush()) }

// reportUsage emits the usage once.
func (p *chatParser) reportUsage() {
	if p.usage != nil && !p.reported {
		p.reported = true
		p.emit(Event{Kind: EventUsage, Usage: p.usage})
	}
}

func (p *chatParser) setUsage(u *chatUsage) {
	cached := u.CachedTokens
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens > 0 {
		cached = d.CachedTokens
	}
	if cached == 0 {
		cached = u.PromptCacheHit
	}
	us := Usage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadTokens: cached}
	if d := u.CompletionTokensDetails; d != nil {
		us.ThinkingTokens = d.ReasoningTokens
	}
	p.usage = &us
}

// finish reports the usage and ends the response (once).
func (p *chatParser) finish() {
	if p.done1 {
		return
	}
	p.done1 = true
	p.flushText()
	p.reportUsage()
	p.emit(Event{Kind: EventDone, StopReason: p.stop})
}
