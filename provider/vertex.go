package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// vertex is the Gemini client, streamGenerateContent with alt=sse
// (send.md §2.3, §3.4), of Vertex AI (a project, an OAuth access token)
// or, with studio, of the Gemini API (AI Studio: the same wire at
// generativelanguage.googleapis.com, an API key in x-goog-api-key).
func init() {
	protected := []string{"contents", "systemInstruction", "toolConfig", "tools"}
	// Access tokens expire after an hour: the environment's is used first,
	// gcloud gives a fresh one (cached 55 minutes) when it is unset or
	// refused.
	registerWire(Wire{Name: "vertex", Selectable: true, Builtin: true, Params: "vertex", Protected: protected, Signs: true, WebSearch: true,
		Key: KeySource{Env: []string{"VERTEX_AI_ACCESS_TOKEN", "VERTEX_ACCESS_TOKEN"}, Cmd: gcloudToken, CacheTTL: 55 * time.Minute},
		New: func(_ string, cfg Config) Provider { return &vertex{cfg: cfg, newID: newVertexID} }})
	// The Gemini API: the same wire at Google AI Studio (parameters.vertex).
	// Its credential: an API key, as Google's SDKs read it.
	registerWire(Wire{Name: "gemini", Selectable: true, Builtin: true, Params: "vertex", Protected: protected, Signs: true, WebSearch: true, List: listGemini,
		Key: KeySource{Env: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}},
		New: func(_ string, cfg Config) Provider { return &vertex{cfg: cfg, newID: newVertexID, studio: true} }})
}

type vertex struct {
	cfg    Config
	newID  func(name string) string // tool call ids: Gemini sends none
	studio bool
}

const vertexMaxTokens = 32768 // when max_tokens is not set (and the model allows it)

// geminiBase is the Gemini API's endpoint.
const geminiBase = "https://generativelanguage.googleapis.com"

// Name is "vertex", or "gemini" for the Gemini API: also the name its
// thought signatures are written under (a signature goes back only to the
// endpoint that made it).
func (v *vertex) Name() string {
	if v.studio {
		return "gemini"
	}
	return "vertex"
}

// newVertexID synthesises a tool call id, urn:flemma:tool:<name>:<hex time><4 hex>.
func newVertexID(name string) string {
	return fmt.Sprintf("urn:flemma:tool:%s:%x%04x", name, time.Now().Unix(), rand.N(0x10000))
}

// endpoint returns the stream URL for a model.
func (v *vertex) endpoint(model string) (string, error) {
	if v.studio {
		return baseURL(v.cfg.BaseURL, geminiBase, "/v1beta/models/"+url.PathEscape(model)+":streamGenerateContent?alt=sse"), nil
	}
	project := strings.TrimSpace(v.cfg.Project)
	if project == "" {
		project = strings.TrimSpace(v.cfg.Getenv("GOOGLE_CLOUD_PROJECT"))
	}
	if project == "" {
		return "", errors.New("no Vertex AI project id: set providers.vertex.project in setup() or $GOOGLE_CLOUD_PROJECT")
	}
	location := strings.TrimSpace(v.cfg.Location)
	if location == "" {
		location = strings.TrimSpace(v.cfg.Getenv("GOOGLE_CLOUD_LOCATION"))
	}
	if location == "" {
		location = "global"
	}
	host := "https://aiplatform.googleapis.com"
	if location != "global" {
		host = "https://" + location + "-aiplatform.googleapis.com"
	}
	path := fmt.Sprintf("/v1beta1/projects/%s/locations/%s/publishers/google/models/%s:streamGenerateContent?alt=sse",
		url.PathEscape(project), url.PathEscape(location), url.PathEscape(model))
	return baseURL(v.cfg.BaseURL, host, path), nil
}

func (v *vertex) Stream(ctx context.Context, req Request, emit func(Event)) error {
	name := v.Name()
	token, err := v.cfg.credential(ctx, name)
	if err != nil {
		return err
	}
	model, _ := req.modelInfo(name)
	endpoint, err := v.endpoint(model)
	if err != nil {
		return &Error{Provider: name, Message: err.Error()}
	}
	body, err := vertexBody(req, name)
	if err != nil {
		return &Error{Provider: name, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	h := http.Header{}
	if v.studio {
		v.cfg.setKey(h, token, "x-goog-api-key", "")
	} else {
		v.cfg.setKey(h, token, "Authorization", "Bearer ")
	}
	resp, err := post(ctx, v.cfg.HTTPClient, name, endpoint, h, body)
	if err != nil {
		return redact(err, token)
	}
	defer resp.Body.Close()
	fee := gemini2SearchFee
	if _, info := req.modelInfo(name); info.ThoughtSignatures {
		fee = gemini3SearchFee
	}
	return redact(consume(ctx, name, resp.Body, &vertexParser{emit: emit, newID: v.newID, name: name, searchFee: fee}), token)
}

// vertexBody builds the request body: tools and contents last.
func vertexBody(req Request, signer string) ([]byte, error) {
	p := req.Params
	_, info := req.modelInfo("vertex")
	maxTokens := outputTokens(p, info, vertexMaxTokens)
	if _, err := cacheRetention(p); err != nil {
		return nil, err
	}
	th, err := resolveThinking(p, "thinking_budget", "")
	if err != nil {
		return nil, err
	}
	gen := map[string]any{}
	if p.Temperature != nil && !info.NoSampling {
		gen["temperature"] = *p.Temperature
	}
	var tc map[string]any
	if tc, maxTokens = vertexThinking(info, th, p, maxTokens); tc != nil {
		gen["thinkingConfig"] = tc
	}
	gen["maxOutputTokens"] = maxTokens
	body := map[string]any{
		"generationConfig": gen,
		"contents":         vertexContents(req.Messages, signer, info.ThoughtSignatures),
	}
	if req.System != "" {
		body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": req.System}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]any, 0, len(req.Tools))
		for _, t := range sortedTools(req.Tools) {
			decls = append(decls, map[string]any{"name": wireName(t.Name), "description": t.Description, "parametersJsonSchema": schemaOrEmpty(t.InputSchema)})
		}
		body["tools"] = []any{map[string]any{"functionDeclarations": decls}}
		body["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "AUTO"}}
	}
	if req.Web.Search {
		// Grounding with Google Search, billed per grounded prompt.
		tools, _ := body["tools"].([]any)
		body["tools"] = append([]any{map[string]any{"googleSearch": map[string]any{}}}, tools...)
	}
	return encodeOrdered(body, "tools", "contents")
}

// vertexThinking returns the thinkingConfig for a model, and the
// maxOutputTokens to send with it: a level (Gemini 3), a budget below
// maxOutputTokens (Gemini 2.5; 0 turns thinking off where the model
// allows it), or nothing for models that do not think, and for "off" on
// models that cannot stop.
func vertexThinking(m ModelInfo, th thinking, p Params, maxTokens int) (map[string]any, int) {
	switch m.Thinking {
	case ThinkingEffort, ThinkingAdaptive:
		if !th.on {
			return nil, maxTokens
		}
		return map[string]any{"includeThoughts": true, "thinkingLevel": strings.ToUpper(effortFor(m, th.level))}, maxTokens
	case ThinkingBudget:
		off := map[string]any{"thinkingBudget": 0}
		if m.AlwaysThinks {
			off = nil // the model's own budget rather than one it rejects
		}
		if !th.on {
			return off, maxTokens
		}
		budget, mt, ok := fitBudget(p, m, th.budget, max(m.MinBudget, 1), m.MaxBudget, maxTokens)
		if !ok {
			return off, maxTokens
		}
		return map[string]any{"includeThoughts": true, "thinkingBudget": budget}, mt
	}
	return nil, maxTokens
}

// vertexContents converts the conversation. User parts: functionResponse
// per result first, then text. Model parts: other providers' thinking as
// text, the text, then functionCall parts; the signature of the last
// Vertex-signed thinking rides on the first functionCall (or the text).
// With signed (Gemini 3 requires a signature on the calls of the current
// turn), calls that have none — made by another provider, or whose
// signature was lost — carry the placeholder Google documents for
// conversations that come from elsewhere.
func vertexContents(msgs []Message, signer string, signed bool) []any {
	names := map[string]string{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == PartToolUse {
				names[p.ToolUse.ID] = p.ToolUse.Name
			}
		}
	}
	out := make([]any, 0, len(msgs))
	for _, m := range msgs {
		role, parts := "model", []map[string]any(nil)
		if m.Role == RoleUser {
			role, parts = "user", vertexUserParts(m.Parts, names)
		} else {
			parts = vertexModelParts(m.Parts, signer, signed)
		}
		if len(parts) > 0 {
			out = append(out, map[string]any{"role": role, "parts": parts})
		}
	}
	return out
}

// vertexUserParts: a functionResponse per result, the results' files as
// inline data (a functionResponse holds JSON only on this API), then the
// user's text and files.
func vertexUserParts(msgParts []Part, names map[string]string) []map[string]any {
	var parts []map[string]any
	for _, p := range msgParts {
		if p.Kind != PartToolResult {
			continue
		}
		r := p.ToolResult
		key := "output"
		if r.IsError {
			key = "error"
		}
		parts = append(parts, map[string]any{"functionResponse": map[string]any{
			"name": wireName(vertexToolName(names, r.ToolUseID)), "response": map[string]any{key: toolResultText(r)}}})
	}
	for _, p := range msgParts {
		if p.Kind == PartToolResult {
			for _, f := range p.ToolResult.Files {
				parts = append(parts, vertexFile(f))
			}
		}
	}
	for _, p := range msgParts {
		switch {
		case p.Kind == PartText && strings.TrimSpace(p.Text) != "":
			parts = append(parts, map[string]any{"text": p.Text})
		case p.Kind == PartFile:
			parts = append(parts, vertexFile(p.File))
		}
	}
	return parts
}

// vertexModelParts: other providers' thinking as text, the text, then the
// functionCall parts, the signature on the first call (or the text).
func vertexModelParts(msgParts []Part, signer string, signed bool) []map[string]any {
	var parts []map[string]any
	sig := ""
	var foreign, texts []string
	for _, p := range msgParts {
		switch p.Kind {
		case PartThinking:
			t := p.Thinking
			if t.Signature != "" && t.Provider == signer {
				sig = t.Signature
			} else if s := thinkingText(t); s != "" {
				foreign = append(foreign, s)
			}
		case PartText:
			texts = append(texts, p.Text)
		}
	}
	if len(foreign) > 0 {
		parts = append(parts, map[string]any{"text": foreignThinking(foreign)})
	}
	textIdx := -1
	if s := strings.TrimSpace(strings.Join(texts, "\n\n")); s != "" {
		textIdx = len(parts)
		parts = append(parts, map[string]any{"text": s})
	}
	callIdx := -1
	for _, p := range msgParts {
		if p.Kind == PartToolUse {
			if callIdx < 0 {
				callIdx = len(parts)
			}
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": wireName(p.ToolUse.Name), "args": objectJSON(p.ToolUse.Input)}})
		}
	}
	if sig == "" && signed && callIdx >= 0 {
		sig = vertexForeignSignature
	}
	return vertexSign(parts, sig, callIdx, textIdx)
}

// vertexSign puts sig on the part at callIdx, else at textIdx, else on an
// empty text part of its own (nothing without a signature).
func vertexSign(parts []map[string]any, sig string, callIdx, textIdx int) []map[string]any {
	switch {
	case sig == "":
	case callIdx >= 0:
		parts[callIdx]["thoughtSignature"] = sig
	case textIdx >= 0:
		parts[textIdx]["thoughtSignature"] = sig
	default:
		parts = append(parts, map[string]any{"text": "", "thoughtSignature": sig})
	}
	return parts
}

// vertexForeignSignature is the thought signature Google documents for
// function calls that no Gemini model made ("skip_thought_signature_validator",
// https://ai.google.dev/gemini-api/docs/thought-signatures).
const vertexForeignSignature = "skip_thought_signature_validator"

// vertexToolName finds the tool a result answers: from its call in the
// conversation, else from an id of the form urn:flemma:tool:<name>:….
func vertexToolName(names map[string]string, id string) string {
	if n := names[id]; n != "" {
		return n
	}
	if rest, ok := strings.CutPrefix(id, "urn:flemma:tool:"); ok {
		if i := strings.LastIndexByte(rest, ':'); i > 0 {
			return rest[:i]
		}
	}
	return "unknown"
}

// vertexParser turns streamGenerateContent chunks into Events (send.md §3.4).
type vertexParser struct {
	emit  func(Event)
	newID func(string) string
	name  string // "vertex" or "gemini": errors and signatures

	searchFee float64 // per grounded prompt
	grounded  bool    // the answer was grounded with Google Search
	queries   []string
	sources   []Source
	sig       string
	toolUsed  bool
	finished  bool
}

type vertexChunk struct {
	Candidates     []vertexCandidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *vertexUsage    `json:"usageMetadata"`
	Error         json.RawMessage `json:"error"`
}

type vertexCandidate struct {
	Content struct {
		Parts []vertexPart `json:"parts"`
	} `json:"content"`
	FinishReason      string           `json:"finishReason"`
	GroundingMetadata *vertexGrounding `json:"groundingMetadata"`
}

type vertexPart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature any    `json:"thoughtSignature"`
	FunctionCall     *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// vertexGrounding is what Google Search found for the answer.
type vertexGrounding struct {
	WebSearchQueries []string `json:"webSearchQueries"`
	GroundingChunks  []struct {
		Web *struct {
			URI   string `json:"uri"`
			Title string `json:"title"`
		} `json:"web"`
	} `json:"groundingChunks"`
}

type vertexUsage struct {
	PromptTokenCount        *int `json:"promptTokenCount"`
	CandidatesTokenCount    *int `json:"candidatesTokenCount"`
	CachedContentTokenCount int  `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int  `json:"thoughtsTokenCount"`
}

func (p *vertexParser) done() bool { return p.finished }

// handle reads one chunk: an error (or a blocked prompt), else the first
// candidate's grounding and parts, then (with a finish reason) the
// searches, the signature and the end. The chunk's usage is reported after
// its content.
func (p *vertexParser) handle(_ string, data []byte) error {
	var c vertexChunk
	if err := json.Unmarshal(data, &c); err != nil {
		if m, ok := jsonErrorMessage(data); ok { // [{"error": …}]
			return &Error{Provider: p.name, Message: withHint(m)}
		}
		return unreadable(p.emit, data, err)
	}
	if err := p.chunkError(&c, data); err != nil {
		return err
	}
	usage := c.UsageMetadata.usage()
	if len(c.Candidates) == 0 {
		p.reportUsage(usage)
		return nil
	}
	cand := &c.Candidates[0]
	p.ground(cand.GroundingMetadata)
	for i := range cand.Content.Parts {
		p.part(&cand.Content.Parts[i])
	}
	if cand.FinishReason == "" {
		p.reportUsage(usage)
		return nil
	}
	p.emitSearches()
	if p.sig != "" {
		p.emit(Event{Kind: EventThinkingSignature, Signature: p.sig, Provider: p.name})
		p.sig = ""
	}
	p.reportUsage(usage)
	return p.finish(cand.FinishReason)
}

// chunkError is the error a chunk reports, or the blocked prompt's.
func (p *vertexParser) chunkError(c *vertexChunk, data []byte) error {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		m, _ := jsonErrorMessage(data)
		if m == "" {
			m = p.label() + " API error"
		}
		return &Error{Provider: p.name, Message: withHint(m), Retryable: strings.Contains(strings.ToUpper(m), "RESOURCE_EXHAUSTED") || strings.Contains(m, "UNAVAILABLE")}
	}
	if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" && len(c.Candidates) == 0 {
		return &Error{Provider: p.name, Message: "Prompt blocked by " + p.label() + " (" + c.PromptFeedback.BlockReason + ")"}
	}
	return nil
}

// usage is the usage a chunk reports (nil without token counts). Gemini
// counts thoughts apart from the answer; both are billed as output.
func (u *vertexUsage) usage() *Usage {
	if u == nil || (u.PromptTokenCount == nil && u.CandidatesTokenCount == nil) {
		return nil
	}
	usage := &Usage{ThinkingTokens: u.ThoughtsTokenCount}
	if u.PromptTokenCount != nil {
		usage.InputTokens = *u.PromptTokenCount
	}
	if u.CandidatesTokenCount != nil {
		usage.OutputTokens = *u.CandidatesTokenCount + u.ThoughtsTokenCount
	}
	if u.CachedContentTokenCount > 0 {
		usage.CacheReadTokens = u.CachedContentTokenCount
		usage.InputTokens -= u.CachedContentTokenCount
	}
	return usage
}

// reportUsage emits a chunk's usage, with the search fee of a grounded
// answer (billed per grounded prompt).
func (p *vertexParser) reportUsage(usage *Usage) {
	if usage == nil {
		return
	}
	if p.grounded {
		usage.WebSearches, usage.SearchFee = 1, p.searchFee
	}
	p.emit(Event{Kind: EventUsage, Usage: usage})
}

// ground keeps the searches Google ran and what they found.
func (p *vertexParser) ground(g *vertexGrounding) {
	if g == nil {
		return
	}
	p.grounded = p.grounded || len(g.WebSearchQueries) > 0
	p.queries = append(p.queries, g.WebSearchQueries...)
	for _, ch := range g.GroundingChunks {
		if ch.Web != nil {
			p.sources = append(p.sources, Source{URL: ch.Web.URI, Title: ch.Web.Title})
		}
	}
}

// part hands on a thought, a function call (with an id of ours: Gemini
// sends none) or text, and keeps the last thought signature.
func (p *vertexParser) part(part *vertexPart) {
	if s, ok := part.ThoughtSignature.(string); ok && s != "" {
		p.sig = s
	}
	switch {
	case part.Thought:
		emitText(p.emit, EventThinking, part.Text)
	case part.FunctionCall != nil:
		if part.FunctionCall.Name == "" {
			return
		}
		p.toolUsed = true
		name := internalName(part.FunctionCall.Name)
		p.emit(Event{Kind: EventToolUse, ToolUse: &ToolUse{ID: p.newID(name), Name: name, Input: objectJSON(part.FunctionCall.Args)}})
	default:
		emitText(p.emit, EventText, part.Text)
	}
}

// emitSearches reports the searches Google ran for the answer, the sources
// on the last (or alone when no query was named).
func (p *vertexParser) emitSearches() {
	for i, q := range p.queries {
		e := Event{Kind: EventWebSearch, Detail: "web_search", Text: q}
		if i == len(p.queries)-1 {
			e.Sources = p.sources
		}
		p.emit(e)
	}
	if len(p.queries) == 0 && len(p.sources) > 0 {
		p.emit(Event{Kind: EventWebSearch, Detail: "web_search", Sources: p.sources})
	}
	p.queries, p.sources = nil, nil
}

// finish ends the answer by its finish reason: done (end_turn, tool_use
// or max_tokens), an invalid tool call, or blocked.
func (p *vertexParser) finish(reason string) error {
	switch reason {
	case "STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED":
		stop := turnEnd(p.toolUsed)
		if reason == "MAX_TOKENS" {
			stop = "max_tokens"
		}
		p.finished = true
		p.emit(Event{Kind: EventDone, StopReason: stop})
		return nil
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS":
		// The model's tool call was not valid: nothing was blocked.
		return &Error{Provider: p.name, Message: "The model produced an invalid tool call (" + reason + "); nothing of it was run. Press <C-]> to send again."}
	}
	return &Error{Provider: p.name, Message: "Response blocked by " + p.label() + " (" + reason + ")"}
}

// label names the service in messages.
func (p *vertexParser) label() string {
	if p.name == "gemini" {
		return "the Gemini API"
	}
	return "Vertex AI"
}
