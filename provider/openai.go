package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openai is the OpenAI Responses API client (send.md §2.2, §3.3).
func init() {
	registerWire(Wire{Name: "openai", Aliases: []string{"responses"}, Selectable: true, Builtin: true, Params: "openai",
		Key: KeySource{Env: []string{"OPENAI_API_KEY"}}, Signs: true, WebSearch: true, List: listOpenAI,
		Protected: []string{"input", "model", "stream", "tool_choice", "tools"},
		New:       func(_ string, cfg Config) Provider { return &openai{cfg: cfg} }})
}

type openai struct{ cfg Config }

const (
	openaiBase      = "https://api.openai.com"
	openaiMaxTokens = 64000 // when max_tokens is not set (and the model allows it)
)

func (o *openai) Name() string { return "openai" }

func (o *openai) Stream(ctx context.Context, req Request, emit func(Event)) error {
	key, err := o.cfg.credential(ctx, "openai")
	if err != nil {
		return err
	}
	body, err := openaiBody(req)
	if err != nil {
		return &Error{Provider: "openai", Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	h := http.Header{}
	o.cfg.setKey(h, key, "Authorization", "Bearer ")
	resp, err := post(ctx, o.cfg.HTTPClient, "openai", baseURL(o.cfg.BaseURL, openaiBase, "/v1/responses"), h, body)
	if err != nil {
		return redact(err, key)
	}
	defer resp.Body.Close()
	return redact(consume(ctx, "openai", resp.Body, &openaiParser{emit: emit}), key)
}

// openaiEffort is the reasoning effort for a level: the provider's own
// word (parameters.openai.reasoning) as given, else the model's word
// nearest the level (effortFor).
func openaiEffort(m ModelInfo, th thinking) string {
	if th.override != "" {
		return th.override
	}
	return effortFor(m, th.level)
}

// openaiBody builds the request body: tools and input last.
func openaiBody(req Request) ([]byte, error) {
	p := req.Params
	model, info := req.modelInfo("openai")
	maxTokens := outputTokens(p, info, openaiMaxTokens)
	retention, err := cacheRetention(p)
	if err != nil {
		return nil, err
	}
	th, err := resolveThinking(p, "", "reasoning")
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"model":             model,
		"stream":            true,
		"store":             false,
		"max_output_tokens": maxTokens,
	}
	// Every thinking form but none is reasoning.effort here: the
	// Responses API has no budget.
	if info.Thinking != ThinkingNone && info.Thinking != "" {
		switch {
		case th.on:
			summary := extraString(p, "reasoning_summary")
			if summary == "" {
				summary = "auto"
			}
			body["reasoning"] = map[string]any{"effort": openaiEffort(info, th), "summary": summary}
			body["include"] = []string{"reasoning.encrypted_content"}
		case th.explicit && takesEffort(info, "none"):
			body["reasoning"] = map[string]any{"effort": "none"}
		}
	}
	if p.Temperature != nil && !info.NoSampling {
		body["temperature"] = *p.Temperature
	}
	if retention != "none" {
		if retention == "long" {
			body["prompt_cache_retention"] = "24h"
		} else {
			body["prompt_cache_retention"] = "in_memory"
		}
		if k := extraString(p, "prompt_cache_key"); k != "" {
			body["prompt_cache_key"] = k
		}
	}
	if len(req.Tools) > 0 || req.Web.Search {
		tools := make([]any, 0, len(req.Tools)+1)
		if req.Web.Search {
			tools = append(tools, map[string]any{"type": "web_search"}) // billed per call
		}
		for _, t := range sortedTools(req.Tools) {
			def := map[string]any{"type": "function", "name": wireName(t.Name), "description": t.Description, "parameters": schemaOrEmpty(t.InputSchema)}
			if t.Strict {
				def["strict"] = true
			}
			tools = append(tools, def)
		}
		body["tools"] = tools
		body["tool_choice"] = "auto"
	}
	input, err := openaiInput(req.System, req.Messages, extraBool(p, "phase", true))
	if err != nil {
		return nil, err
	}
	body["input"] = input
	return encodeOrdered(body, "tools", "input")
}

// openaiInput converts the conversation into Responses input items.
func openaiInput(system string, msgs []Message, phase bool) ([]any, error) {
	var out []any
	if system != "" {
		out = append(out, map[string]any{"role": "developer", "content": system})
	}
	n := 0
	for _, m := range msgs {
		if m.Role == RoleUser {
			out = append(out, openaiUserItems(m.Parts)...)
			continue
		}
		n++
		items, err := openaiAssistantItems(m.Parts, n, phase)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// openaiUserItems: a function_call_output per result, then the user's
// message (text, files).
func openaiUserItems(parts []Part) []any {
	var out, content []any
	for _, p := range parts {
		switch p.Kind {
		case PartToolResult:
			out = append(out, openaiCallOutput(p.ToolResult))
		case PartText:
			if strings.TrimSpace(p.Text) != "" {
				content = append(content, map[string]any{"type": "input_text", "text": p.Text})
			}
		case PartFile:
			content = append(content, openaiFile(p.File))
		}
	}
	if len(content) > 0 {
		out = append(out, map[string]any{"role": "user", "content": content})
	}
	return out
}

// openaiCallOutput is a result as a function_call_output: its text, or
// (with files) an array of input parts: the text, then the files.
func openaiCallOutput(r *ToolResult) map[string]any {
	output := toolResultText(r)
	if r.IsError {
		output = "Error: " + output
	}
	var o any = output
	if len(r.Files) > 0 {
		items := []any{map[string]any{"type": "input_text", "text": output}}
		for _, f := range r.Files {
			items = append(items, openaiFile(f))
		}
		o = items
	}
	return map[string]any{"type": "function_call_output", "call_id": normalizeToolID(r.ToolUseID), "output": o}
}

// openaiAssistantItems converts the n-th assistant message: its signed
// reasoning items, then its text as messages (other providers' thinking
// first) between its function calls. phase: the messages say whether
// they are commentary (before a call) or the final answer.
func openaiAssistantItems(parts []Part, n int, phase bool) ([]any, error) {
	var out []any
	hasTool := false
	var foreign []string
	for _, p := range parts {
		switch p.Kind {
		case PartToolUse:
			hasTool = true
		case PartThinking:
			t := p.Thinking
			if t.Signature != "" && t.Provider == "openai" {
				item, err := openaiReasoningItem(t.Signature)
				if err != nil {
					return nil, err
				}
				out = append(out, item)
			} else if s := thinkingText(t); s != "" {
				foreign = append(foreign, s)
			}
		}
	}
	ph := "final_answer"
	if hasTool {
		ph = "commentary"
	}
	var acc []string
	if len(foreign) > 0 {
		acc = append(acc, foreignThinking(foreign))
	}
	k := 0
	flush := func() {
		text := strings.TrimSpace(strings.Join(acc, "\n\n"))
		acc = acc[:0]
		if text == "" {
			return
		}
		k++
		item := map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%d_%d", n, k),
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}, "status": "completed"}
		if phase {
			item["phase"] = ph
		}
		out = append(out, item)
	}
	for _, p := range parts {
		switch p.Kind {
		case PartText:
			acc = append(acc, p.Text)
		case PartToolUse:
			flush()
			out = append(out, map[string]any{"type": "function_call", "call_id": normalizeToolID(p.ToolUse.ID),
				"name": wireName(p.ToolUse.Name), "arguments": string(objectJSON(p.ToolUse.Input)), "status": "completed"})
		}
	}
	flush()
	return out, nil
}

// openaiReasoningItem decodes a signature written by this provider: the
// base64 of the JSON reasoning item (with its encrypted_content).
func openaiReasoningItem(sig string) (json.RawMessage, error) {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !json.Valid(b) || len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("an openai thinking signature is not a reasoning item (edited?); remove the signature or the block")
	}
	return json.RawMessage(b), nil
}

// openaiParser turns Responses events into Events (send.md §3.3).
type openaiParser struct {
	emit     func(Event)
	toolUsed bool
	finished bool
	searches int // web_search calls, billed apart
}

type openaiEvent struct {
	Type       string          `json:"type"`
	Delta      string          `json:"delta"`
	Item       json.RawMessage `json:"item"`
	Annotation *struct {
		Type  string `json:"type"`
		URL   string `json:"url"`
		Title string `json:"title"`
	} `json:"annotation"`
	Code    any    `json:"code"`
	Message string `json:"message"`
	// Response is set on response.completed / incomplete / failed.
	Response *openaiResponse `json:"response"`
	Error    *struct {
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// openaiResponse is the response object of the last events.
type openaiResponse struct {
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

type openaiItem struct {
	Action    *openaiAction `json:"action"` // web_search_call
	Type      string        `json:"type"`
	Name      string        `json:"name"`
	CallID    string        `json:"call_id"`
	Arguments string        `json:"arguments"`
	Status    string        `json:"status"` // "incomplete" when the response was cut inside it
}

// openaiAction is what a web_search_call did.
type openaiAction struct {
	Type    string `json:"type"`
	Query   string `json:"query"`
	URL     string `json:"url"`
	Sources []struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	} `json:"sources"`
}

func (p *openaiParser) done() bool { return p.finished }

// handle reads one event, by its type; a bare {"error": …} object is an
// error whatever its type.
func (p *openaiParser) handle(_ string, data []byte) error {
	var ev openaiEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return unreadable(p.emit, data, err)
	}
	if ev.Error != nil && ev.Type != "error" && ev.Type != "response.failed" {
		return &Error{Provider: "openai", Message: withHint(joinCode(ev.Error.Type, ev.Error.Message)), Retryable: retryCode(ev.Error.Code, ev.Error.Type)}
	}
	switch ev.Type {
	case "response.output_text.delta", "response.refusal.delta":
		// a refusal is the model's answer too: dropping it would leave
		// an empty response
		emitText(p.emit, EventText, ev.Delta)
	case "response.reasoning_summary_text.delta":
		emitText(p.emit, EventThinking, ev.Delta)
	case "response.reasoning_summary_part.added":
		// a new summary paragraph of the same reasoning item
	case "response.output_item.done":
		return p.itemDone(ev.Item, data)
	case "response.output_text.annotation.added":
		if a := ev.Annotation; a != nil && a.Type == "url_citation" {
			p.emit(Event{Kind: EventCitation, Sources: []Source{{URL: a.URL, Title: a.Title}}})
		}
	case "response.completed", "response.incomplete":
		p.completed(ev.Type == "response.incomplete", ev.Response)
	case "response.failed":
		return p.failed(ev.Response)
	case "error":
		return openaiStreamError(&ev)
	}
	return nil
}

// itemDone hands on a finished output item: a function call, a reasoning
// item (as the signature that sends it back), a web search.
func (p *openaiParser) itemDone(raw json.RawMessage, data []byte) error {
	var it openaiItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return unreadable(p.emit, data, err)
	}
	switch it.Type {
	case "function_call":
		p.toolUsed = true
		e := toolUseEvent(it.CallID, it.Name, []byte(it.Arguments))
		e.ToolUse.Incomplete = e.ToolUse.Incomplete || it.Status == "incomplete"
		p.emit(e)
	case "reasoning":
		p.emit(Event{Kind: EventThinkingSignature, Signature: base64.StdEncoding.EncodeToString(compactJSON(raw)), Provider: "openai"})
	case "web_search_call":
		if it.Action != nil {
			p.webSearch(it.Action)
		}
	}
	return nil
}

// webSearch reports a web_search_call: a search (billed) or a page the
// model opened.
func (p *openaiParser) webSearch(a *openaiAction) {
	var src []Source
	for _, x := range a.Sources {
		src = append(src, Source{URL: x.URL, Title: x.Title})
	}
	detail := "web_search"
	if a.Type == "search" {
		p.searches++
	} else if a.URL != "" {
		detail = "web_fetch" // open_page, find_in_page
	}
	p.emit(Event{Kind: EventWebSearch, Detail: detail, Text: a.Query + a.URL, Sources: src})
}

// completed ends the response (response.completed, or incomplete): its
// stop reason, and its usage.
func (p *openaiParser) completed(incomplete bool, r *openaiResponse) {
	stop := turnEnd(p.toolUsed)
	if r != nil {
		if incomplete {
			stop = openaiIncompleteStop(r)
		}
		p.usage(r)
	}
	p.finished = true
	p.emit(Event{Kind: EventDone, StopReason: stop})
}

// openaiIncompleteStop is the stop reason of an incomplete response:
// max_tokens, content_filter, or incomplete for any other reason (not a
// whole response).
func openaiIncompleteStop(r *openaiResponse) string {
	reason := ""
	if r.IncompleteDetails != nil {
		reason = r.IncompleteDetails.Reason
	}
	switch reason {
	case "max_output_tokens":
		return "max_tokens"
	case "content_filter":
		return reason
	}
	return "incomplete"
}

// failed is the error of response.failed; a failed response's tokens are
// billed too.
func (p *openaiParser) failed(r *openaiResponse) error {
	msg := "Response failed"
	var code any
	if r != nil {
		p.usage(r)
		if r.Error != nil && r.Error.Message != "" {
			msg = r.Error.Message
			code = r.Error.Code
		}
	}
	return &Error{Provider: "openai", Message: withHint(msg), Retryable: retryCode(code, "")}
}

// openaiStreamError is the error of an error event: its code and message,
// at the top level or in {"error":{…}}.
func openaiStreamError(ev *openaiEvent) error {
	code, msg, typ := ev.Code, ev.Message, ""
	if ev.Error != nil {
		typ = ev.Error.Type
		if ev.Error.Code != nil {
			code = ev.Error.Code
		}
		if ev.Error.Message != "" {
			msg = ev.Error.Message
		}
	}
	s := "stream error"
	if c := codeString(code); c != "" {
		s += " (code: " + c + ")"
	}
	if msg != "" {
		s += ": " + msg
	}
	return &Error{Provider: "openai", Message: withHint(s), Retryable: retryCode(code, typ)}
}

// usage reports the usage of a response object, when it has one.
func (p *openaiParser) usage(r *openaiResponse) {
	u := r.Usage
	if u == nil {
		return
	}
	usage := Usage{OutputTokens: u.OutputTokens, InputTokens: u.InputTokens}
	if d := u.InputTokensDetails; d != nil && d.CachedTokens > 0 {
		usage.CacheReadTokens = d.CachedTokens
		usage.InputTokens -= d.CachedTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		usage.ThinkingTokens = d.ReasoningTokens
	}
	usage.WebSearches, usage.SearchFee = p.searches, float64(p.searches)*openaiSearchFee
	p.emit(Event{Kind: EventUsage, Usage: &usage})
}

func compactJSON(raw []byte) []byte {
	b, err := marshal(json.RawMessage(raw))
	if err != nil {
		return raw
	}
	return b
}

func codeString(code any) string {
	switch c := code.(type) {
	case string:
		return c
	case float64:
		return fmt.Sprint(int(c))
	}
	return ""
}

func joinCode(typ, msg string) string {
	if typ != "" && msg != "" {
		return typ + " — " + msg
	}
	if msg == "" {
		return typ
	}
	return msg
}

// retryCode: an error's code or type names a passing condition (rate limit,
// server error, overload, timeout), or a numeric code is an HTTP status worth
// a retry.
func retryCode(code any, typ string) bool {
	if n, ok := code.(float64); ok && retryableStatus(int(n)) {
		return true
	}
	s := strings.ToLower(codeString(code) + " " + typ)
	for _, w := range []string{"rate_limit", "server_error", "overloaded", "timeout", "unavailable"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
