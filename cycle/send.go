package cycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/provider"
)

// flushEvery bounds buffer updates while a response streams in.
const flushEvery = 16 * time.Millisecond

// progressEvery bounds the progress updates of a request (the editor
// animates the spinner and the elapsed time by itself in between).
const progressEvery = 250 * time.Millisecond

// progress reports a request's progress to the editor.
func (sess *session) progress(p Progress) {
	h, bufnr := sess.h, sess.bufnr
	if err := h.ed.Progress(bufnr, p); err != nil {
		h.logf("progress: %v", err)
	}
}

// request is the provider, model and parameters of one send, from the
// buffer's effective options.
func (h *Engine) request(e options.Effective) (string, provider.Params, provider.Config) {
	p := provider.Params{Model: e.Model, MaxTokens: e.MaxTokens, Temperature: e.Temperature,
		CacheRetention: e.CacheRetention, Thinking: e.Thinking, Extra: e.Extra}
	pc := provider.Config{BaseURL: e.Endpoint.BaseURL, ReplayFile: e.Endpoint.ReplayFile, Project: e.Endpoint.Project, Location: e.Endpoint.Location}
	// send.timeouts: 0 is no limit, which the provider spells negative.
	noLimit := func(d time.Duration) time.Duration {
		if d <= 0 {
			return -1
		}
		return d
	}
	pc.FirstByteTimeout, pc.IdleTimeout, pc.Timeout = noLimit(e.Timeouts.FirstByte), noLimit(e.Timeouts.Idle), noLimit(e.Timeouts.Total)
	endpointConfig(&pc, e.Provider, e.Endpoint)
	pc.Copilot = copilotConfig(e.DataDir, e.Endpoint)
	return e.Provider, p, pc
}

// retrying wraps a buffer's provider with send.retries: each retry is told
// to the user (with the wait and the attempt), and <C-c> ends the wait.
func (h *Engine) retrying(prov provider.Provider, e options.Effective) provider.Provider {
	return provider.WithRetry(prov, provider.Retry{
		Retries: e.Retry.Retries, Delay: e.Retry.Delay, MaxDelay: e.Retry.MaxDelay,
		Jitter: h.jitter, Sleep: h.sleep,
		OnRetry: func(n provider.RetryNotice) {
			h.logf("send: %s", n)
			h.notify(n.String()+"; <C-c> cancels", levelWarn)
		},
	})
}

// endpointConfig adds a provider's wire, credential source, headers and
// extra body (setup's providers.<name>, never a frontmatter's) to pc.
func endpointConfig(pc *provider.Config, name string, ep options.Endpoint) {
	pc.Wire, pc.KeyHeader, pc.Headers, pc.ExtraBody, pc.Reasoning = ep.Wire, ep.APIKeyHeader, ep.Headers, ep.ExtraBody, ep.Reasoning
	if ep.KeySet {
		pc.Key = &provider.KeySource{Env: ep.APIKeyEnv, Cmd: ep.APIKeyCmd, CacheTTL: ep.APIKeyCache, Timeout: ep.APIKeyTimeout}
	} else if len(ep.APIKeyCmd) > 0 || ep.APIKeyCache != 0 || ep.APIKeyTimeout != 0 {
		src := provider.DefaultKeySource(name)
		if len(ep.APIKeyCmd) > 0 {
			src.Cmd = ep.APIKeyCmd
		}
		pc.Key = &src
	}
	if pc.Key != nil {
		if ep.APIKeyCache != 0 {
			pc.Key.CacheTTL = ep.APIKeyCache
		}
		if ep.APIKeyTimeout != 0 {
			pc.Key.Timeout = ep.APIKeyTimeout
		}
	}
}

// toolDefs are the definitions of the tools a buffer sends.
func (h *Engine) toolDefs(e options.Effective) []provider.ToolDef {
	var out []provider.ToolDef
	for _, n := range e.Tools {
		t, ok := h.Registry.Lookup(n)
		if !ok {
			continue
		}
		s := t.Spec()
		out = append(out, provider.ToolDef{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema, Strict: s.Strict})
	}
	return out
}

// startSend is phase 3: the conversation goes to the provider and the
// response streams into the buffer. auto is true when autopilot sends.
func (sess *session) startSend(auto bool) (Reply, error) {
	h, bufnr := sess.h, sess.bufnr
	s, err := sess.snapshot()
	if err != nil {
		return Reply{}, err
	}
	doc := sess.parse(s)
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil {
			return reply("send", fmt.Sprintf("Cannot send: the tool call %s (%s) on line %d has no result yet. Press <C-]> to categorize it.", tu.Name, tu.ID, tu.HeaderLine), levelError), nil
		}
		if r.Status != "" {
			sess.mu.Lock()
			running := sess.running[tu.ID] != nil
			sess.mu.Unlock()
			if running {
				return reply("send", fmt.Sprintf("Cannot send yet: the tool call %s (%s) on line %d is running; its result comes first (<C-c> cancels it).", tu.Name, tu.ID, tu.HeaderLine), levelWarn), nil
			}
			return reply("send", fmt.Sprintf("Cannot send: the tool call %s (%s) on line %d is still %s.", tu.Name, tu.ID, r.HeaderLine, r.Status), levelError), nil
		}
	}
	fm := sess.evalFrontmatter(doc)
	if fm.Blocking() {
		return sess.blocked(diagnostics(doc, fm, sess.notesCopy()))
	}
	eff := sess.effective(fm)
	sess.logRefused(eff)
	name, params, pcfg := h.request(eff)
	// Whose thinking signatures the request may carry: the wire's, or the
	// Chat Completions server's own.
	system, msgs, err := provider.FromDocument(doc, provider.Signer(name, pcfg.Wire))
	if err != nil {
		return reply("send", "Cannot send: "+err.Error(), levelError), nil
	}
	if len(msgs) == 0 {
		return reply("send", "Nothing to send: write a message under @You: first.", levelWarn), nil
	}
	if work := len(provider.Files(msgs)) > 0 || hasExprs(msgs); work || sess.hadAttachDiags() {
		r, stop := sess.attach(doc, fm, s, msgs, work)
		if stop {
			return r, nil
		}
	}
	prov, err := h.providers(name, pcfg)
	if err != nil {
		return reply("send", err.Error(), levelError), nil
	}
	prov = h.retrying(prov, eff)
	if ok, src := provider.CredentialStatus(name, pcfg); !ok {
		// Say so before touching the buffer.
		if strings.HasPrefix(src, "$") && !strings.Contains(src, "command") {
			return reply("send", fmt.Sprintf("%s: no credential: set %s in the environment Neovim starts from. Nothing was sent.", name, strings.ReplaceAll(strings.TrimPrefix(src, "$"), " or $", " or ")), levelError), nil
		}
		return reply("send", fmt.Sprintf("%s: no credential: %s. Nothing was sent.", name, src), levelError), nil
	}
	info := h.modelInfo(name, params.Model)
	req := provider.Request{System: system, Messages: msgs, Tools: h.toolDefs(eff), Params: params, ModelInfo: &info,
		Web: provider.WebTools{Search: eff.WebSearch, Fetch: eff.WebFetch, SearchUses: eff.WebSearchUses, FetchUses: eff.WebFetchUses}}
	if offer := h.offerCompact(bufnr, s.Tick, provider.EstimateRequest(req), h.modelName(name, params.Model), info.ContextWindow); offer != "" {
		return reply("offer", offer, levelWarn), nil // told, never done silently: the next press sends
	}
	h.noteWeb(name, req.Web)
	sess.mu.Lock()
	ctx, cancel := context.WithCancel(sess.ctx)
	if sess.streaming != nil {
		sess.mu.Unlock()
		cancel()
		return reply("busy", "A request is already in progress. Use <C-c> to cancel it first.", levelWarn), nil
	}
	sess.streaming = cancel
	sess.move(evStream)
	if !auto {
		sess.turns = 0
		sess.disarmed = false
	}
	sess.mu.Unlock()

	last := s.Lines
	if len(last) > 3 {
		last = last[len(last)-3:]
	}
	w := provider.NewWriter(last)
	sw := &streamWrite{h: h, bufnr: bufnr, base: s.Lines, tick: s.Tick, r: len(s.Lines), last: []string{}, model: h.modelName(name, params.Model)}
	if err := sw.write(w.Lines(), false, true); err != nil {
		sess.endStream()
		return Reply{}, err
	}
	h.logf("send: %s model=%q (catalogue: %s, known %v), %d messages, %d tools", name, h.modelName(name, params.Model), info.Name, info.Known, len(msgs), len(req.Tools))
	h.noteModel(name, params, info)
	h.event("FlemmaRequestStart", RequestEvent{Bufnr: bufnr, Provider: prov.Name(), Model: params.Model})
	sess.progress(Progress{Phase: "waiting", Provider: prov.Name(), Model: sw.model})
	sess.spawn(func() { h.stream(ctx, prov, req, w, sw) })
	return reply("send", "", 0), nil
}

// onSend is phase 3 on the user's word (:Flemma send).
func (h *Engine) onSend(bufnr int) (Reply, error) {
	sess := h.session(bufnr)
	if r, ok := sess.sourcesGate(waitSend, false); !ok {
		return r, nil // it sends when the tool sources are ready (sources.go)
	}
	return sess.startSend(false)
}

// noteWeb says once per provider when web tools are on but its wire has
// none (Chat Completions servers, the replay script).
func (h *Engine) noteWeb(name string, w provider.WebTools) {
	if !w.Search && !w.Fetch {
		return
	}
	wire := h.wire(name)
	if search, fetch := provider.WireWeb(wire); search {
		if w.Fetch && !fetch && !w.Search {
			h.noteOnce("webfetch "+name, name+": tools.web_fetch is Anthropic's only (flemma's fetch tool works with every provider).")
		}
		return
	}
	h.noteOnce("web "+name, name+": the provider's web search is not available on "+wire+"; tools.web_search is ignored here (flemma's fetch tool works with every provider).")
}

// noteOnce tells the user msg once per host and key.
func (h *Engine) noteOnce(key, msg string) {
	h.mu.Lock()
	if h.noted == nil {
		h.noted = map[string]bool{}
	}
	seen := h.noted[key]
	h.noted[key] = true
	h.mu.Unlock()
	if !seen {
		h.notify(msg, levelInfo)
	}
}
