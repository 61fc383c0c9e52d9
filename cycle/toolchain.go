package cycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/options"
	"github.com/flemma-dev/flemma/preview"
	"github.com/flemma-dev/flemma/tools"
)

// Tool chains (issue 17) in the engine. A chain is a registered tool
// (chainTool) whose run calls other tools, one step after the other
// (tools.Chain). The approval rule: a chain cannot launder a call the
// policy would ask about.
//
//   - Categorize: a chain call's decision is the strictest of the policy on
//     the chain call and on every step whose input the chain's input alone
//     determines, each decided as if that tool were called with that input
//     (the same approval chain and gates as an ordinary call; chainSteps).
//   - Run: before each step the policy decides its actual call again.
//     Approve runs it; deny stops the chain ("denied"); ask runs it only
//     when the user approved the chain call themselves and the step's input
//     did not come from an earlier step's output (the user saw it, exactly,
//     in the preview). Otherwise the chain stops with "needs_approval".
//
// ("chain" alone, in this package, is the approval resolvers' chain:
// h.chain, chainCall.)

// chainTool is a tool chain in the registry.
type chainTool struct {
	h     *Engine
	chain *tools.Chain
	spec  tools.Spec
}

func (t *chainTool) Spec() tools.Spec { return t.spec }

// chainNoTimeout is the executor's bound on a chain that declares none:
// each step has its own tool's timeout, and <C-c> cancels.
const chainNoTimeout = 24 * time.Hour

// chainRunKey carries into chainTool.Run what the cycle knows of the chain
// call and the tools.Call does not say.
type chainRunKey struct{}

type chainRunInfo struct {
	byUser bool // the user approved the chain call in this session
}

// registerChain registers a tool chain (from Go, or from Lua through
// DefineChains), replacing a chain of the same name. The spec is validated
// (tools.CompileChain); the tools its steps call may register later: an
// unknown one fails the chain at that step when it runs.
func (h *Engine) registerChain(spec tools.ChainSpec) error {
	if spec.Source == "" {
		spec.Source = "go"
	}
	if spec.InputSchema == nil {
		spec.InputSchema = map[string]any{"type": "object"}
	}
	c, err := tools.CompileChain(spec, func(name string) bool {
		_, ok := h.chainOf(name)
		return ok && name != spec.Name
	})
	if err != nil {
		return err
	}
	desc := spec.Description
	var names []string
	for _, st := range spec.Steps {
		names = append(names, st.Tool)
	}
	if desc == "" {
		desc = "Runs " + strings.Join(names, ", then ") + "."
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = chainNoTimeout
	}
	ts := tools.Spec{
		Name: spec.Name, Description: desc, InputSchema: spec.InputSchema, Tags: spec.Tags,
		Enabled: true, Source: "chain, " + spec.Source, Timeout: timeout,
		// Its steps may change files or run commands.
		Capabilities: []string{tools.CapSideEffects},
	}
	if _, isChain := h.chainOf(spec.Name); isChain {
		h.Registry.Remove(spec.Name)
	}
	if err := h.Registry.Add(&chainTool{h: h, chain: c, spec: ts}); err != nil {
		return fmt.Errorf("chain '%s': %v", spec.Name, err)
	}
	h.logf("registered tool chain %s (%s): %s", spec.Name, spec.Source, strings.Join(names, " → "))
	return nil
}

// chainOf returns the registered chain named name.
func (h *Engine) chainOf(name string) (*chainTool, bool) {
	t, ok := h.Registry.Get(name)
	if !ok {
		return nil, false
	}
	c, ok := t.(*chainTool)
	return c, ok
}

// wireChain is a chain as flemma.tools.register_chain sends it.
type wireChain struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
	Steps       []struct {
		Name  string `json:"name"`
		Tool  string `json:"tool"`
		Input any    `json:"input"`
	} `json:"steps"`
	Tags    []string `json:"tags"`
	Timeout float64  `json:"timeout"`
	Source  string   `json:"source"`
}

// onDefineChains registers (or re-registers) chains declared in Lua, sent as
// a JSON list (flemma.tools register_chain).
func (h *Engine) onDefineChains(defsJSON string) (DefineReply, error) {
	return defineFromLua("define_chains", "tool chain definition", defsJSON, func(d wireChain) error {
		spec := tools.ChainSpec{Name: d.Name, Description: d.Description, Tags: d.Tags, Timeout: secs(d.Timeout), Source: d.Source}
		if d.InputSchema != nil {
			spec.InputSchema = fixSchema(d.InputSchema)
		}
		if spec.Source == "" {
			spec.Source = "lua"
		}
		for _, st := range d.Steps {
			in := st.Input
			if l, ok := in.([]any); ok && len(l) == 0 {
				in = map[string]any{} // an empty Lua table
			}
			spec.Steps = append(spec.Steps, tools.ChainStep{Name: st.Name, Tool: st.Tool, Input: in})
		}
		if err := h.registerChain(spec); err != nil {
			return errors.New("register_chain: " + err.Error())
		}
		return nil
	})
}

// Run runs the chain's steps (tools.Chain.Run), each as an ordinary call of
// its tool would run: the approval decided again on its actual input, the
// Env and sandbox of the buffer, the tool's timeout, the executor.
func (t *chainTool) Run(ctx context.Context, call tools.Call, raw json.RawMessage) (tools.Output, error) {
	h := t.h
	var input any
	if err := json.Unmarshal(raw, &input); err != nil {
		return tools.Output{}, &tools.Internal{Err: err}
	}
	info, _ := ctx.Value(chainRunKey{}).(chainRunInfo)
	var fm *frontmatter.Result
	if st := h.lookup(call.Bufnr); st != nil {
		st.mu.Lock()
		fm = st.fm
		st.mu.Unlock()
	}
	r := &stepRunner{h: h, chain: t.spec.Name, call: call, fm: fm, byUser: info.byUser, eff: h.session(call.Bufnr).effective(fm),
		budget: h.fm.NewBudget()}
	// A step whose tool is already known to be missing fails the chain
	// before any step runs; a tool that goes missing during the run fails
	// its own step (stepRunner.run).
	var run tools.ChainRun
	refused := false
	for i, st := range t.chain.Spec.Steps {
		if why := r.unusable(st.Tool); why != "" {
			run, refused = t.chain.Refuse(i, fmt.Sprintf("step %d '%s': %s", i+1, st.Name, why)), true
			break
		}
	}
	if !refused {
		run = t.chain.Run(ctx, input, r.run)
	}
	var changes []tools.Change
	for i, s := range run.Steps {
		changes = append(changes, s.Changes...)
		h.logf("chain %s (%s): step %d %s (%s): %s in %d ms", t.spec.Name, call.ID, i+1, s.Name, s.Tool, s.Status, s.DurationMS)
	}
	if !run.OK() {
		return tools.Output{Changes: changes}, errors.New(run.Summary())
	}
	return tools.Output{Text: run.Summary(), Changes: changes}, nil
}

// stepRunner runs the steps of one chain call.
type stepRunner struct {
	h      *Engine
	chain  string
	call   tools.Call // the chain's call
	fm     *frontmatter.Result
	eff    options.Effective
	byUser bool
	// budget bounds the frontmatter's approval function over the whole
	// chain, as categorize bounds it over a press.
	budget *frontmatter.Budget
}

func (r *stepRunner) run(ctx context.Context, i int, st tools.ChainStep, in json.RawMessage, dependsOnSteps bool) tools.StepResult {
	h := r.h
	where := fmt.Sprintf("step %d '%s'", i+1, st.Name)
	fail := func(status, format string, args ...any) tools.StepResult {
		return tools.StepResult{Status: status, Output: where + ": " + fmt.Sprintf(format, args...)}
	}
	if why := r.unusable(st.Tool); why != "" {
		return fail(tools.StepError, "%s", why)
	}
	var input map[string]any
	_ = json.Unmarshal(in, &input) // not an object: the executor says so
	tu := &buffer.ToolUse{ID: r.call.ID, Name: st.Tool, Args: input}
	rules := h.session(r.call.Bufnr).pathRules(r.fm, r.call.Cwd, r.call.Buffer)
	// The chain call's origin, journal and re-run gates were applied to
	// it before it ran: the step is decided on its tool and input.
	ac := h.stepApproval(frontmatter.WithBudget(ctx, r.budget), r.call.Bufnr, tu, r.fm, approval.Facts{FromProvider: true}, rules)
	out := ac.gated()
	h.logf("chain %s (%s): %s %s: %s", r.chain, r.call.ID, where, st.Tool, out)
	if ctx.Err() != nil {
		// Cancelled while the step was being decided: the decision (asks,
		// by "canceled") is the cancel's, not the policy's. Worded as a
		// step cancelled while it runs.
		return tools.StepResult{Status: tools.StepError, Output: tools.Aborted}
	}
	switch out.Decision {
	case approval.Deny:
		return fail(tools.StepDenied, "the call of '%s' was denied by a policy (%s).", st.Tool, out)
	case approval.Approve:
	default:
		switch {
		case !r.byUser:
			return fail(tools.StepNeedsApproval, "the policy asks about this call of '%s' (%s) and nobody approved it. Call %s on its own (with this input) so that it goes through approval.", st.Tool, out, st.Tool)
		case dependsOnSteps:
			return fail(tools.StepNeedsApproval, "the policy asks about this call of '%s' (%s), and its input comes from an earlier step's output, which the approval of the chain did not show. Call %s on its own (with this input) so that it goes through approval.", st.Tool, out, st.Tool)
		}
	}
	// The user's approval covers the step only when they saw its input.
	byUser := r.byUser && !dependsOnSteps
	env, err := h.session(r.call.Bufnr).callEnv(r.fm, r.call.Cwd, r.call.Buffer, !byUser)
	if err != nil {
		return fail(tools.StepError, "the sandbox could not be set up: %v", err)
	}
	call := tools.Call{ID: r.call.ID + "-" + st.Name, Tool: st.Tool, Bufnr: r.call.Bufnr, Cwd: r.call.Cwd, Buffer: r.call.Buffer, Env: env}
	h.limitCall(&call, toolTimeouts(r.eff))
	res := h.exec.Run(ctx, call, in)
	status := tools.StepOK
	if res.IsError {
		status = tools.StepError
	}
	return tools.StepResult{Status: status, Output: res.Content, DurationMS: res.Duration.Milliseconds(), Value: tools.StepValue(res), Changes: res.Changes}
}

// unusable says why a step cannot call tool ("" when it can).
func (r *stepRunner) unusable(tool string) string {
	t, ok := r.h.Registry.Lookup(tool)
	switch {
	case !ok:
		return fmt.Sprintf("unknown tool '%s'", tool)
	case isChainTool(t):
		return fmt.Sprintf("tool '%s' is a chain: chains cannot be nested", tool)
	case !r.eff.HasTool(tool):
		return fmt.Sprintf("tool '%s' is not enabled in this buffer (see flemma.opt.tools)", tool)
	}
	return ""
}

func isChainTool(t tools.Tool) bool {
	_, ok := t.(*chainTool)
	return ok
}

// stepApproval is the approval chain's outcome and the gates' inputs for a
// call of a chain step's tool with its input, base holding the facts of
// the chain call (origin, journal) and rules the sandbox's answers.
func (h *Engine) stepApproval(ctx context.Context, bufnr int, tu *buffer.ToolUse, fm *frontmatter.Result, base approval.Facts, rules *pathRules) chainCall {
	c := chainCall{Chain: h.chain.Decide(ctx, h.session(bufnr).approvalCall(tu, fm))}
	if c.Chain.Decision == approval.Approve {
		c.Gate = base
		c.Gate.Writes = h.writesPath(tu)
		h.pathGates(&c, tu, rules)
	}
	return c
}

// chainSteps decides, for a call of chain ct, every step whose input the
// chain's input alone determines, as a call of its tool with that input.
// The others are decided when they run.
func (h *Engine) chainSteps(ctx context.Context, bufnr int, key string, tu *buffer.ToolUse, fm *frontmatter.Result, ct *chainTool, rules *pathRules) []chainStepCall {
	in := tu.Input()
	if in == nil {
		in = map[string]any{}
	}
	var input any = in
	base := h.session(bufnr).gateFacts(key, tu)
	var out []chainStepCall
	for i, st := range ct.chain.Spec.Steps {
		tm := ct.chain.Template(i)
		if tm.UsesSteps() {
			continue
		}
		in, err := tm.Resolve(input, nil, false)
		if err != nil {
			continue // the chain fails at this step when it runs
		}
		m, _ := in.(map[string]any)
		stu := &buffer.ToolUse{ID: tu.ID, Name: st.Tool, Args: m}
		out = append(out, chainStepCall{N: i + 1, Name: st.Name, Tool: st.Tool, Call: h.stepApproval(ctx, bufnr, stu, fm, base, rules)})
	}
	return out
}

// chainStepCall is the decision on one step of a chain call.
type chainStepCall struct {
	N          int // 1-based
	Name, Tool string
	Call       chainCall
}

// strictness orders decisions: deny over asking over approving.
func strictness(d approval.Decision) int {
	switch d {
	case approval.Deny:
		return 2
	case approval.Approve:
		return 0
	}
	return 1
}

// chainPreview is the summary of a chain call's preview: its steps, with
// their inputs resolved from the chain's input where they can be, and
// references to earlier steps' outputs shown as written.
func (t *chainTool) chainPreview(input map[string]any, maxLen int, opts preview.Options) string {
	var in any = input
	if input == nil {
		in = map[string]any{}
	}
	opts.Custom = nil
	var b strings.Builder
	fmt.Fprintf(&b, "chain of %d:", len(t.chain.Spec.Steps))
	for i, st := range t.chain.Spec.Steps {
		if b.Len() > 4*maxLen+64 {
			b.WriteString(" …")
			break
		}
		if i > 0 {
			b.WriteString(" →")
		}
		label := ""
		if st.Name != st.Tool {
			label = st.Name + "="
		}
		v, err := t.chain.Template(i).Resolve(in, nil, true)
		m, _ := v.(map[string]any)
		s := st.Tool + ": " + fmt.Sprint(err)
		if err == nil {
			s = preview.Format(st.Tool, m, maxLen+len(st.Tool)+2, opts)
		}
		fmt.Fprintf(&b, " %d %s%s", i+1, label, s)
	}
	return b.String()
}

// stepsLine lists a chain's steps for :Flemma tools.
func (t *chainTool) stepsLine() string {
	var parts []string
	for i, st := range t.chain.Spec.Steps {
		in, _ := json.Marshal(st.Input)
		parts = append(parts, fmt.Sprintf("%d %s (%s) %s", i+1, st.Name, st.Tool, in))
	}
	return strings.Join(parts, " → ")
}
