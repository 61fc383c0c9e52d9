package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// anthropic is the Anthropic Messages API client (send.md §2.1, §3.2). The
// replay provider is the same client with a scripted transport.
type anthropic struct {
	cfg     Config
	name    string // "anthropic", or "replay"
	keyless bool   // replay: no credential
}

const (
	anthropicBase         = "https://api.anthropic.com"
	anthropicVersion      = "2023-06-01"
	anthropicDefaultModel = "claude-sonnet-4-6"
	anthropicMaxTokens    = 32000
	anthropicMinBudget    = 1024
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
	resp, err := post(ctx, a.cfg.HTTPClient, a.name, baseURL(a.cfg.BaseURL, anthropicBase, "/v1/messages"), h, body)
	if err != nil {
		return redact(err, key)
	}
	defer resp.Body.Close()
	return redact(consume(ctx, a.name, resp.Body, &anthropicParser{emit: emit, provider: a.name}), key)
}

// anthropicBody builds the request body. Keys are sorted, with system,
// tools and messages last, so consecutive requests share a byte prefix.
func anthropicBody(req Request) ([]byte, error) {
	p := req.Params
	model := p.Model
	if model == "" {
		model = anthropicDefaultModel
	}
	maxTokens := p.MaxTokens
	if maxTokens <= 0 {
		maxTokens = anthropicMaxTokens
	}
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
		"model":      model,
		"max_tokens": maxTokens,
		"stream":     true,
		"messages":   anthropicMessages(req.Messages),
	}
	thinkingOn := false
	if th.on {
		if t, oc := anthropicThinking(model, maxTokens, th, p); t != nil {
			body["thinking"] = t
			thinkingOn = true
			if oc != nil {
				body["output_config"] = oc
			}
		}
	}
	// The API accepts no temperature but 1 with thinking; the setting is
	// dropped then rather than failing the request.
	if p.Temperature != nil && !thinkingOn {
		body["temperature"] = *p.Temperature
	}
	if req.System != "" {
		if cache != nil {
			body["system"] = []any{map[string]any{"type": "text", "text": req.System, "cache_control": cache}}
		} else {
			body["system"] = req.System
		}
	}
	if len(req.Tools) > 0 {
		tools := make([]any, 0, len(req.Tools))
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

func schemaOrEmpty(s map[string]any) map[string]any {
	if s == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return s
}

// anthropicThinking returns the thinking and output_config objects for a
// model: adaptive thinking with an effort (Claude 4.6+), a budget with an
// effort (Opus 4.5), a budget alone (other thinking models), or nothing
// (models without extended thinking).
func anthropicThinking(model string, maxTokens int, th thinking, p Params) (map[string]any, map[string]any) {
	adaptive := hasAnyPrefix(model, "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6")
	switch {
	case hasAnyPrefix(model, "claude-3-5", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-2", "claude-instant"):
		return nil, nil
	case adaptive:
		effort := anthropicEffort(model, th.level)
		if e := strings.ToLower(extraString(p, "effort")); e != "" {
			effort = e
		}
		return map[string]any{"type": "adaptive", "display": "summarized"}, map[string]any{"effort": effort}
	case hasAnyPrefix(model, "claude-opus-4-5"):
		return map[string]any{"type": "enabled", "budget_tokens": max(th.budget, anthropicMinBudget)},
			map[string]any{"effort": anthropicEffort(model, th.level)}
	}
	budget := max(th.budget, anthropicMinBudget)
	if budget >= maxTokens {
		budget = max(maxTokens-1, anthropicMinBudget)
	}
	return map[string]any{"type": "enabled", "budget_tokens": budget}, nil
}

func anthropicEffort(model, level string) string {
	switch level {
	case "minimal", "low":
		return "low"
	case "medium":
		return "medium"
	case "max":
		if hasAnyPrefix(model, "claude-opus-4-6", "claude-opus-4-7") {
			return "max"
		}
	}
	return "high"
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
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
			for _, p := range m.Parts {
				if p.Kind == PartToolResult {
					r := map[string]any{"type": "tool_result", "tool_use_id": normalizeToolID(p.ToolResult.ToolUseID), "content": p.ToolResult.Content}
					if p.ToolResult.IsError {
						r["is_error"] = true
					}
					content = append(content, r)
				}
			}
			for _, p := range m.Parts {
				if p.Kind == PartText && strings.TrimSpace(p.Text) != "" {
					content = append(content, map[string]any{"type": "text", "text": p.Text})
				}
			}
		} else {
			var foreign []string
			for _, p := range m.Parts {
				if p.Kind != PartThinking {
					continue
				}
				t := p.Thinking
				switch {
				case t.Redacted:
					content = append(content, map[string]any{"type": "redacted_thinking", "data": t.Content})
				case t.Signature != "" && t.Provider == "anthropic":
					content = append(content, map[string]any{"type": "thinking", "thinking": t.Content, "signature": t.Signature})
				case strings.TrimSpace(t.Content) != "":
					foreign = append(foreign, strings.TrimSpace(t.Content))
				}
			}
			if len(foreign) > 0 {
				content = append(content, map[string]any{"type": "text", "text": foreignThinking(foreign)})
			}
			for _, p := range m.Parts {
				if p.Kind == PartText {
					if s := strings.TrimSpace(p.Text); s != "" {
						content = append(content, map[string]any{"type": "text", "text": s})
					}
				}
			}
			for _, p := range m.Parts {
				if p.Kind == PartToolUse {
					content = append(content, map[string]any{"type": "tool_use", "id": normalizeToolID(p.ToolUse.ID),
						"name": wireName(p.ToolUse.Name), "input": objectJSON(p.ToolUse.Input)})
				}
			}
		}
		if len(content) == 0 {
			continue
		}
		out = append(out, map[string]any{"role": string(m.Role), "content": content})
	}
	return out
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
}

type anthropicUsage struct {
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
	CacheReadTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationTokens *int `json:"cache_creation_input_tokens"`
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type     string `json:"type"`
		ID       string `json:"id"`
		Name     string `json:"name"`
		Data     string `json:"data"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *anthropicParser) done() bool { return p.finished }

func (p *anthropicParser) handle(_ string, data []byte) error {
	var ev anthropicEvent
	if json.Unmarshal(data, &ev) != nil {
		return nil // not JSON: ignored, as the reference does
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
	case "content_block_start":
		if ev.ContentBlock == nil {
			return nil
		}
		b := &anthropicBlock{typ: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name, data: ev.ContentBlock.Data}
		p.blocks[ev.Index] = b
		switch b.typ {
		case "text":
			if ev.ContentBlock.Text != "" {
				p.emit(Event{Kind: EventText, Text: ev.ContentBlock.Text})
			}
		case "thinking":
			if ev.ContentBlock.Thinking != "" {
				p.emit(Event{Kind: EventThinking, Text: ev.ContentBlock.Thinking})
			}
		}
	case "content_block_delta":
		b := p.blocks[ev.Index]
		if ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text != "" {
				p.emit(Event{Kind: EventText, Text: ev.Delta.Text})
			}
		case "thinking_delta":
			if ev.Delta.Thinking != "" {
				p.emit(Event{Kind: EventThinking, Text: ev.Delta.Thinking})
			}
		case "input_json_delta":
			if b != nil {
				b.json.WriteString(ev.Delta.PartialJSON)
			}
		case "signature_delta":
			if b != nil {
				b.sig.WriteString(ev.Delta.Signature)
			}
		}
	case "content_block_stop":
		b := p.blocks[ev.Index]
		delete(p.blocks, ev.Index)
		if b == nil {
			return nil
		}
		switch b.typ {
		case "tool_use":
			raw := []byte(b.json.String())
			p.emit(Event{Kind: EventToolUse, ToolUse: &ToolUse{ID: b.id, Name: internalName(b.name), Input: objectJSON(raw), Incomplete: incompleteJSON(raw)}})
		case "thinking":
			if b.sig.Len() > 0 {
				p.emit(Event{Kind: EventThinkingSignature, Signature: b.sig.String(), Provider: "anthropic"})
			}
		case "redacted_thinking":
			p.emit(Event{Kind: EventRedactedThinking, Text: b.data})
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			p.stop = ev.Delta.StopReason
		}
	case "message_stop":
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
	if ev.Type != "message_start" {
		p.addUsage(ev.Usage)
	}
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
	if p.usage != before {
		u := p.usage
		p.emit(Event{Kind: EventUsage, Usage: &u})
	}
}

func anthropicStreamError(provider string, e *struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}) error {
	if e == nil {
		return &Error{Provider: provider, Message: "stream error"}
	}
	msg := e.Message
	if e.Type != "" && msg != "" {
		msg = e.Type + " — " + msg
	} else if msg == "" {
		msg = e.Type
	}
	retry := e.Type == "overloaded_error" || e.Type == "rate_limit_error" || e.Type == "api_error"
	return &Error{Provider: provider, Message: withHint(msg), Retryable: retry}
}
