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
	turn, names := chatTurn(msgs)
	for i, m := range msgs {
		if m.Role == RoleUser {
			out = append(out, chatUserMessages(m.Parts, names, d)...)
			continue
		}
		if msg := chatAssistantMessage(m.Parts, signer, d, requireSignatures, i > turn); msg != nil {
			out = append(out, msg)
		}
	}
	return out
}

// chatTurn is the index of the last user message with text (the current
// turn is what follows it), and the wire names of the tool calls by id.
func chatTurn(msgs []Message) (int, map[string]string) {
	turn := 0
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
	return turn, names
}

// chatUser gathers the user message of a user turn: its text, and its
// content parts (the results' files, then the user's) once an image
// makes it a list.
type chatUser struct {
	d        chatDialect
	text     strings.Builder
	files    []any
	hasImage bool
}

// chatUserMessages converts a user message: a "tool" message per result,
// then the user's message (text, files).
func chatUserMessages(parts []Part, names map[string]string, d chatDialect) []any {
	u := &chatUser{d: d}
	for _, p := range parts {
		if p.Kind == PartToolResult {
			u.resultFiles(p.ToolResult)
		}
	}
	var out []any
	for _, p := range parts {
		switch p.Kind {
		case PartToolResult:
			out = append(out, chatToolMessage(p.ToolResult, names))
		case PartText:
			u.text.WriteString(p.Text)
		case PartFile:
			u.file(p.File)
		}
	}
	if msg := u.message(); msg != nil {
		out = append(out, msg)
	}
	return out
}

// chatToolMessage is a result as a "tool" message (text only).
func chatToolMessage(r *ToolResult, names map[string]string) map[string]any {
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
	return msg
}

// resultFiles adds a result's files, each after a note naming the call.
func (u *chatUser) resultFiles(r *ToolResult) {
	for _, f := range r.Files {
		c := chatFile(f, u.d)
		u.hasImage = u.hasImage || c["type"] != "text"
		u.files = append(u.files, map[string]any{"type": "text", "text": "Attached by the tool call " + r.ToolUseID + ":"}, c)
	}
}

// file adds a file of the user's: an image (or PDF) part after the text
// so far, or the note that replaces it as text.
func (u *chatUser) file(f *File) {
	c := chatFile(f, u.d)
	if c["type"] == "text" {
		u.text.WriteString(c["text"].(string))
		return
	}
	u.hasImage = true
	if s := u.text.String(); strings.TrimSpace(s) != "" {
		u.files = append(u.files, map[string]any{"type": "text", "text": s})
	}
	u.text.Reset()
	u.files = append(u.files, c)
}

// message is the user's message, or nil when it has nothing. Tool messages
// are text only: with an image, the content is the list of parts (the
// results' first, then the user's own); without one, the notes join the
// user's text.
func (u *chatUser) message() map[string]any {
	if u.hasImage {
		if s := u.text.String(); strings.TrimSpace(s) != "" {
			u.files = append(u.files, map[string]any{"type": "text", "text": s})
		}
		return map[string]any{"role": "user", "content": u.files}
	}
	var notes []string
	for _, f := range u.files {
		if t := f.(map[string]any)["text"].(string); !strings.HasPrefix(t, "Attached by") {
			notes = append(notes, t)
		}
	}
	if len(notes) > 0 {
		u.text.WriteString("\n" + strings.Join(notes, "\n"))
	}
	if s := strings.TrimSpace(u.text.String()); s != "" {
		return map[string]any{"role": "user", "content": s}
	}
	return nil
}

// chatAssistant gathers an assistant message: its text, its reasoning
// (this server's, and other providers'), this server's signatures and its
// tool calls.
type chatAssistant struct {
	text                     strings.Builder
	foreign, reasoning, sigs []string
	calls                    []map[string]any
}

// chatAssistantMessage converts an assistant message (nil when it has no
// text and no call). current: it is of the current turn.
func chatAssistantMessage(parts []Part, signer string, d chatDialect, requireSignatures, current bool) map[string]any {
	var a chatAssistant
	for _, p := range parts {
		switch p.Kind {
		case PartText:
			a.text.WriteString(p.Text)
		case PartThinking:
			a.thinking(p.Thinking, signer)
		case PartToolUse:
			a.calls = append(a.calls, map[string]any{"id": p.ToolUse.ID, "type": "function",
				"function": map[string]any{"name": wireName(p.ToolUse.Name), "arguments": string(objectJSON(p.ToolUse.Input))}})
		}
	}
	content := strings.TrimSpace(a.text.String())
	if len(a.foreign) > 0 {
		content = strings.TrimSpace(foreignThinking(a.foreign) + "\n\n" + content)
	}
	if content == "" && len(a.calls) == 0 {
		return nil
	}
	msg := map[string]any{"role": "assistant"}
	if content != "" {
		msg["content"] = content
	}
	if d.google {
		a.signCalls(requireSignatures && current)
	}
	if len(a.calls) > 0 {
		list := make([]any, len(a.calls))
		for j, c := range a.calls {
			list[j] = c
		}
		msg["tool_calls"] = list
	}
	if len(a.reasoning) > 0 && d.reasoning == ReasoningContent && (len(a.calls) > 0 || current) {
		msg["reasoning_content"] = strings.Join(a.reasoning, "\n\n")
	}
	return msg
}

// thinking keeps a reasoning block: this server's (unsigned, or signed by
// signer) as reasoning and its signature, another provider's as foreign;
// redacted blocks are dropped.
func (a *chatAssistant) thinking(t *Thinking, signer string) {
	if t.Redacted {
		return
	}
	c := strings.TrimSpace(t.Content)
	own := t.Provider == "" || t.Provider == signer
	if own && t.Signature != "" {
		a.sigs = append(a.sigs, t.Signature)
	}
	switch {
	case c == "":
	case own:
		a.reasoning = append(a.reasoning, c)
	default:
		a.foreign = append(a.foreign, c)
	}
}

// signCalls puts the n-th signature on the n-th call (Google's
// extra_content); placeholder: the first call has Google's placeholder
// when it has none.
func (a *chatAssistant) signCalls(placeholder bool) {
	for j, call := range a.calls {
		sig := ""
		if j < len(a.sigs) {
			sig = a.sigs[j]
		} else if j == 0 && placeholder {
			sig = vertexForeignSignature
		}
		if sig != "" {
			call["extra_content"] = map[string]any{"google": map[string]any{"thought_signature": sig}}
		}
	}
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
		Delta        chatDelta  `json:"delta"`
		FinishReason *string    `json:"finish_reason"`
		Usage        *chatUsage `json:"usage"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type chatDelta struct {
	// Content is a string, null, or (Mistral) a list of parts:
	// contentPieces.
	Content          json.RawMessage `json:"content"`
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        any             `json:"reasoning"` // a string (Ollama, OpenRouter, vLLM); objects are ignored
	ExtraContent     *googleExtra    `json:"extra_content"`
	ToolCalls        []chatCallDelta `json:"tool_calls"`
}

// chatCallDelta is a piece of a tool call: its index, and its id, name,
// signature or a fragment of its arguments.
type chatCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	ExtraContent *googleExtra `json:"extra_content"`
}

func (p *chatParser) done() bool { return p.ended || p.failed }

// handle reads one chunk: its usage (before an error: the tokens of a
// failed response are billed too), an error, or the first choice's delta,
// usage and finish_reason.
func (p *chatParser) handle(_ string, data []byte) error {
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return unreadable(p.emit, data, err)
	}
	if ch.Usage != nil {
		p.setUsage(ch.Usage)
		if p.finished {
			p.ended = true
		}
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		p.failed = true
		return chatStreamError(p.provider, data, ch.Error)
	}
	if len(ch.Choices) == 0 {
		return nil
	}
	c := ch.Choices[0]
	p.delta(&c.Delta, data)
	if c.Usage != nil {
		p.setUsage(c.Usage)
	}
	if c.FinishReason != nil && *c.FinishReason != "" && !p.finished {
		return p.finishReason(*c.FinishReason)
	}
	return nil
}

// chatStreamError is the error of an error chunk: its message, and
// whether its code or type says a retry may succeed.
func chatStreamError(provider string, data []byte, raw json.RawMessage) error {
	msg, _ := jsonErrorMessage(data)
	if msg == "" {
		msg = "stream error"
	}
	var code struct {
		Code any    `json:"code"`
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &code)
	status := 0
	if n, ok := code.Code.(float64); ok && n >= 400 && n < 600 {
		status = int(n)
	}
	return &Error{Provider: provider, Message: withHint(msg), Retryable: retryCode(code.Code, code.Type) || retryableStatus(status)}
}

// delta hands on a delta's reasoning, content and refusal, and keeps its
// signature and tool call pieces.
func (p *chatParser) delta(d *chatDelta, data []byte) {
	if d.ReasoningContent != nil && *d.ReasoningContent != "" {
		p.emit(Event{Kind: EventThinking, Text: *d.ReasoningContent})
	} else if s, ok := d.Reasoning.(string); ok {
		emitText(p.emit, EventThinking, s)
	}
	p.content(d.Content, data)
	if d.Refusal != nil && *d.Refusal != "" {
		p.emitPieces(p.tags.feed(*d.Refusal))
	}
	if x := d.ExtraContent; x != nil && x.Google.ThoughtSignature != "" {
		p.textSig = x.Google.ThoughtSignature
	}
	for i := range d.ToolCalls {
		p.callDelta(&d.ToolCalls[i])
	}
}

// content hands on delta.content: a string through the think-tag splitter
// (directly once any opening tag is decided, the common case), or a list of
// parts whose thinking parts are thinking.
func (p *chatParser) content(raw json.RawMessage, data []byte) {
	if s, ok := p.plainText(raw); ok {
		emitText(p.emit, EventText, s)
		return
	}
	pieces, err := contentPieces(raw)
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

// callDelta adds a tool call piece to its call: the call of its index,
// or a new one (some servers reuse index 0 for every call, with a new id).
func (p *chatParser) callDelta(tc *chatCallDelta) {
	idx := -1
	if tc.Index != nil {
		idx = *tc.Index
	}
	call := p.byIndex[idx]
	if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
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
	call.addArgs(tc.Function.Arguments)
}

// addArgs appends a fragment of the arguments: a JSON string's text, or
// (non-conforming servers) an object as it is.
func (c *chatCall) addArgs(raw json.RawMessage) {
	a := bytes.TrimSpace(raw)
	if len(a) == 0 || string(a) == "null" {
		return
	}
	var s string
	if a[0] == '"' && json.Unmarshal(a, &s) == nil {
		c.args.WriteString(s)
	} else {
		c.args.Write(a)
	}
}

// chatStops maps a finish_reason to the stop reason; any other one is
// "incomplete" (and "error" an error).
var chatStops = map[string]string{
	"stop": "end_turn", "end_turn": "end_turn", "eos": "end_turn",
	"tool_calls": "tool_use", "function_call": "tool_use",
	"length": "max_tokens", "max_tokens": "max_tokens", "model_length": "max_tokens",
	"content_filter": "content_filter", "safety": "content_filter",
}

// finishReason ends the answer: the text the splitter holds, the stop
// reason, the thought signatures, then the assembled tool calls.
func (p *chatParser) finishReason(reason string) error {
	p.finished = true
	p.flushText()
	if reason == "error" {
		p.failed = true
		return &Error{Provider: p.provider, Message: "the server ended the response with an error (finish_reason error)", Retryable: true}
	}
	p.stop = chatStops[reason]
	switch {
	case p.stop == "":
		p.stop = "incomplete"
	case p.stop == "end_turn":
		p.stop = turnEnd(len(p.calls) > 0) // Ollama ends tool calls with "stop"
	}
	p.emitSignatures()
	for i, call := range p.calls {
		id := call.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		p.emit(toolUseEvent(id, call.name, call.args.Bytes()))
	}
	return nil
}

// emitSignatures hands on the thought signatures, in the order of the
// calls that carried them (Gemini signs the first call of a parallel set);
// the text's own only when no call carried one.
func (p *chatParser) emitSignatures() {
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
