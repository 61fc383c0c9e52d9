package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Tool chains (issue 17): a registered tool made of ordered steps. Each step
// names a tool and maps its input from the chain's input and the outputs of
// earlier steps with a small template language:
//
//	{{ input.path }}            a field of the chain's input (dots go deeper)
//	{{ steps.read.output }}     the output of the earlier step "read"
//	{{ steps.stat.output.size }} a field of an earlier step's JSON output
//
// A step's input is a JSON-like template (objects, arrays, scalars). A
// string that is exactly one reference takes the referenced value with its
// JSON type; a string with references and other text gets them as text
// (strings as they are, other values JSON-encoded). References are found
// only in the declared template, once, when the chain is compiled: text in
// the chain's input or in a step's output that looks like a reference is
// data and is never expanded.
//
// The names below say "chain" for this feature only; the approval
// resolvers' chain is approval.Chain.

// MaxChainSteps is the most steps a chain may have.
const MaxChainSteps = 16

// ChainSpec declares a tool chain (from Lua, tools.register_chain, or from
// Go).
type ChainSpec struct {
	Name        string
	Description string
	// InputSchema is the chain's own input schema, validated before the
	// first step; nil means any object. When it lists properties, every
	// {{ input.x }} reference must name one of them.
	InputSchema map[string]any
	Steps       []ChainStep
	Tags        []string
	// Timeout bounds the whole chain; zero means no bound beyond each
	// step's own timeout (the one an ordinary call of its tool gets).
	Timeout time.Duration
	Source  string // "lua", "go", …: shown by :Flemma tools
}

// ChainStep is one step: Tool is called with Input, a template.
type ChainStep struct {
	Name  string
	Tool  string
	Input any
}

// Step statuses in a ChainRun.
const (
	StepOK            = "ok"
	StepError         = "error"
	StepDenied        = "denied"
	StepNeedsApproval = "needs_approval"
	StepSkipped       = "skipped"
)

// Chain is a validated, compiled ChainSpec.
type Chain struct {
	Spec  ChainSpec
	steps []*Template
}

// Template is a compiled step input.
type Template struct {
	root  tnode
	steps []string // the steps it refers to, sorted, once each
}

// Ref is one reference in a template.
type Ref struct {
	Step string   // "" for an input reference
	Path []string // the fields after input, or after steps.<name>.output
	Text string   // as written, for messages and previews
}

func (r Ref) String() string { return "{{ " + r.Text + " }}" }

type tnode interface{}

type (
	tobj   map[string]tnode
	tarr   []tnode
	tlit   struct{ v any }
	tref   struct{ r Ref } // a string that is exactly one reference
	tinter []tpart         // a string with references and text
	tpart  struct {
		text string
		ref  *Ref
	}
)

var (
	refRE      = regexp.MustCompile(`\{\{(.*?)\}\}`)
	segRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	stepNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)
)

// CompileChain validates spec and compiles its templates. isChain reports
// whether a registered tool is a chain (steps may not be chains); nil means
// none is. Errors name the chain, the step and the reference.
func CompileChain(spec ChainSpec, isChain func(name string) bool) (*Chain, error) {
	fail := func(format string, args ...any) (*Chain, error) {
		return nil, fmt.Errorf("chain '%s': %s", spec.Name, fmt.Sprintf(format, args...))
	}
	if !ValidName(spec.Name) {
		return nil, fmt.Errorf("chain %q: invalid name: use lower-case snake_case, optionally namespaced with ':'", spec.Name)
	}
	switch {
	case len(spec.Steps) == 0:
		return fail("a chain needs at least one step")
	case len(spec.Steps) > MaxChainSteps:
		return fail("%d steps: a chain has at most %d", len(spec.Steps), MaxChainSteps)
	}
	props := schemaProperties(spec.InputSchema)
	c := &Chain{Spec: spec}
	seen := map[string]int{}
	for i, st := range spec.Steps {
		where := fmt.Sprintf("step %d '%s'", i+1, st.Name)
		if !stepNameRE.MatchString(st.Name) {
			return fail("step %d: invalid step name %q: use [a-z0-9_]+", i+1, st.Name)
		}
		if j, dup := seen[st.Name]; dup {
			return fail("%s: the name is already used by step %d", where, j)
		}
		seen[st.Name] = i + 1
		switch {
		case !ValidName(st.Tool):
			return fail("%s: invalid tool name %q", where, st.Tool)
		case st.Tool == spec.Name:
			return fail("%s: a chain cannot call itself", where)
		case isChain != nil && isChain(st.Tool):
			return fail("%s: tool '%s' is a chain: chains cannot be nested", where, st.Tool)
		}
		t, err := CompileTemplate(st.Input)
		if err != nil {
			return fail("%s: %v", where, err)
		}
		for _, r := range t.Refs() {
			if r.Step == "" {
				if props != nil && !props[r.Path[0]] {
					return fail("%s: reference %s: the input schema has no property '%s'", where, r, r.Path[0])
				}
				continue
			}
			if _, ok := seen[r.Step]; !ok || r.Step == st.Name {
				return fail("%s: reference %s: no earlier step named '%s'", where, r, r.Step)
			}
		}
		c.steps = append(c.steps, t)
	}
	return c, nil
}

// schemaProperties returns the names of the schema's properties, or nil
// when it declares none.
func schemaProperties(s map[string]any) map[string]bool {
	p, _ := s["properties"].(map[string]any)
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]bool, len(p))
	for k := range p {
		out[k] = true
	}
	return out
}

// Template returns step i's compiled input.
func (c *Chain) Template(i int) *Template { return c.steps[i] }

// CompileTemplate compiles a step input: a JSON-like value whose strings
// may hold references.
func CompileTemplate(v any) (*Template, error) {
	t := &Template{}
	if v == nil {
		v = map[string]any{} // a step without input
	}
	root, err := t.compile(v, "")
	if err != nil {
		return nil, err
	}
	t.root = root
	sort.Strings(t.steps)
	t.steps = compactStrings(t.steps)
	return t, nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func (t *Template) compile(v any, at string) (tnode, error) {
	switch x := v.(type) {
	case nil:
		return tlit{nil}, nil
	case map[string]any:
		out := make(tobj, len(x))
		for k, e := range x {
			n, err := t.compile(e, at+"/"+k)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make(tarr, len(x))
		for i, e := range x {
			n, err := t.compile(e, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case string:
		return t.compileString(x, at)
	case bool, float64, float32, int, int64, int32, uint, uint64, json.Number:
		return tlit{x}, nil
	}
	return nil, fmt.Errorf("input%s: unsupported value of type %T", orRoot(at), v)
}

func orRoot(at string) string {
	if at == "" {
		return ""
	}
	return " at " + at
}

func (t *Template) compileString(s, at string) (tnode, error) {
	locs := refRE.FindAllStringSubmatchIndex(s, -1)
	var parts tinter
	last := 0
	for _, l := range locs {
		if strings.Contains(s[last:l[0]], "{{") {
			break // an unclosed {{ before this reference
		}
		r, err := parseRef(s[l[2]:l[3]])
		if err != nil {
			return nil, fmt.Errorf("input%s: %v", orRoot(at), err)
		}
		if r.Step != "" {
			t.steps = append(t.steps, r.Step)
		}
		if l[0] > last {
			parts = append(parts, tpart{text: s[last:l[0]]})
		}
		parts = append(parts, tpart{ref: &r})
		last = l[1]
	}
	if strings.Contains(s[last:], "{{") {
		return nil, fmt.Errorf("input%s: %q: '{{' that does not start a reference ({{ input.<field> }} or {{ steps.<step>.output }})", orRoot(at), clip(s, 60))
	}
	if len(parts) == 0 {
		return tlit{s}, nil
	}
	if last < len(s) {
		parts = append(parts, tpart{text: s[last:]})
	}
	if len(parts) == 1 {
		return tref{*parts[0].ref}, nil
	}
	return parts, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// parseRef parses the inside of {{ … }}.
func parseRef(expr string) (Ref, error) {
	text := strings.TrimSpace(expr)
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("reference {{%s}}: %s", expr, why)
	}
	if text == "" {
		return bad("empty")
	}
	segs := strings.Split(text, ".")
	for _, s := range segs {
		if !segRE.MatchString(s) {
			return bad("use {{ input.<field>[.<field>…] }} or {{ steps.<step>.output[.<field>…] }}")
		}
	}
	r := Ref{Text: text}
	switch segs[0] {
	case "input":
		if len(segs) < 2 {
			return bad("name a field of the input: {{ input.<field> }}")
		}
		r.Path = segs[1:]
	case "steps":
		if len(segs) < 3 || segs[2] != "output" {
			return bad("use {{ steps.<step>.output }}")
		}
		r.Step, r.Path = segs[1], segs[3:]
	default:
		return bad("a reference starts with input. or steps.")
	}
	return r, nil
}

// Refs returns every reference of the template, in no particular order.
func (t *Template) Refs() []Ref {
	var out []Ref
	var walk func(n tnode)
	walk = func(n tnode) {
		switch x := n.(type) {
		case tobj:
			for _, e := range x {
				walk(e)
			}
		case tarr:
			for _, e := range x {
				walk(e)
			}
		case tref:
			out = append(out, x.r)
		case tinter:
			for _, p := range x {
				if p.ref != nil {
					out = append(out, *p.ref)
				}
			}
		}
	}
	walk(t.root)
	return out
}

// UsesSteps reports whether the input depends on an earlier step's output.
func (t *Template) UsesSteps() bool { return len(t.steps) > 0 }

// Resolve builds the step's input from the chain's input and the outputs of
// the earlier steps (by step name). With keep set, a reference to a step
// not in outputs stays as its text (for previews) instead of failing.
func (t *Template) Resolve(input any, outputs map[string]any, keep bool) (any, error) {
	return t.resolve(t.root, input, outputs, keep)
}

func (t *Template) resolve(n tnode, input any, outputs map[string]any, keep bool) (any, error) {
	switch x := n.(type) {
	case tobj:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v, err := t.resolve(e, input, outputs, keep)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case tarr:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := t.resolve(e, input, outputs, keep)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case tlit:
		return x.v, nil
	case tref:
		v, ok, err := lookupRef(x.r, input, outputs, keep)
		if err != nil {
			return nil, err
		}
		if !ok {
			return x.r.String(), nil
		}
		return v, nil
	case tinter:
		var b strings.Builder
		for _, p := range x {
			if p.ref == nil {
				b.WriteString(p.text)
				continue
			}
			v, ok, err := lookupRef(*p.ref, input, outputs, keep)
			if err != nil {
				return nil, err
			}
			if !ok {
				b.WriteString(p.ref.String())
				continue
			}
			b.WriteString(asText(v))
		}
		return b.String(), nil
	}
	return nil, fmt.Errorf("unknown template node %T", n)
}

// lookupRef finds a reference's value; ok is false for a reference to a
// step that has no output in outputs when keep is set (Resolve leaves its
// text).
func lookupRef(r Ref, input any, outputs map[string]any, keep bool) (v any, ok bool, err error) {
	root := input
	if r.Step != "" {
		out, have := outputs[r.Step]
		if !have {
			if keep {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("%s: step '%s' has no output", r, r.Step)
		}
		root = out
	}
	v = root
	for i, f := range r.Path {
		switch x := v.(type) {
		case map[string]any:
			e, has := x[f]
			if !has {
				return nil, false, fmt.Errorf("%s: no field '%s'", r, strings.Join(r.Path[:i+1], "."))
			}
			v = e
		case []any:
			n, err := strconv.Atoi(f)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false, fmt.Errorf("%s: no element '%s'", r, strings.Join(r.Path[:i+1], "."))
			}
			v = x[n]
		default:
			return nil, false, fmt.Errorf("%s: '%s' is not an object", r, strings.Join(append([]string{"…"}, r.Path[:i]...), "."))
		}
	}
	return v, true, nil
}

// asText is how a value is interpolated into a string.
func asText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// StepResult is how one step of a chain ended.
type StepResult struct {
	Name       string `json:"name"`
	Tool       string `json:"tool"`
	Status     string `json:"status"` // StepOK, StepError, StepDenied, StepNeedsApproval, StepSkipped
	Output     string `json:"output,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Value is the output as later steps see it: the parsed JSON of a
	// structured output, else the text.
	Value   any      `json:"-"`
	Changes []Change `json:"-"`
}

// ChainRun is a chain's run: every step's result, in order.
type ChainRun struct {
	Chain  string       `json:"chain"`
	Steps  []StepResult `json:"steps"`
	Failed int          `json:"-"` // the 1-based step that stopped the chain, 0 when none did
	// DurationMS is the chain's whole run, wall clock (its steps, and the
	// deciding and building of their inputs).
	DurationMS int64 `json:"duration_ms"`
}

// Status is the chain's status: StepOK when every step ended ok, else the
// status of the step that stopped it (StepError, StepDenied,
// StepNeedsApproval).
func (r ChainRun) Status() string {
	if r.Failed == 0 {
		return StepOK
	}
	return r.Steps[r.Failed-1].Status
}

// Refuse is the run of a chain that cannot start: step i (0-based) fails
// with why before anything runs, and every other step is skipped (issue 28
// item 10: a step whose tool is known to be missing at the call fails the
// chain before an earlier step has side effects).
func (c *Chain) Refuse(i int, why string) ChainRun {
	res := ChainRun{Chain: c.Spec.Name, Failed: i + 1}
	for j, st := range c.Spec.Steps {
		r := StepResult{Name: st.Name, Tool: st.Tool, Status: StepSkipped}
		if j == i {
			r.Status, r.Output = StepError, why
		}
		res.Steps = append(res.Steps, r)
	}
	return res
}

// StepRunner runs one step whose input is resolved: it decides whether the
// step may run and runs it. dependsOnSteps reports whether the input came
// (in part) from earlier steps' outputs.
type StepRunner func(ctx context.Context, i int, step ChainStep, input json.RawMessage, dependsOnSteps bool) StepResult

// Run runs the chain's steps in order, stopping at the first one that does
// not end ok (the rest are skipped), and at a cancelled ctx.
func (c *Chain) Run(ctx context.Context, input any, run StepRunner) ChainRun {
	res := ChainRun{Chain: c.Spec.Name}
	start := time.Now()
	outputs := map[string]any{}
	for i, st := range c.Spec.Steps {
		if res.Failed != 0 {
			res.Steps = append(res.Steps, StepResult{Name: st.Name, Tool: st.Tool, Status: StepSkipped})
			continue
		}
		var r StepResult
		if ctx.Err() != nil {
			r = StepResult{Name: st.Name, Tool: st.Tool, Status: StepError, Output: Aborted}
			res.Failed = i + 1
			res.Steps = append(res.Steps, r)
			continue
		}
		in, err := c.steps[i].Resolve(input, outputs, false)
		if err == nil {
			var raw []byte
			if raw, err = json.Marshal(in); err == nil {
				r = run(ctx, i, st, raw, c.steps[i].UsesSteps())
			}
		}
		if err != nil {
			r = StepResult{Status: StepError, Output: "its input could not be built: " + err.Error()}
		}
		r.Name, r.Tool = st.Name, st.Tool
		if r.Status == StepOK {
			outputs[st.Name] = r.Value
		} else {
			res.Failed = i + 1
		}
		res.Steps = append(res.Steps, r)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res
}

// OK reports whether every step ended ok.
func (r ChainRun) OK() bool { return r.Failed == 0 }

// Summary is the chain's result as the model reads it: a header with the
// chain's status and duration, a line per step with its status and
// duration, its output indented below, and the chain's status, duration and
// steps as one line of JSON at the end.
func (r ChainRun) Summary() string {
	var b strings.Builder
	if r.OK() {
		fmt.Fprintf(&b, "chain %s: all %d steps ok in %d ms\n", r.Chain, len(r.Steps), r.DurationMS)
	} else {
		s := r.Steps[r.Failed-1]
		fmt.Fprintf(&b, "chain %s: stopped at step %d '%s' (%s): %s after %d ms\n", r.Chain, r.Failed, s.Name, s.Tool, s.Status, r.DurationMS)
	}
	type brief struct {
		Name       string `json:"name"`
		Tool       string `json:"tool"`
		Status     string `json:"status"`
		DurationMS int64  `json:"duration_ms"`
	}
	var briefs []brief
	for i, s := range r.Steps {
		label := s.Name
		if s.Tool != s.Name {
			label += " (" + s.Tool + ")"
		}
		fmt.Fprintf(&b, "\nstep %d %s: %s", i+1, label, s.Status)
		if s.Status != StepSkipped {
			fmt.Fprintf(&b, " %d ms", s.DurationMS)
		}
		b.WriteString("\n")
		if s.Output != "" {
			for _, l := range strings.Split(strings.TrimRight(s.Output, "\n"), "\n") {
				b.WriteString("  " + l + "\n")
			}
		}
		briefs = append(briefs, brief{s.Name, s.Tool, s.Status, s.DurationMS})
	}
	js, _ := json.Marshal(struct {
		Status     string  `json:"status"`
		DurationMS int64   `json:"duration_ms"`
		Steps      []brief `json:"steps"`
	}{r.Status(), r.DurationMS, briefs})
	fmt.Fprintf(&b, "\nchain: %s", js)
	return b.String()
}

// StepValue is what later steps see of a step's output: the parsed JSON of
// a structured (json) result, else its text.
func StepValue(res Result) any {
	if res.Lang == "json" {
		var v any
		if json.Unmarshal([]byte(res.Content), &v) == nil {
			return v
		}
	}
	return res.Content
}
