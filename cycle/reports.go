package cycle

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

func (h *Engine) onHealth() (HealthReply, error) {
	type line = HealthLine
	var lines []line
	names := h.Registry.Names()
	h.mu.Lock()
	probs := h.setupProblems
	h.mu.Unlock()
	for _, p := range probs {
		lines = append(lines, line{"warn", "setup " + p.String()})
	}
	lines = append(lines, line{"ok", fmt.Sprintf("%d tools registered: %s", len(names), strings.Join(names, ", "))})
	var hidden []string
	for _, t := range h.Registry.All() {
		if miss := h.Registry.Missing(t); len(miss) > 0 {
			hidden = append(hidden, fmt.Sprintf("%s (missing %s)", t.Spec().Name, strings.Join(miss, ", ")))
		}
	}
	if len(hidden) > 0 {
		lines = append(lines, line{"warn", "hidden tools: " + strings.Join(hidden, "; ")})
	}
	lines = append(lines, line{"info", fmt.Sprintf("approval resolvers: %s", h.resolverNames())})
	if name, ok, why := sandbox.DetectBackend(); ok {
		lines = append(lines, line{"ok", fmt.Sprintf("sandbox backend: %s (works)", name)})
	} else {
		lines = append(lines, line{"warn", fmt.Sprintf("no working sandbox backend (%s): bash is never auto-approved by the sandbox resolver", why)})
	}
	if state := h.stateDir(); state != "" {
		lines = append(lines, line{"ok", fmt.Sprintf("full outputs of truncated results are kept in %s (one folder per conversation, %d days after its last use, %s in all, the first %s of each output)",
			sandbox.OutputsDir(state), int(sandbox.OutputMaxAge.Hours()/24), tools.FormatSize(sandbox.OutputMaxBytes), tools.FormatSize(sandbox.FullOutputCap))})
	} else if h.outputDir != "" {
		lines = append(lines, line{"ok", "full outputs of truncated results go to " + h.outputDir})
	}
	lines = append(lines, h.journalHealth()...)
	h.mu.Lock()
	cfg, rt := h.cfg, h.rt
	h.mu.Unlock()
	lines = append(lines, h.credentialHealth(cfg, rt)...)
	return HealthReply{Version: h.Version, Lines: lines}, nil
}

func (h *Engine) resolverNames() string {
	var parts []string
	for _, r := range h.chain.All() {
		parts = append(parts, fmt.Sprintf("%s (%d)", r.Name(), r.Priority()))
	}
	return strings.Join(parts, ", ")
}

func (h *Engine) onTools(bufnr int, filter string) (Reply, error) {
	sess := h.session(bufnr)
	// The same answers the cycle uses: the buffer's tools (setup narrowed
	// by its frontmatter) and the approval chain with the buffer's
	// frontmatter and sandbox, for a call the model makes in this session
	// with no input (rules on the input, such as bash(git *) or protected
	// paths, can still change the decision for a given call).
	h.ensureMCP()
	fm, _, _ := sess.bufferContext()
	eff := sess.effective(fm)
	ctx := frontmatter.WithBudget(context.Background(), h.fm.NewBudget())
	var b strings.Builder
	for _, t := range h.Registry.Search(filter) {
		s := t.Spec()
		status := "enabled"
		switch {
		case len(h.Registry.Missing(t)) > 0:
			status = "hidden: missing " + strings.Join(h.Registry.Missing(t), ", ")
		case !eff.HasTool(s.Name) && !s.Enabled:
			status = "disabled by default"
		case !eff.HasTool(s.Name):
			status = "not selected in this buffer (flemma.opt.tools)"
		}
		out := h.chain.Decide(ctx, sess.approvalCall(&buffer.ToolUse{Name: s.Name, Args: map[string]any{}}, fm))
		limit, from := toolTimeouts(eff).For(s)
		timeout := tools.FormatTimeout(limit) + " (" + from + ")"
		if _, isChain := t.(*chainTool); isChain && limit >= chainNoTimeout {
			timeout = "none of its own (each step has its tool's)"
		}
		fmt.Fprintf(&b, "%s  [%s]  %s  tags: %s  timeout: %s  approval: %s\n", s.Name, s.Source, status, strings.Join(s.Tags, ","), timeout, out)
		fmt.Fprintf(&b, "  %s\n", s.Description)
		for _, l := range schemaLines(s.InputSchema) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		if ct, ok := t.(*chainTool); ok {
			fmt.Fprintf(&b, "  chain steps (each also decided on its own): %s\n", ct.stepsLine())
		}
	}
	if b.Len() > 0 {
		b.WriteString("(approval: for a call the model makes in this session; calls found in the file always ask)\n")
		h.mu.Lock()
		presets := h.presets
		h.mu.Unlock()
		b.WriteString("presets (tools.auto_approve, flemma.opt.tools.auto_approve):\n")
		for _, name := range presets.Names() {
			def, _ := presets.Get(name)
			line := "  " + name + ": " + strings.Join(def.Approve, ", ")
			if len(def.Deny) > 0 {
				line += "; deny " + strings.Join(def.Deny, ", ")
			}
			b.WriteString(line + "\n")
		}
	}
	if b.Len() == 0 {
		return text(fmt.Sprintf("no tools match %q", filter)), nil
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

func (h *Engine) onStatus(bufnr int) (StatusReply, error) {
	sess := h.session(bufnr)
	s, err := sess.snapshot()
	var fm *frontmatter.Result
	if err == nil {
		fm = sess.evalFrontmatter(parse(s.Lines))
	}
	eff := sess.effective(fm)
	name, params, pcfg := h.request(eff)
	info := h.modelInfo(name, params.Model)
	auto := eff.Autopilot
	st := sess
	st.mu.Lock()
	usage, turns := st.lastUsage, st.turns
	bufTotal := st.usage
	st.mu.Unlock()
	h.mu.Lock()
	allTotal := h.usage
	h.mu.Unlock()
	var tools []string
	for _, d := range h.toolDefs(eff) {
		tools = append(tools, d.Name)
	}
	cred, src := provider.CredentialStatus(name, pcfg)
	credText := "missing"
	if cred {
		credText = "from " + src
	}
	h.mu.Lock()
	cfg := h.cfg
	h.mu.Unlock()
	wire := cfg.Wire(name)
	maxTokens := fmt.Sprint(params.MaxTokens)
	switch {
	case params.MaxTokens > 0 && info.MaxOutputTokens > 0 && params.MaxTokens > info.MaxOutputTokens:
		maxTokens += fmt.Sprintf(" (%d is sent: the model's limit)", info.MaxOutputTokens)
	case params.MaxTokens > 0:
	case provider.MaxTokens(wire, params, info) == 0:
		maxTokens = "(not sent: the server's default)"
	default:
		maxTokens = fmt.Sprintf("%d (default)", provider.MaxTokens(wire, params, info))
	}
	// What is sent: an unset thinking is the providers' "high" (issue 27
	// item 8: it showed thinking="" while adaptive thinking was sent).
	thinkingText := strconv.Quote(params.Thinking)
	if strings.TrimSpace(params.Thinking) == "" {
		thinkingText = `"high" (the default)`
	}
	out := fmt.Sprintf("provider: %s  model: %s  credentials: %s\nparameters: max_tokens=%s thinking=%s cache_retention=%q\n%s\nautopilot: %v (turns %d)  tools.mode: %s\ntools in this buffer: %s\nresolvers: %s",
		name, modelLabel(cfg, name, params.Model), credText, maxTokens, thinkingText, params.CacheRetention, describeModel(wire, params, info), auto, turns, h.mode(), strings.Join(tools, ", "), h.resolverNames())
	if usage != nil {
		out += fmt.Sprintf("\nlast response: %d input · %d output tokens", usage.InputTokens, usage.OutputTokens)
		if usage.CacheReadTokens > 0 || usage.CacheWriteTokens > 0 {
			out += fmt.Sprintf(" · cache %d read, %d written", usage.CacheReadTokens, usage.CacheWriteTokens)
		}
	}
	if bufTotal.Requests > 0 {
		out += "\nthis buffer, this session: " + bufTotal.String()
	}
	if allTotal.Requests > bufTotal.Requests {
		out += "\nall buffers, this session: " + allTotal.String()
	}
	if err == nil {
		out += "\n" + h.estimate(bufnr, parse(s.Lines), eff).String()
	}
	st.mu.Lock()
	flushes, lastResult, read := st.lastFlushes, st.lastResult, st.linesRead
	st.mu.Unlock()
	r := StatusReply{Text: out, LastFlushes: flushes, LinesRead: read, Busy: h.Busy(bufnr)}
	if !lastResult.IsZero() {
		r.LastResultUnixNS = lastResult.UnixNano()
	}
	return r, nil
}

func (h *Engine) onToolList(bufnr int) (Reply, error) {
	sess := h.session(bufnr)
	s, err := sess.snapshot()
	if err != nil {
		return Reply{}, err
	}
	doc := parse(s.Lines)
	decided := h.userDecisions(bufnr, s.Name, doc) // the user's, once the ledger let them go
	var b strings.Builder
	st := sess
	st.mu.Lock()
	running := map[string]bool{}
	for id := range st.running {
		running[id] = true
	}
	outcomes, ran, started := st.outcomes, st.ran, st.started
	for _, tu := range doc.ToolUses() {
		state := "no result"
		if r := doc.Result(tu.ID); r != nil {
			switch {
			case running[tu.ID] && r.Status != "":
				state = "running" // (a written result is a result, even a moment before the step ends)
			case r.Status != "":
				state = string(r.Status)
			case r.IsError:
				state = "error result"
			default:
				state = "result"
			}
		}
		if r, ok := ran[tu.ID]; ok && state != "running" {
			state += " (" + r.String() + ")"
		} else if t, ok := started[tu.ID]; ok && state == "running" {
			state += fmt.Sprintf(" (%s)", time.Since(t).Round(100*time.Millisecond))
		}
		prov := ""
		if rec := st.trustOf().ledger.Get(tu.ID); rec.By == trust.ByUser || rec.By == trust.ByUserEdit {
			prov = "  — " + string(rec.Status) + " by you" // not what the policy said before
		} else if e, ok := decided[tu.ID]; ok {
			prov = "  — " + e.Decision + " by you"
		} else if o, ok := outcomes[tu.ID]; ok {
			prov = "  — " + o.String()
		}
		fmt.Fprintf(&b, "line %d: %s (%s): %s%s\n", tu.HeaderLine, tu.Name, tu.ID, state, prov)
	}
	st.mu.Unlock()
	if g := st.grantsText(); g != "" {
		b.WriteString(g + "\n") // always.go
	}
	if b.Len() == 0 {
		return text("no tool calls in this buffer"), nil
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

// schemaLines renders a tool's input schema for people (:Flemma tools):
// one line per parameter, the required ones first, with its type and the
// first line of its description (issue 27 item 8: it was one line of JSON).
func schemaLines(schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return []string{"parameters: none"}
	}
	required := map[string]bool{}
	var names []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && props[n] != nil && !required[n] {
				required[n] = true
				names = append(names, n)
			}
		}
	} else if rs, ok := schema["required"].([]string); ok {
		for _, n := range rs {
			if props[n] != nil && !required[n] {
				required[n] = true
				names = append(names, n)
			}
		}
	}
	var rest []string
	for n := range props {
		if !required[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	out := []string{"parameters:"}
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		typ := schemaType(p)
		if required[n] {
			typ += ", required"
		}
		desc, _ := p["description"].(string)
		if i := strings.IndexByte(desc, '\n'); i >= 0 {
			desc = desc[:i] + " …"
		}
		if r := []rune(desc); len(r) > 100 {
			desc = string(r[:99]) + "…"
		}
		out = append(out, strings.TrimRight(fmt.Sprintf("  %-*s  %s  %s", width, n, typ, desc), " "))
	}
	return out
}

// schemaType is a parameter's type in words: "string", "integer | null",
// "array of string", "one of a, b".
func schemaType(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
		var vs []string
		for _, v := range enum {
			vs = append(vs, fmt.Sprint(v))
		}
		return "one of " + strings.Join(vs, ", ")
	}
	var typ string
	switch t := p["type"].(type) {
	case string:
		typ = t
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		typ = strings.Join(ts, " | ")
	default:
		typ = "any"
	}
	if typ == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			typ = "array of " + schemaType(items)
		}
	}
	return typ
}
