package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// anthropic is the Anthropic Messages API client (send.md §2.1, §3.2). The
// replay provider is the same client with a scripted transport.
func init() {
	registerWire(Wire{Name: "anthropic", Selectable: true, Builtin: true, Params: "anthropic",
		Key: KeySource{Env: []string{"ANTHROPIC_API_KEY"}}, Signs: true, WebSearch: true, WebFetch: true, List: listAnthropic,
		Protected: []string{"messages", "model", "stream", "system", "tool_choice", "tools"},
		New:       func(_ string, cfg Config) Provider { return &anthropic{cfg: cfg, name: "anthropic"} }})
}

type anthropic struct {
	cfg     Config
	name    string // "anthropic", or "replay"
	keyless bool   // replay: no credential
}

const (
	anthropicBase      = "https://api.anthropic.com"
	anthropicVersion   = "2023-06-01"
	anthropicMaxTokens = 32000
	anthropicMinBudget = 1024
)

func (a *anthropic) Name() string { return a.name }

func (a *anthropic) Stream(ctx context.Context, req Request, emit func(Event)) error {
	key := ""
	if !a.keyless {
		var err error
		if key, err = a.cfg.credential(ctx, "anthropic"); err != nil {
			return err
		}
	}
	body, err := anthropicBody(req)
	if err != nil {
		return &Error{Provider: a.name, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	h := http.Header{}
	a.cfg.setKey(h, key, "x-api-key", "")
	h.Set("anthropic-version", anthropicVersion)
	if req.Web.Fetch {
		h.Set("anthropic-beta", anthropicWebFetchBeta)
	}
	resp, err := post(ctx, a.cfg.HTTPClient, a.name, baseURL(a.cfg.BaseURL, anthropicBase, "/v1/messages"), h, body)
	if err != nil {
		return redact(err, key)
	}
	defer resp.Body.Close()
	return redact(consume(ctx, a.name, resp.Body, &anthropicParser{emit: emit, provider: a.name}), key)
}

// anthropicWebTools are Anthropic's server tools the request turns on:
// web_search (billed per search) and web_fetch (beta: anthropicWebFetchBeta).
func anthropicWebTools(w WebTools) []any {
	uses := func(n int) int {
		if n <= 0 {
			return 5
		}
		return n
	}
	var out []any
	if w.Search {
		out = append(out, map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": uses(w.SearchUses)})
	}
	if w.Fetch {
		out = append(out, map[string]any{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": uses(w.FetchUses)})
	}
	return out
}

// anthropicWebFetchBeta is the beta header web_fetch needs.
const anthropicWebFetchBeta = "web-fetch-2025-09-10"

// anthropicBody builds the request body. Keys are sorted, with system,
// tools and messages last, so consecutive requests share a byte prefix.
func anthropicBody(req Request) ([]byte, error) {
	p := req.Params
	model, info := req.modelInfo("anthropic")
	maxTokens := outputTokens(p, info, anthropicMaxTokens)
	retention, err := cacheRetention(p)
	if err != nil {
		return nil, err
	}
	var cache map[string]any
	switch retention {
	case "short":
		cache = map[string]any{"type": "ephemeral"}
	case "long":
		cache = map[string]any{"type": "ephemeral", "ttl": "1h"}
	}
	th, err := resolveThinking(p, "thinking_budget", "")
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"model":    model,
		"stream":   true,
		"messages": anthropicMessages(req.Messages),
	}
	thinkingOn := false
	// A tool loop another provider (or an unsigned block) started cannot
	// go on with thinking: the API wants the turn that made the calls to
	// start with its own signed thinking, and rejects the request
	// otherwise. Thinking is left off for this request.
	if th.on && !anthropicUnsignedToolTurn(req.Messages) {
		var t, oc map[string]any
		t, oc, maxTokens = anthropicThinking(info, maxTokens, th, p)
		if t != nil {
			body["thinking"] = t
			thinkingOn = true
		}
		if oc != nil {
			body["output_config"] = oc
		}
	}
	body["max_tokens"] = maxTokens
	// The API accepts no temperature but 1 with thinking, and none at all
	// on the newest models: the setting is dropped then rather than
	// failing the request.
	if p.Temperature != nil && !thinkingOn && !info.NoSampling {
		body["temperature"] = *p.Temperature
	}
	if req.System != "" {
		if cache != nil {
			body["system"] = []any{map[string]any{"type": "text", "text": req.System, "cache_control": cache}}
		} else {
			body["system"] = req.System
		}
	}
	if web := anthropicWebTools(req.Web); len(req.Tools) > 0 || len(web) > 0 {
		tools := make([]any, 0, len(req.Tools)+len(web))
		tools = append(tools, web...)
		for i, t := range sortedTools(req.Tools) {
			def := map[string]any{
				"name":                  wireName(t.Name),
				"description":           t.Description,
				"input_schema":          schemaOrEmpty(t.InputSchema),
				"eager_input_streaming": true,
			}
			if cache != nil && i == len(req.Tools)-1 {
				def["cache_control"] = cache
			}
			tools = append(tools, def)
		}
		body["tools"] = tools
		body["tool_choice"] = map[string]any{"type": "auto"}
	}
	if cache != nil {
		body["cache_control"] = cache
	}
	return encodeOrdered(body, "system", "tools", "messages")
}

// anthropicUnsignedToolTurn reports whether the conversation ends with tool
// results answering an assistant turn that does not start with Anthropic's
// own thinking (signed or redacted): made by another provider, or whose
// signature was lost.
func anthropicUnsignedToolTurn(msgs []Message) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].Role != RoleUser {
		return false
	}
	results := false
	for _, p := range msgs[n-1].Parts {
		results = results || p.Kind == PartToolResult
	}
	if !results || msgs[n-2].Role != RoleAssistant {
		return false
	}
	for _, p := range msgs[n-2].Parts {
		if p.Kind == PartThinking && anthropicNative(p.Thinking) {
			return false
		}
	}
	return true
}

// anthropicNative reports whether a thinking block goes back to Anthropic as
// a thinking (or redacted_thinking) block rather than as text.
func anthropicNative(t *Thinking) bool {
	return t.Redacted || t.Signature != "" && t.Provider == "anthropic"
}

func schemaOrEmpty(s map[string]any) map[string]any {
	if s == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return s
}

// anthropicThinking returns the thinking and output_config objects for a
// model, and the max_tokens to send with them: adaptive thinking with an
// effort (Claude 4.6 and later), a budget (with an effort on Opus 4.5), an
// effort alone, or nothing (models without extended thinking, and a budget
// that cannot fit under max_tokens).
func anthropicThinking(m ModelInfo, maxTokens int, th thinking, p Params) (map[string]any, map[string]any, int) {
	effort := func() map[string]any {
		e := effortFor(m, th.level)
		if x := strings.ToLower(extraString(p, "effort")); x != "" {
			e = x
		}
		return map[string]any{"effort": e}
	}
	switch m.Thinking {
	case ThinkingAdaptive:
		return map[string]any{"type": "adaptive", "display": "summarized"}, effort(), maxTokens
	case ThinkingEffort:
		return nil, effort(), maxTokens
	case ThinkingBudget:
		budget, mt, ok := fitBudget(p, m, th.budget, max(m.MinBudget, anthropicMinBudget), m.MaxBudget, maxTokens)
		if !ok {
			return nil, nil, maxTokens
		}
		var oc map[string]any
		if len(m.Efforts) > 0 {
			oc = effort()
		}
		return map[string]any{"type": "enabled", "budget_tokens": budget}, oc, mt
	}
	return nil, nil, maxTokens
}

// anthropicMessages converts the conversation. User content: tool results
// first, then text. Assistant content: native thinking (signed by
// Anthropic, or redacted), then other providers' thinking as one text,
// then text, then tool uses.
func anthropicMessages(msgs []Message) []any {
	out := make([]any, 0, len(msgs))
	for _, m := range msgs {
		var content []any
		if m.Role == RoleUser {
			content = anthropicUserContent(m.Parts)
		} else {
			content = anthropicAssistantContent(m.Parts)
		}
		if len(content) == 0 {
			continue
		}
		out = append(out, map[string]any{"role": string(m.Role), "content": content})
	}
	return out
}

// anthropicUserContent: the tool results, then the text and files.
func anthropicUserContent(parts []Part) []any {
	var content []any
	for _, p := range parts {
		if p.Kind == PartToolResult {
			content = append(content, anthropicToolResult(p.ToolResult))
		}
	}
	for _, p := range parts {
		switch {
		case p.Kind == PartText && strings.TrimSpace(p.Text) != "":
			content = append(content, map[string]any{"type": "text", "text": p.Text})
		case p.Kind == PartFile:
			content = append(content, anthropicFile(p.File))
		}
	}
	return content
}

// anthropicToolResult is a tool_result block: its text, and its files
// after the text.
func anthropicToolResult(r *ToolResult) map[string]any {
	var c any = toolResultText(r)
	if len(r.Files) > 0 {
		blocks := []any{map[string]any{"type": "text", "text": c}}
		for _, f := range r.Files {
			blocks = append(blocks, anthropicFile(f))
		}
		c = blocks
	}
	block := map[string]any{"type": "tool_result", "tool_use_id": normalizeToolID(r.ToolUseID), "content": c}
	if r.IsError {
		block["is_error"] = true
	}
	return block
}

// anthropicAssistantContent: native thinking, other providers' thinking as
// one text, the text, then the tool uses.
func anthropicAssistantContent(parts []Part) []any {
	var content []any
	var foreign []string
	for _, p := range parts {
		if p.Kind != PartThinking {
			continue
		}
		t := p.Thinking
		switch {
		case t.Redacted:
			content = append(content, map[string]any{"type": "redacted_thinking", "data": t.Content})
		case t.Signature != "" && t.Provider == "anthropic":
			text, sig := signedThinking(t.Content, t.Signature)
			content = append(content, map[string]any{"type": "thinking", "thinking": text, "signature": sig})
		case thinkingText(t) != "":
			foreign = append(foreign, thinkingText(t))
		}
	}
	if len(foreign) > 0 {
		content = append(content, map[string]any{"type": "text", "text": foreignThinking(foreign)})
	}
	for _, p := range parts {
		if s := strings.TrimSpace(p.Text); p.Kind == PartText && s != "" {
			content = append(content, map[string]any{"type": "text", "text": s})
		}
	}
	for _, p := range parts {
		if p.Kind == PartToolUse {
			content = append(content, map[string]any{"type": "tool_use", "id": normalizeToolID(p.ToolUse.ID),
				"name": wireName(p.ToolUse.Name), "input": objectJSON(p.ToolUse.Input)})
		}
	}
	return content
}

// thinkingText is what of a reasoning block can go back as text (another
// provider's, or an unsigned one): its trimmed content; nothing of a
// redacted block (its content is opaque data).
func thinkingText(t *Thinking) string {
	if t.Redacted {
		return ""
	}
	return strings.TrimSpace(t.Content)
}

// foreignThinking wraps another provider's (or unsigned) reasoning as text,
// so the model still sees it (thinking.foreign = "preserve").
func foreignThinking(parts []string) string {
	return "<thinking>\n" + strings.Join(parts, "\n\n") + "\n</thinking>"
}

// anthropicParser turns Messages API events into Events (send.md §3.2).
type anthropicParser struct {
	emit     func(Event)
	provider string
	blocks   map[int]*anthropicBlock
	stop     string
	usage    Usage
	finished bool
}

type anthropicBlock struct {
	typ, id, name, data string
	json, sig           strings.Builder
	cited               []Source // a text block's citations
}

type anthropicUsage struct {
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
	CacheReadTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationTokens *int `json:"cache_creation_input_tokens"`
	ServerToolUse       *struct {
		WebSearchRequests int `json:"web_search_requests"`
	} `json:"server_tool_use"`
}

// anthropicCitation is a citation of a text block (web_search_result_location).
type anthropicCitation struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *anthropicContentBlock `json:"content_block"`
	Delta        *anthropicDelta        `json:"delta"`
	Usage        *anthropicUsage        `json:"usage"`
	Error        *anthropicError        `json:"error"`
}

// anthropicContentBlock is the block a content_block_start opens.
type anthropicContentBlock struct {
	Type      string              `json:"type"`
	ID        string              `json:"id"`
	Name      string              `json:"name"`
	Data      string              `json:"data"`
	Text      string              `json:"text"`
	Thinking  string              `json:"thinking"`
	Input     json.RawMessage     `json:"input"`
	Content   json.RawMessage     `json:"content"` // a server tool's result
	Citations []anthropicCitation `json:"citations"`
}

// anthropicDelta is a content_block_delta's or message_delta's delta.
type anthropicDelta struct {
	Type        string             `json:"type"`
	Text        string             `json:"text"`
	PartialJSON string             `json:"partial_json"`
	Thinking    string             `json:"thinking"`
	Signature   string             `json:"signature"`
	StopReason  string             `json:"stop_reason"`
	Citation    *anthropicCitation `json:"citation"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (p *anthropicParser) done() bool { return p.finished }

// handle reads one event, by its type; the usage of any event but
// message_start (read from its message) is merged after it.
func (p *anthropicParser) handle(_ string, data []byte) error {
	var ev anthropicEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return unreadable(p.emit, data, err)
	}
	if p.blocks == nil {
		p.blocks = map[int]*anthropicBlock{}
	}
	switch ev.Type {
	case "error":
		return anthropicStreamError(p.provider, ev.Error)
	case "message_start":
		if ev.Message != nil {
			p.addUsage(ev.Message.Usage)
		}
		return nil
	case "content_block_start":
		if ev.ContentBlock == nil {
			return nil
		}
		p.blockStart(ev.Index, ev.ContentBlock)
	case "content_block_delta":
		if ev.Delta == nil {
			return nil
		}
		p.blockDelta(p.blocks[ev.Index], ev.Delta)
	case "content_block_stop":
		b := p.blocks[ev.Index]
		delete(p.blocks, ev.Index)
		if b == nil {
			return nil
		}
		p.blockStop(b)
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			p.stop = ev.Delta.StopReason
		}
	case "message_stop":
		return p.messageStop()
	}
	p.addUsage(ev.Usage)
	return nil
}

// blockStart opens the block at index: text or thinking it starts with is
// handed on, a server tool's whole input kept, a search result reported.
func (p *anthropicParser) blockStart(index int, cb *anthropicContentBlock) {
	b := &anthropicBlock{typ: cb.Type, id: cb.ID, name: cb.Name, data: cb.Data}
	p.blocks[index] = b
	switch b.typ {
	case "text":
		emitText(p.emit, EventText, cb.Text)
	case "thinking":
		emitText(p.emit, EventThinking, cb.Thinking)
	case "server_tool_use":
		if in := bytes.TrimSpace(cb.Input); len(in) > 2 {
			b.json.Write(in) // a whole input instead of deltas
		}
	case "web_search_tool_result", "web_fetch_tool_result":
		p.emit(Event{Kind: EventWebSearch, Detail: strings.TrimSuffix(b.typ, "_tool_result"), Sources: anthropicResults(cb.Content)})
	}
	for _, c := range cb.Citations {
		b.cited = append(b.cited, Source{URL: c.URL, Title: c.Title})
	}
}

// blockDelta hands on text and thinking; the pieces of a block (input,
// signature, citations) are added to b, the open block (nil if none).
func (p *anthropicParser) blockDelta(b *anthropicBlock, d *anthropicDelta) {
	switch d.Type {
	case "text_delta":
		emitText(p.emit, EventText, d.Text)
	case "thinking_delta":
		emitText(p.emit, EventThinking, d.Thinking)
	case "input_json_delta":
		if b != nil {
			b.json.WriteString(d.PartialJSON)
		}
	case "signature_delta":
		if b != nil {
			b.sig.WriteString(d.Signature)
		}
	case "citations_delta":
		if b != nil && d.Citation != nil {
			b.cited = append(b.cited, Source{URL: d.Citation.URL, Title: d.Citation.Title})
		}
	}
}

// blockStop closes b: a tool call, a signature, redacted thinking or a
// server tool's request is handed on whole, then the block's citations.
func (p *anthropicParser) blockStop(b *anthropicBlock) {
	switch b.typ {
	case "tool_use":
		p.emit(toolUseEvent(b.id, b.name, []byte(b.json.String())))
	case "thinking":
		if b.sig.Len() > 0 {
			p.emit(Event{Kind: EventThinkingSignature, Signature: b.sig.String(), Provider: "anthropic"})
		}
	case "redacted_thinking":
		p.emit(Event{Kind: EventRedactedThinking, Text: b.data})
	case "server_tool_use":
		// The search (or fetch) the model asked Anthropic to run.
		var in struct {
			Query string `json:"query"`
			URL   string `json:"url"`
		}
		_ = json.Unmarshal([]byte(b.json.String()), &in)
		p.emit(Event{Kind: EventWebSearch, Detail: b.name, Text: in.Query + in.URL})
	}
	if len(b.cited) > 0 {
		p.emit(Event{Kind: EventCitation, Sources: b.cited})
	}
}

// messageStop ends the response with the stop reason of message_delta
// (end_turn when none came); a refusal is an error.
func (p *anthropicParser) messageStop() error {
	switch p.stop {
	case "refusal", "sensitive":
		return &Error{Provider: p.provider, Message: "Response blocked by Anthropic (" + p.stop + ")"}
	case "":
		p.stop = "end_turn"
	}
	p.finished = true
	p.emit(Event{Kind: EventDone, StopReason: p.stop})
	return nil
}

// addUsage merges a usage object (any field may be missing) and reports the
// totals when they changed.
func (p *anthropicParser) addUsage(u *anthropicUsage) {
	if u == nil {
		return
	}
	before := p.usage
	if u.InputTokens != nil {
		p.usage.InputTokens = *u.InputTokens
	}
	if u.OutputTokens != nil {
		p.usage.OutputTokens = *u.OutputTokens
	}
	if u.CacheReadTokens != nil {
		p.usage.CacheReadTokens = *u.CacheReadTokens
	}
	if u.CacheCreationTokens != nil {
		p.usage.CacheWriteTokens = *u.CacheCreationTokens
	}
	if u.ServerToolUse != nil {
		p.usage.WebSearches = u.ServerToolUse.WebSearchRequests
		p.usage.SearchFee = float64(u.ServerToolUse.WebSearchRequests) * anthropicSearchFee
	}
	if p.usage != before {
		u := p.usage
		p.emit(Event{Kind: EventUsage, Usage: &u})
	}
}

func anthropicStreamError(provider string, e *anthropicError) error {
	if e == nil {
		return &Error{Provider: provider, Message: "stream error"}
	}
	msg := joinCode(e.Type, e.Message)
	retry := e.Type == "overloaded_error" || e.Type == "rate_limit_error" || e.Type == "api_error"
	return &Error{Provider: provider, Message: withHint(msg), Retryable: retry}
}

// anthropicResults reads a web_search_tool_result's content (a list of
// web_search_result) or a web_fetch_tool_result's (one web_fetch_result);
// an error result has no sources.
func anthropicResults(raw json.RawMessage) []Source {
	raw = bytes.TrimSpace(raw)
	var out []Source
	if len(raw) > 0 && raw[0] == '[' {
		var list []struct {
			Type  string `json:"type"`
			URL   string `json:"url"`
			Title string `json:"title"`
		}
		_ = json.Unmarshal(raw, &list)
		for _, r := range list {
			if r.URL != "" {
				out = append(out, Source{URL: r.URL, Title: r.Title})
			}
		}
		return out
	}
	var one struct {
		URL     string `json:"url"`
		Content struct {
			Title string `json:"title"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &one) == nil && one.URL != "" {
		out = append(out, Source{URL: one.URL, Title: one.Content.Title})
	}
	return out
}
