package frontmatter

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// This file holds the schema of flemma.opt and the one applier that both the
// Lua proxy (flemma.opt.x = v, :append, + …) and the JSON "flemma" object use,
// so the two front ends validate and report identically.

// maxListItems bounds the tool and approval lists.
const maxListItems = 256

// maxNameBytes bounds a name the frontmatter sets: a tool name, an approval
// rule, a model or provider name, a provider parameter name. Such strings end
// up in messages, requests and tostring(), so they are kept short.
const maxNameBytes = 256

// checkName refuses a name longer than maxNameBytes.
func checkName(what, s string) error {
	if len(s) > maxNameBytes {
		return fmt.Errorf("%s longer than %d bytes", what, maxNameBytes)
	}
	return nil
}

type nodeKind uint8

const (
	kindObject  nodeKind = iota // named fields
	kindTools                   // named fields plus the list of enabled tools
	kindApprove                 // a list of names/presets/rules, or a function
	kindScalar                  // a validated leaf
	kindSection                 // a free-form table of provider parameters
	kindBlocked                 // a key frontmatter may not set
)

// node is one key of flemma.opt.
type node struct {
	kind   nodeKind
	path   string // canonical dotted path; "" for the root
	fields map[string]*node
	alias  map[string]string
	// set validates and stores a value (scalars), or coerces a non-table
	// value written to an object (tools.autopilot = false).
	set func(es *evalState, v any) error
	// get returns a scalar's current value for Lua reads (nil if unset).
	get func(es *evalState) any
	// reason explains why a blocked key cannot be set.
	reason string
}

// lookup resolves a field name or alias.
func (n *node) lookup(key string) *node {
	if c, ok := n.fields[key]; ok {
		return c
	}
	if a, ok := n.alias[key]; ok {
		return n.fields[a]
	}
	return nil
}

// names are the field names offered as suggestions.
func (n *node) names(extra ...string) []string {
	out := make([]string, 0, len(n.fields)+len(extra))
	for k := range n.fields {
		out = append(out, k)
	}
	out = append(out, extra...)
	sort.Strings(out)
	return out
}

func (n *node) isList() bool { return n.kind == kindTools || n.kind == kindApprove }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

const (
	reasonSandbox = "cannot be changed from frontmatter: a .chat file can come from anyone, " +
		"so it may not loosen the sandbox; set it in setup()"
	reasonSandboxOff = "frontmatter may enable the sandbox but never disable it " +
		"(a .chat file can come from anyone); disable it in setup()"
	reasonApproval = "cannot be changed from frontmatter: a .chat file can come from anyone, " +
		"so it may not turn approval off; set it in setup()"
	reasonModules   = "can only be set in setup(): frontmatter must not make Neovim load Lua modules"
	reasonBash      = "can only be set in setup(): it decides which shell runs commands and with what environment"
	reasonHost      = "can only be set in setup(): it chooses the program flemma starts"
	reasonProviders = "can only be set in setup(): a .chat file must not redirect your API requests or credentials"
	reasonSetupOnly = "can only be set in setup()"
	reasonMCP       = "can only be set in setup(): a .chat file must not start programs or connect to servers"
)

var (
	thinkingLevels  = []string{"minimal", "low", "medium", "high", "max", "off"}
	cacheRetentions = []string{"short", "long", "none"}
	listMethods     = []string{"append", "remove", "prepend", "get"}
)

// schema is the tree of flemma.opt, built once.
var schema = sync.OnceValue(func() *node {
	blocked := func(path, reason string) *node { return &node{kind: kindBlocked, path: path, reason: reason} }
	scalar := func(path string, set func(*evalState, any) error, get func(*evalState) any) *node {
		return &node{kind: kindScalar, path: path, set: set, get: get}
	}
	section := func(path string) *node { return &node{kind: kindSection, path: path} }

	thinking := scalar("thinking", setThinking, func(es *evalState) any { return derefString(es.b.opts.Thinking) })
	temperature := scalar("temperature", setTemperature, func(es *evalState) any { return derefFloat(es.b.opts.Temperature) })
	maxTokens := scalar("max_tokens", intSetter(1, func(es *evalState) **int { return &es.b.opts.MaxTokens }),
		func(es *evalState) any { return derefInt(es.b.opts.MaxTokens) })
	cacheRetention := scalar("cache_retention", enumSetter(cacheRetentions, func(es *evalState) **string { return &es.b.opts.CacheRetention }),
		func(es *evalState) any { return derefString(es.b.opts.CacheRetention) })
	anthropic, openai, vertex := section("anthropic"), section("openai"), section("vertex")

	autopilot := &node{kind: kindObject, path: "tools.autopilot", set: coerceAutopilot, fields: map[string]*node{
		"enabled": scalar("tools.autopilot.enabled", setAutopilotEnabled, func(es *evalState) any { return derefBool(es.b.opts.Autopilot) }),
		"max_turns": scalar("tools.autopilot.max_turns", intSetter(1, func(es *evalState) **int { return &es.b.opts.MaxTurns }),
			func(es *evalState) any { return derefInt(es.b.opts.MaxTurns) }),
	}}
	tools := &node{kind: kindTools, path: "tools", alias: map[string]string{"approve": "auto_approve"}, fields: map[string]*node{
		"auto_approve": {kind: kindApprove, path: "tools.auto_approve"},
		"autopilot":    autopilot,
		"max_concurrent": scalar("tools.max_concurrent", intSetter(0, func(es *evalState) **int { return &es.b.opts.MaxConcurrent }),
			func(es *evalState) any { return derefInt(es.b.opts.MaxConcurrent) }),
		"web_search": scalar("tools.web_search", boolSetter(func(es *evalState) **bool { return &es.b.opts.WebSearch }),
			func(es *evalState) any { return derefBool(es.b.opts.WebSearch) }),
		"web_fetch": scalar("tools.web_fetch", boolSetter(func(es *evalState) **bool { return &es.b.opts.WebFetch }),
			func(es *evalState) any { return derefBool(es.b.opts.WebFetch) }),
		"require_approval":       blocked("tools.require_approval", reasonApproval),
		"auto_approve_sandboxed": blocked("tools.auto_approve_sandboxed", reasonApproval),
		"modules":                blocked("tools.modules", reasonModules),
		"bash":                   blocked("tools.bash", reasonBash),
		"mode":                   blocked("tools.mode", reasonSetupOnly),
		"presets":                blocked("tools.presets", reasonSetupOnly),
		"default_timeout":        blocked("tools.default_timeout", reasonSetupOnly),
		"timeouts":               blocked("tools.timeouts", reasonSetupOnly),
		"truncate":               blocked("tools.truncate", reasonSetupOnly),
		"cursor_after_result":    blocked("tools.cursor_after_result", reasonSetupOnly),
	}}
	sandbox := &node{kind: kindObject, path: "sandbox", set: coerceSandbox, fields: map[string]*node{
		"enabled":      scalar("sandbox.enabled", setSandboxEnabled, func(es *evalState) any { return derefBool(es.b.opts.SandboxEnabled) }),
		"writable":     blocked("sandbox.writable", reasonSandbox),
		"readable":     blocked("sandbox.readable", reasonSandbox),
		"deny_read":    blocked("sandbox.deny_read", reasonSandbox),
		"env_deny":     blocked("sandbox.env_deny", reasonSandbox),
		"backend":      blocked("sandbox.backend", reasonSandbox),
		"network":      blocked("sandbox.network", reasonSandbox),
		"unix_sockets": blocked("sandbox.unix_sockets", reasonSandbox),
		"limits":       blocked("sandbox.limits", reasonSandbox),
		"policy":       blocked("sandbox.policy", reasonSandbox),
		"backends":     blocked("sandbox.backends", reasonSandbox),
	}}
	// parameters.* is the canonical home of the request parameters in the Lua
	// plugin; it leads to the same nodes as the root shortcuts.
	parameters := &node{kind: kindObject, path: "parameters", fields: map[string]*node{
		"thinking": thinking, "temperature": temperature, "max_tokens": maxTokens, "cache_retention": cacheRetention,
		"anthropic": anthropic, "openai": openai, "vertex": vertex,
	}}
	return &node{kind: kindObject, path: "", fields: map[string]*node{
		"tools":           tools,
		"thinking":        thinking,
		"temperature":     temperature,
		"max_tokens":      maxTokens,
		"cache_retention": cacheRetention,
		"provider":        scalar("provider", setProvider, func(es *evalState) any { return derefString(es.b.opts.Provider) }),
		"model":           scalar("model", setModel, func(es *evalState) any { return derefString(es.b.opts.Model) }),
		"anthropic":       anthropic,
		"openai":          openai,
		"vertex":          vertex,
		"sandbox":         sandbox,
		"parameters":      parameters,
		"host":            blocked("host", reasonHost),
		"providers":       blocked("providers", reasonProviders),
		"mcp_servers":     blocked("mcp_servers", reasonMCP),
		"keymaps":         blocked("keymaps", reasonSetupOnly),
		"highlights":      blocked("highlights", reasonSetupOnly),
		"presets":         blocked("presets", reasonSetupOnly),
	}}
})

// Keys are the keys of flemma.opt by where they are written (tools.max_concurrent,
// parameters.thinking and its shorthand thinking): true for one a
// frontmatter sets, false for one it is refused. The option schema's test
// (options) holds them to its scopes.
func Keys() map[string]bool {
	out := map[string]bool{}
	var walk func(n *node, at string)
	walk = func(n *node, at string) {
		switch n.kind {
		case kindBlocked:
			out[at] = false
			return
		case kindScalar, kindSection, kindApprove, kindTools:
			out[at] = true
		}
		for k, c := range n.fields {
			walk(c, joinPath(at, k))
		}
	}
	walk(schema(), "")
	return out
}

// ---- values ----------------------------------------------------------------

// cfgTable is a table being applied: a Lua table (string keys sorted) or a
// JSON object/array (document order, with the line of each key).
type cfgTable struct {
	seq   []any
	keys  []string
	vals  []any
	lines []int // buffer line per key; nil for Lua
	json  bool
	array bool // a JSON array
}

func (t *cfgTable) lineAt(i, def int) int {
	if t.lines != nil {
		return t.lines[i]
	}
	return def
}

func (t *cfgTable) hasOps() bool {
	for _, k := range t.keys {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// proxyRef is a flemma.opt proxy used as a value (flemma.opt.tools = flemma.opt.tools + "x").
type proxyRef struct{ n *node }

// otherValue is a Lua value of a type the schema never accepts.
type otherValue struct{ typ string }

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case *cfgTable:
		if x.json {
			if x.array {
				return "array"
			}
			return "object"
		}
		return "table"
	case *lua.LFunction:
		return "function"
	case *proxyRef:
		return "flemma.opt." + x.n.path
	case otherValue:
		return x.typ
	}
	return fmt.Sprintf("%T", v)
}

func derefString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefBool(p *bool) any {
	if p == nil {
		return nil
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// didYouMean formats a suggestion suffix, or "". The search is skipped when
// the diagnostic it would go into is not going to be shown.
func (es *evalState) didYouMean(name string, candidates []string) string {
	if !es.room() {
		return ""
	}
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf(" -- did you mean '%s'?", s)
	}
	return ""
}

// clip shortens user text quoted in a message.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return clipTo(s, max) + "…"
	}
	return s
}

// maxMessageBytes bounds the message of a diagnostic or an error: messages
// quote frontmatter text (error("…"), keys, names), and a diagnostic is
// shown in the editor.
const maxMessageBytes = 1024

// clipMessage bounds a message to maxMessageBytes.
func clipMessage(s string) string {
	if len(s) > maxMessageBytes {
		return clipTo(s, maxMessageBytes-len("…")) + "…"
	}
	return s
}

// clipTo returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// ---- scalar setters ----------------------------------------------------------

func asInt(v any, minimum int) (int, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("expected an integer, got %s", typeName(v))
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("expected an integer, got %v", f)
	}
	if int(f) < minimum {
		return 0, fmt.Errorf("expected an integer of at least %d, got %d", minimum, int(f))
	}
	return int(f), nil
}

func intSetter(minimum int, field func(*evalState) **int) func(*evalState, any) error {
	return func(es *evalState, v any) error {
		if v == nil {
			*field(es) = nil
			return nil
		}
		n, err := asInt(v, minimum)
		if err != nil {
			return err
		}
		*field(es) = &n
		return nil
	}
}

func enumSetter(values []string, field func(*evalState) **string) func(*evalState, any) error {
	return func(es *evalState, v any) error {
		switch x := v.(type) {
		case nil:
			*field(es) = nil
			return nil
		case string:
			if slices.Contains(values, x) {
				*field(es) = &x
				return nil
			}
			return fmt.Errorf("expected one of %s, got '%s'%s", strings.Join(values, ", "), clip(x), es.didYouMean(x, values))
		}
		return fmt.Errorf("expected one of %s, got %s", strings.Join(values, ", "), typeName(v))
	}
}

func setThinking(es *evalState, v any) error {
	const want = "expected a level (minimal, low, medium, high, max), a token budget or false"
	switch x := v.(type) {
	case nil:
		es.b.opts.Thinking = nil
		return nil
	case bool:
		if x {
			return fmt.Errorf("%s, got true", want)
		}
		es.b.opts.Thinking = ptr("off")
		return nil
	case float64:
		n, err := asInt(x, 1)
		if err != nil {
			return fmt.Errorf("%s: %v", want, err)
		}
		es.b.opts.Thinking = ptr(strconv.Itoa(n))
		return nil
	case string:
		if slices.Contains(thinkingLevels, x) {
			es.b.opts.Thinking = &x
			return nil
		}
		return fmt.Errorf("%s, got '%s'%s", want, clip(x), es.didYouMean(x, thinkingLevels))
	}
	return fmt.Errorf("%s, got %s", want, typeName(v))
}

func setTemperature(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.Temperature = nil
		return nil
	case float64:
		if x < 0 || x > 2 || math.IsNaN(x) {
			return fmt.Errorf("expected a number from 0 to 2, got %v", x)
		}
		es.b.opts.Temperature = &x
		return nil
	}
	return fmt.Errorf("expected a number, got %s", typeName(v))
}

func setProvider(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.Provider = nil
		return nil
	case string:
		if x == "" {
			return errors.New("expected a provider name, got an empty string")
		}
		if err := checkName("provider name", x); err != nil {
			return err
		}
		if ps := es.setup.Providers; ps != nil && !slices.Contains(ps, x) {
			return fmt.Errorf("unknown provider '%s'%s", clip(x), es.didYouMean(x, ps))
		}
		es.b.opts.Provider = &x
		return nil
	}
	return fmt.Errorf("expected a provider name, got %s", typeName(v))
}

func setModel(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.Model = nil
		return nil
	case string:
		if x == "" {
			return errors.New("expected a model name, got an empty string")
		}
		if err := checkName("model name", x); err != nil {
			return err
		}
		es.b.opts.Model = &x
		return nil
	}
	return fmt.Errorf("expected a model name, got %s", typeName(v))
}

func coerceAutopilot(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.Autopilot, es.b.opts.MaxTurns = nil, nil
		return nil
	case bool:
		es.b.opts.Autopilot = &x
		return nil
	}
	return fmt.Errorf("expected a boolean or a table {enabled = …, max_turns = …}, got %s", typeName(v))
}

func setAutopilotEnabled(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.Autopilot = nil
		return nil
	case bool:
		es.b.opts.Autopilot = &x
		return nil
	}
	return fmt.Errorf("expected a boolean, got %s", typeName(v))
}

// boolSetter sets a boolean option (nil unsets it).
func boolSetter(field func(*evalState) **bool) func(*evalState, any) error {
	return func(es *evalState, v any) error {
		switch x := v.(type) {
		case nil:
			*field(es) = nil
			return nil
		case bool:
			*field(es) = &x
			return nil
		}
		return fmt.Errorf("expected a boolean, got %s", typeName(v))
	}
}

func coerceSandbox(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.SandboxEnabled = nil
		return nil
	case bool:
		return setSandboxEnabled(es, x)
	}
	return fmt.Errorf("expected true or a table {enabled = true}, got %s", typeName(v))
}

func setSandboxEnabled(es *evalState, v any) error {
	switch x := v.(type) {
	case nil:
		es.b.opts.SandboxEnabled = nil
		return nil
	case bool:
		if !x {
			return errors.New(reasonSandboxOff)
		}
		es.b.opts.SandboxEnabled = ptr(true)
		return nil
	}
	return fmt.Errorf("expected true, got %s", typeName(v))
}

// ---- evaluation state --------------------------------------------------------

// builder accumulates what the frontmatter set.
type builder struct {
	opts Options

	tools    []string
	toolsSet bool

	approve       []string
	approveSet    bool
	approveAssign bool // the list was assigned (not only modified from setup's)
	excl          []string
	approveFn     *lua.LFunction
	approveWarned bool
}

// evalState is the flemma.opt state of one evaluation: setup, what was set,
// and the diagnostics.
type evalState struct {
	setup     Setup
	prefix    string // "flemma.opt" (Lua) or "flemma" (JSON)
	startLine int
	known     map[string]bool // nil: no tool validation
	presets   map[string]bool // nil: no preset validation
	b         builder
	diags     []Diagnostic
	frozen    bool
	limits    Limits
	// paramCost is the size of each provider parameter (by section and
	// key), paramTotal their sum.
	paramCost  map[paramKey]paramCost
	paramTotal paramCost
}

func newEvalState(setup Setup, prefix string, startLine int, limits Limits) *evalState {
	es := &evalState{setup: setup, prefix: prefix, startLine: startLine, limits: limits}
	if setup.KnownTools != nil {
		es.known = make(map[string]bool, len(setup.KnownTools))
		for _, t := range setup.KnownTools {
			es.known[t] = true
		}
	}
	if setup.Presets != nil {
		es.presets = make(map[string]bool, len(setup.Presets))
		for _, p := range setup.Presets {
			es.presets[p] = true
		}
	}
	return es
}

// room reports whether another diagnostic would be shown.
func (es *evalState) room() bool { return len(es.diags) < maxDiagnostics }

func (es *evalState) add(line int, severity, msg string) {
	if len(es.diags) == maxDiagnostics {
		es.diags = append(es.diags, Diagnostic{Line: line, Severity: SeverityError,
			Message: "too many problems in the frontmatter; the rest are not shown"})
	}
	if len(es.diags) > maxDiagnostics {
		return
	}
	es.diags = append(es.diags, Diagnostic{Line: line, Severity: severity, Message: clipMessage(msg)})
}

func (es *evalState) errorf(line int, format string, args ...any) {
	if len(es.diags) > maxDiagnostics {
		return // not shown: do not format it
	}
	es.add(line, SeverityError, fmt.Sprintf(format, args...))
}

func (es *evalState) warnf(line int, format string, args ...any) {
	if len(es.diags) > maxDiagnostics {
		return
	}
	es.add(line, SeverityWarning, fmt.Sprintf(format, args...))
}

// name is how a path is shown: "flemma.opt.tools.auto_approve".
func (es *evalState) name(path string) string {
	if path == "" {
		return es.prefix
	}
	return es.prefix + "." + path
}

// options returns what the frontmatter set (the function form of
// auto_approve is attached by the caller, which owns the VM).
func (es *evalState) options() Options {
	o := es.b.opts
	if es.b.toolsSet {
		o.Tools = append([]string{}, es.b.tools...)
	}
	if es.b.approveFn == nil && es.b.approveSet {
		o.AutoApprove = append([]string{}, es.b.approve...)
		o.AutoApproveAssigned = es.b.approveAssign
		if len(es.b.excl) > 0 {
			o.AutoApproveExclusions = append([]string{}, es.b.excl...)
		}
	}
	return o
}

// ---- applying values -----------------------------------------------------------

// child applies v to field key of n.
func (es *evalState) child(n *node, key string, v any, line int) {
	if n.kind == kindSection {
		es.sectionSet(n, key, v, line)
		return
	}
	c := n.lookup(key)
	if c == nil {
		es.unknownKey(n, key, line)
		return
	}
	es.apply(c, v, line)
}

func (es *evalState) unknownKey(n *node, key string, line int) {
	var extra []string
	if n.isList() {
		if key == "set" { // documented in old guides, never implemented
			es.errorf(line, "%s: unknown config key -- assign the list instead: %s = {...}",
				es.name(joinPath(n.path, key)), es.name(n.path))
			return
		}
		extra = listMethods
	}
	suggestion := ""
	if es.room() {
		suggestion = es.didYouMean(key, n.names(extra...))
	}
	es.errorf(line, "%s: unknown config key%s", es.name(joinPath(n.path, clip(key))), suggestion)
}

func (es *evalState) blocked(path, reason string, line int) {
	es.errorf(line, "%s: %s", es.name(path), reason)
}

// apply applies v to n: the one entry point for every write.
func (es *evalState) apply(n *node, v any, line int) {
	if ref, ok := v.(*proxyRef); ok && ref.n == n {
		return // flemma.opt.tools = flemma.opt.tools + "x": already recorded
	}
	if t, ok := v.(*cfgTable); ok && t.hasOps() && n.kind != kindBlocked {
		es.applyOps(n, t, line)
		return
	}
	switch n.kind {
	case kindBlocked:
		es.blocked(n.path, n.reason, line)
	case kindScalar:
		if err := n.set(es, v); err != nil {
			es.errorf(line, "%s: %s", es.name(n.path), err)
		}
	case kindObject:
		t, ok := v.(*cfgTable)
		if !ok {
			if n.set != nil {
				if err := n.set(es, v); err != nil {
					es.errorf(line, "%s: %s", es.name(n.path), err)
				}
				return
			}
			es.errorf(line, "%s: expected a table, got %s", es.name(n.path), typeName(v))
			return
		}
		if len(t.seq) > 0 {
			es.errorf(line, "%s: expected a table of options, got a list", es.name(n.path))
			return
		}
		es.applyKeys(n, t, line)
	case kindTools:
		switch x := v.(type) {
		case *proxyRef:
			es.listOp(n, opSet, x, line)
		case *cfgTable:
			if len(x.keys) == 0 || len(x.seq) > 0 {
				es.listOp(n, opSet, &cfgTable{seq: x.seq, json: x.json, array: true}, line)
			}
			es.applyKeys(n, x, line)
		default:
			es.errorf(line, "%s: expected a list of tool names, got %s", es.name(n.path), typeName(v))
		}
	case kindApprove:
		switch x := v.(type) {
		case *lua.LFunction:
			es.b.approveFn = x
			es.b.approve, es.b.excl, es.b.approveSet = nil, nil, false
		case string, *proxyRef:
			es.listOp(n, opSet, x, line)
		case *cfgTable:
			if len(x.keys) > 0 {
				es.errorf(line, "%s: expected a list of tool names and $presets, or a function, got a table with keys", es.name(n.path))
				return
			}
			es.listOp(n, opSet, x, line)
		default:
			es.errorf(line, "%s: expected a list of tool names and $presets, or a function, got %s", es.name(n.path), typeName(v))
		}
	case kindSection:
		t, ok := v.(*cfgTable)
		if !ok {
			es.errorf(line, "%s: expected a table, got %s", es.name(n.path), typeName(v))
			return
		}
		if len(t.seq) > 0 {
			es.errorf(line, "%s: expected a table of parameters, got a list", es.name(n.path))
			return
		}
		es.applyKeys(n, t, line)
	}
}

func (es *evalState) applyKeys(n *node, t *cfgTable, line int) {
	for i, k := range t.keys {
		es.child(n, k, t.vals[i], t.lineAt(i, line))
	}
}

// applyOps handles a table with "$" operators ({"$append": "bash"}), in
// order; plain keys beside them navigate into fields.
func (es *evalState) applyOps(n *node, t *cfgTable, line int) {
	if len(t.seq) > 0 {
		es.apply(n, &cfgTable{seq: t.seq, json: t.json, array: true}, line)
	}
	for i, k := range t.keys {
		l := t.lineAt(i, line)
		if !strings.HasPrefix(k, "$") {
			switch n.kind {
			case kindObject, kindTools, kindSection:
				es.child(n, k, t.vals[i], l)
			default:
				es.errorf(l, "%s: cannot navigate into non-object field with key '%s'", es.name(n.path), clip(k))
			}
			continue
		}
		op, known := map[string]int{"$set": opSet, "$append": opAppend, "$remove": opRemove, "$prepend": opPrepend}[k]
		switch {
		case !known:
			path := n.path
			if path == "" {
				path = "<root>"
			}
			es.errorf(l, "%s: unknown operator '%s'", joinPath(es.prefix, path), clip(k))
		case op == opSet:
			es.apply(n, t.vals[i], l)
		case !n.isList():
			es.errorf(l, "%s: '%s' requires a list-capable field", es.name(n.path), k)
		default:
			es.listOp(n, op, t.vals[i], l)
		}
	}
}

// ---- lists ---------------------------------------------------------------------

const (
	opSet = iota
	opAppend
	opRemove
	opPrepend
)

var opNames = [...]string{"set", "append", "remove", "prepend"}

// listItems turns a value into list items: a name, a list of names, or
// another list proxy.
func (es *evalState) listItems(n *node, v any, line int) ([]string, bool) {
	switch x := v.(type) {
	case string:
		if err := checkName("name", x); err != nil {
			es.errorf(line, "%s: %s", es.name(n.path), err)
			return nil, false
		}
		return []string{x}, true
	case *proxyRef:
		switch x.n.kind {
		case kindTools:
			return es.currentTools(), true
		case kindApprove:
			if es.b.approveFn == nil {
				return es.currentApprove(), true
			}
		}
	case *cfgTable:
		if len(x.keys) > 0 {
			es.errorf(line, "%s: expected a list of names, got a table with keys", es.name(n.path))
			return nil, false
		}
		if len(x.seq) > maxListItems {
			es.errorf(line, "%s: too many items (%d; the limit is %d)", es.name(n.path), len(x.seq), maxListItems)
			return nil, false
		}
		out := make([]string, 0, len(x.seq))
		for i, e := range x.seq {
			s, ok := e.(string)
			if !ok {
				es.errorf(line, "%s: item %d: expected a string, got %s", es.name(n.path), i+1, typeName(e))
				return nil, false
			}
			if err := checkName("name", s); err != nil {
				es.errorf(line, "%s: item %d: %s", es.name(n.path), i+1, err)
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	es.errorf(line, "%s: expected a name or a list of names, got %s", es.name(n.path), typeName(v))
	return nil, false
}

// currentTools is the enabled-tools list so far (setup's until touched).
func (es *evalState) currentTools() []string {
	if es.b.toolsSet {
		return slices.Clone(es.b.tools)
	}
	return slices.Clone(es.setup.Tools)
}

// currentApprove is the approval list so far (setup's until touched).
func (es *evalState) currentApprove() []string {
	if es.b.approveSet {
		return slices.Clone(es.b.approve)
	}
	return slices.Clone(es.setup.AutoApprove)
}

// listOp applies a list operation to the tools or approval list.
func (es *evalState) listOp(n *node, op int, v any, line int) {
	items, ok := es.listItems(n, v, line)
	if !ok {
		return
	}
	switch n.kind {
	case kindTools:
		for _, it := range items {
			es.checkTool(n, it, line)
		}
		es.b.tools = es.capList(n, listApply(es.currentTools(), op, items), line)
		es.b.toolsSet = true
	case kindApprove:
		for _, it := range items {
			es.checkApproveItem(n, it, line)
		}
		b := &es.b
		if op == opSet {
			b.approveFn = nil
			b.approve = es.capList(n, listApply(nil, opSet, items), line)
			b.excl = nil
			b.approveSet, b.approveAssign = true, true
			return
		}
		if b.approveFn != nil {
			es.errorf(line, "%s: is a function in this frontmatter; assign a list before using %s", es.name(n.path), opNames[op])
			return
		}
		if !b.approveSet && es.setup.AutoApprove == nil && !b.approveWarned {
			b.approveWarned = true
			es.warnf(line, "%s: setup's tools.auto_approve is not a list, so %s starts from an empty list", es.name(n.path), opNames[op])
		}
		b.approve = es.capList(n, listApply(es.currentApprove(), op, items), line)
		b.approveSet = true
		for _, it := range items {
			if op == opRemove {
				// Removing a tool also excludes it from the presets the
				// list names; the approval layer applies the exclusion
				// when it expands them.
				if isPlainName(it) && !slices.Contains(b.excl, it) {
					b.excl = append(b.excl, it)
				}
			} else {
				b.excl = slices.DeleteFunc(b.excl, func(e string) bool { return e == it })
			}
		}
	}
}

func (es *evalState) capList(n *node, list []string, line int) []string {
	if len(list) > maxListItems {
		es.errorf(line, "%s: too many items (%d; the limit is %d)", es.name(n.path), len(list), maxListItems)
		return list[:maxListItems]
	}
	return list
}

// listApply performs op on list (which it may modify) and returns the result.
// Append and prepend move an item that is already present; set drops
// duplicates; removing an absent item does nothing.
func listApply(list []string, op int, items []string) []string {
	without := func(l []string, it string) []string {
		return slices.DeleteFunc(l, func(e string) bool { return e == it })
	}
	switch op {
	case opSet:
		out := make([]string, 0, len(items))
		for _, it := range items {
			if !slices.Contains(out, it) {
				out = append(out, it)
			}
		}
		return out
	case opAppend:
		for _, it := range items {
			list = append(without(list, it), it)
		}
	case opRemove:
		for _, it := range items {
			list = without(list, it)
		}
	case opPrepend:
		front := listApply(nil, opSet, items)
		for _, it := range front {
			list = without(list, it)
		}
		return append(front, list...)
	}
	return list
}

// isPlainName reports whether an approval item is a tool name (not a
// $preset or a command rule).
func isPlainName(s string) bool {
	return !strings.HasPrefix(s, "$") && !strings.Contains(s, "(")
}

func (es *evalState) checkTool(n *node, name string, line int) {
	if name == "" {
		es.errorf(line, "%s: empty tool name", es.name(n.path))
		return
	}
	if es.known != nil && !es.known[name] {
		es.errorf(line, "%s: unknown tool '%s'%s", es.name(n.path), clip(name), es.didYouMean(name, es.setup.KnownTools))
	}
}

func (es *evalState) checkApproveItem(n *node, item string, line int) {
	switch {
	case item == "":
		es.errorf(line, "%s: empty name", es.name(n.path))
	case strings.HasPrefix(item, "$"):
		if es.presets != nil && !es.presets[item] {
			es.errorf(line, "%s: unknown preset '%s'%s", es.name(n.path), clip(item), es.didYouMean(item, es.setup.Presets))
		}
	case strings.Contains(item, "("):
		tool, _, _ := strings.Cut(item, "(")
		if tool == "" || !strings.HasSuffix(item, ")") {
			es.errorf(line, "%s: malformed rule '%s' (expected tool(pattern), e.g. bash(git status*))", es.name(n.path), clip(item))
			return
		}
		es.checkTool(n, tool, line)
	case strings.Contains(item, "."):
		es.errorf(line, "%s: '%s' looks like a module path; approval modules can only be named in setup()", es.name(n.path), clip(item))
	default:
		es.checkTool(n, item, line)
	}
}

// ---- provider sections ------------------------------------------------------------

func (es *evalState) section(n *node) *map[string]any {
	switch n.path {
	case "anthropic":
		return &es.b.opts.Anthropic
	case "openai":
		return &es.b.opts.OpenAI
	default:
		return &es.b.opts.Vertex
	}
}

func (es *evalState) sectionSet(n *node, key string, v any, line int) {
	path := joinPath(n.path, clip(key))
	if key == "" || strings.HasPrefix(key, "$") {
		es.errorf(line, "%s: invalid parameter name", es.name(path))
		return
	}
	if err := checkName("parameter name", key); err != nil {
		es.errorf(line, "%s: %s", es.name(path), err)
		return
	}
	m := es.section(n)
	pkey := paramKey{n.path, key}
	if v == nil {
		delete(*m, key)
		es.paramTotal = es.paramTotal.minus(es.paramCost[pkey])
		delete(es.paramCost, pkey)
		return
	}
	if _, ok := (*m)[key]; !ok && len(*m) >= maxConvertEntries {
		es.errorf(line, "%s: too many parameters (the limit is %d)", es.name(path), maxConvertEntries)
		return
	}
	var c paramCost
	g, err := sectionValue(v, 0, &c)
	if err != nil {
		es.errorf(line, "%s: %s", es.name(path), err)
		return
	}
	// The parameters of all sections together are bounded like one
	// converted value: they all go into one request.
	total := es.paramTotal.minus(es.paramCost[pkey]).plus(c)
	if total.values > es.limits.MaxValues || total.bytes > es.limits.MaxBytes {
		es.errorf(line, "%s: the provider parameters are too large (more than %d values or %s in all)",
			es.name(path), es.limits.MaxValues, formatSize(es.limits.MaxBytes))
		return
	}
	if *m == nil {
		*m = map[string]any{}
	}
	(*m)[key] = g
	if es.paramCost == nil {
		es.paramCost = map[paramKey]paramCost{}
	}
	es.paramCost[pkey], es.paramTotal = c, total
}

// paramKey identifies a provider parameter: section and name.
type paramKey struct{ section, name string }

// paramCost is the size of provider parameters: values and string bytes,
// counted at every place they appear.
type paramCost struct{ values, bytes int }

func (a paramCost) plus(b paramCost) paramCost {
	return paramCost{a.values + b.values, a.bytes + b.bytes}
}
func (a paramCost) minus(b paramCost) paramCost {
	return paramCost{a.values - b.values, a.bytes - b.bytes}
}

func sectionValue(v any, depth int, c *paramCost) (any, error) {
	c.values++
	switch x := v.(type) {
	case string:
		c.bytes += len(x)
		return x, nil
	case bool:
		return x, nil
	case float64:
		return goNumber(x), nil
	case *cfgTable:
		if depth >= 8 {
			return nil, errors.New("nested too deeply")
		}
		if len(x.keys) == 0 {
			out := make([]any, len(x.seq))
			for i, e := range x.seq {
				g, err := sectionValue(e, depth+1, c)
				if err != nil {
					return nil, err
				}
				out[i] = g
			}
			return out, nil
		}
		if len(x.seq) > 0 {
			return nil, errors.New("expected a list or a table with keys, not both")
		}
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			if x.vals[i] == nil {
				continue
			}
			c.bytes += len(k)
			g, err := sectionValue(x.vals[i], depth+1, c)
			if err != nil {
				return nil, err
			}
			out[k] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a string, number, boolean or table, got %s", typeName(v))
}
