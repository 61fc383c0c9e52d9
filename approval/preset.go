package approval

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PresetDef is one approval preset: tool names (or command rules) to approve
// and to deny.
type PresetDef struct {
	Approve []string
	Deny    []string
}

// Built-in preset names.
const (
	PresetReadonly = "$readonly" // read, grep, find, ls
	PresetDefault  = "$default"  // $readonly plus write, edit
	// PresetStandard is an alias of $default (the name the v0.11 plugin
	// uses). It follows $default, also a user-defined $default, unless the
	// user defines $standard itself.
	PresetStandard = "$standard"
)

func builtinPresets() map[string]PresetDef {
	return map[string]PresetDef{
		PresetReadonly: {Approve: []string{"read", "grep", "find", "ls"}},
		PresetDefault:  {Approve: []string{"read", "grep", "find", "ls", "write", "edit"}},
	}
}

// Presets is the preset registry: the built-ins overridden by the user's
// presets. It is immutable after NewPresets and safe for concurrent use.
type Presets struct {
	defs map[string]PresetDef
}

// NewPresets returns the built-in presets with the valid user presets laid
// over them (a user preset replaces a built-in of the same name). An invalid
// user preset is left out and reported, one error per preset, in name order:
// its key must start with '$' and every entry must be non-empty, and an entry
// starting with "bash(" must be a well-formed command rule.
func NewPresets(user map[string]PresetDef) (*Presets, []error) {
	p := &Presets{defs: builtinPresets()}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(user)) {
		def := user[name]
		if err := validatePreset(name, def); err != nil {
			errs = append(errs, err)
			continue
		}
		p.defs[name] = PresetDef{Approve: slices.Clone(def.Approve), Deny: slices.Clone(def.Deny)}
	}
	return p, errs
}

func validatePreset(name string, def PresetDef) error {
	if !strings.HasPrefix(name, "$") {
		return fmt.Errorf("Preset '%s' ignored — preset keys must start with '$'", name)
	}
	for _, field := range []struct {
		key  string
		list []string
	}{{"approve", def.Approve}, {"deny", def.Deny}} {
		for _, e := range field.list {
			if err := ValidateEntry(e); err != nil {
				return fmt.Errorf("Preset '%s' ignored — '%s': %v", name, field.key, err)
			}
		}
	}
	return nil
}

// ValidateEntry checks one entry of an approve or deny list: a non-empty tool
// name, "$preset", or a well-formed command rule "bash(<pattern>)". Tool and
// preset names are not checked against what exists (unknown ones are
// ignored at expansion).
func ValidateEntry(e string) error {
	if strings.TrimSpace(e) == "" {
		return fmt.Errorf("empty entry")
	}
	if looksLikeRule(e) {
		if _, ok := ParseRule(e); !ok {
			return fmt.Errorf("malformed command rule '%s' (want bash(<pattern>))", e)
		}
	}
	return nil
}

// DecodePresets converts tools.presets as decoded from msgpack (a map of
// tables) into PresetDefs, reporting entries of the wrong shape the way the
// Lua plugin did: "Preset '<n>' ignored — expected table, got <type>",
// "— 'approve' must be a string[], got <type>", "— 'deny' must be a
// string[], got <type>". nil and an empty table give no presets.
func DecodePresets(raw any) (map[string]PresetDef, []error) {
	out := map[string]PresetDef{}
	var errs []error
	entries := map[string]any{}
	switch m := raw.(type) {
	case nil:
		return out, nil
	case map[string]any:
		entries = m
	case map[any]any:
		for k, v := range m {
			entries[fmt.Sprint(k)] = v
		}
	case []any:
		if len(m) == 0 {
			return out, nil
		}
		return out, []error{fmt.Errorf("tools.presets: expected table of presets, got list")}
	default:
		return out, []error{fmt.Errorf("tools.presets: expected table, got %s", luaType(raw))}
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		var def PresetDef
		fields, ok := asTable(entries[name])
		if !ok {
			errs = append(errs, fmt.Errorf("Preset '%s' ignored — expected table, got %s", name, luaType(entries[name])))
			continue
		}
		var bad error
		for _, key := range []string{"approve", "deny"} {
			v, present := fields[key]
			if !present || v == nil {
				continue
			}
			list, ok := asStrings(v)
			if !ok {
				bad = fmt.Errorf("Preset '%s' ignored — '%s' must be a string[], got %s", name, key, luaType(v))
				break
			}
			if key == "approve" {
				def.Approve = list
			} else {
				def.Deny = list
			}
		}
		if bad != nil {
			errs = append(errs, bad)
			continue
		}
		out[name] = def
	}
	return out, errs
}

func asTable(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	case []any:
		if len(m) == 0 {
			return map[string]any{}, true
		}
	}
	return nil, false
}

func asStrings(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return slices.Clone(l), true
	case []any:
		out := make([]string, 0, len(l))
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	case map[string]any:
		return nil, len(l) == 0
	case map[any]any:
		return nil, len(l) == 0
	}
	return nil, false
}

// luaType names a decoded msgpack value by its Lua type.
func luaType(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case string, []byte:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return "number"
	case map[string]any, map[any]any, []any, []string:
		return "table"
	}
	return "userdata"
}

// Get returns a copy of the preset called name (aliases resolved).
func (p *Presets) Get(name string) (PresetDef, bool) {
	def, ok := p.lookup(name)
	if !ok {
		return PresetDef{}, false
	}
	return PresetDef{Approve: slices.Clone(def.Approve), Deny: slices.Clone(def.Deny)}, true
}

func (p *Presets) lookup(name string) (PresetDef, bool) {
	if p == nil {
		p = defaultPresets
	}
	if def, ok := p.defs[name]; ok {
		return def, true
	}
	if name == PresetStandard {
		def, ok := p.defs[PresetDefault]
		return def, ok
	}
	return PresetDef{}, false
}

var defaultPresets = &Presets{defs: builtinPresets()}

// Names returns the preset names, sorted. The $standard alias is not listed
// unless the user defined it.
func (p *Presets) Names() []string {
	if p == nil {
		p = defaultPresets
	}
	return slices.Sorted(maps.Keys(p.defs))
}

// cmdRule is a command rule with its provenance.
type cmdRule struct {
	entry   string // "bash(git status*)" as written
	pattern string // normalized glob
	lower   string // ASCII-lowercased pattern (deny matching)
	label   string // rule text for Outcome.Rule
}

// Policy is an expanded approve/deny list: tool names to approve and deny,
// each with the entry that put it there, and command rules for bash. Build it
// with Presets.Expand; it is immutable and safe for concurrent use. A nil
// *Policy passes on every call.
type Policy struct {
	approve      map[string]string // tool -> rule label ("$default" or "read")
	deny         map[string]string // tool -> preset name
	approveRules []cmdRule
	denyRules    []cmdRule
}

// Expand turns an auto_approve list into a Policy:
//
//   - "$name" naming a known preset adds its approve entries to the approve
//     set and its deny entries to the deny set (union over the list); an
//     unknown "$name" adds nothing;
//   - any other entry is a tool name (or command rule) to approve; plain
//     entries can never deny;
//   - exclusions (frontmatter :remove() of something that is not a list
//     entry) remove from the approve side only: a tool name removes that
//     tool, "bash" also removes every bash(...) approve rule, and a rule text
//     removes that rule. Nothing removes a deny.
//
// When deciding, deny wins over approve (see Policy.Decide).
func (p *Presets) Expand(list []string, exclusions []string) *Policy {
	pol := &Policy{approve: map[string]string{}, deny: map[string]string{}}
	addRule := func(rules *[]cmdRule, entry, source string) {
		pattern, ok := ParseRule(entry)
		if !ok {
			return
		}
		for _, r := range *rules {
			if r.entry == entry {
				return
			}
		}
		label := entry
		if source != "" {
			label = entry + " from " + source
		}
		*rules = append(*rules, cmdRule{entry: entry, pattern: pattern, lower: asciiLower(pattern), label: label})
	}
	approve := func(entry, source string) {
		if looksLikeRule(entry) {
			addRule(&pol.approveRules, entry, source)
			return
		}
		if entry == "" {
			return
		}
		if _, ok := pol.approve[entry]; !ok {
			label := source
			if label == "" {
				label = entry
			}
			pol.approve[entry] = label
		}
	}
	for _, entry := range list {
		if !strings.HasPrefix(entry, "$") {
			approve(entry, "")
			continue
		}
		def, ok := p.lookup(entry)
		if !ok {
			continue // unknown presets are ignored
		}
		for _, a := range def.Approve {
			approve(a, entry)
		}
		for _, d := range def.Deny {
			if looksLikeRule(d) {
				addRule(&pol.denyRules, d, entry)
			} else if _, ok := pol.deny[d]; !ok && d != "" {
				pol.deny[d] = entry
			}
		}
	}
	for _, x := range exclusions {
		delete(pol.approve, x)
		pol.approveRules = slices.DeleteFunc(pol.approveRules, func(r cmdRule) bool {
			return x == BashTool || r.entry == x
		})
	}
	return pol
}

// Approved returns the tool names the policy approves, sorted (command rules
// not included).
func (p *Policy) Approved() []string {
	if p == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(p.approve))
}

// Denied returns the tool names the policy denies, sorted.
func (p *Policy) Denied() []string {
	if p == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(p.deny))
}

// Rules returns the command rules as written, approve rules first.
func (p *Policy) Rules() (approve, deny []string) {
	if p == nil {
		return nil, nil
	}
	for _, r := range p.approveRules {
		approve = append(approve, r.entry)
	}
	for _, r := range p.denyRules {
		deny = append(deny, r.entry)
	}
	return approve, deny
}

// RuleUnverifiable is the rule of the require_approval a policy with bash
// deny rules returns for a command it cannot check against them.
const RuleUnverifiable = "unverifiable command"

// Decide applies the policy to a call, returning Approve, Deny or Pass and
// the rule that decided, in this order:
//
//  1. the tool is in the deny set → Deny (rule: the preset);
//  2. bash with a string "command" that a deny rule matches (whole command,
//     any simple command in it, through wrappers; see MatchCommand) → Deny
//     (rule: "bash(...) from $preset");
//  3. bash when the policy has deny rules but the command cannot be checked
//     against them (command word built at run time, unbalanced quotes, a
//     shell reading a script or stdin, too long, ...) → RequireApproval
//     (rule: RuleUnverifiable) — a deny rule must not be evaded by
//     obfuscation, neither here nor through a lower resolver;
//  4. the tool is in the approve set and not excluded by
//     call.Env.Exclusions → Approve (rule: the preset or the tool name);
//  5. bash whose command is a plain simple command (see MatchCommand) that
//     an approve rule matches, rule not excluded → Approve (rule: the rule);
//  6. otherwise Pass.
//
// A bash call whose input has no string "command" matches no command rule.
func (p *Policy) Decide(c Call) (Decision, string) {
	if p == nil {
		return Pass, ""
	}
	if src, ok := p.deny[c.Tool]; ok {
		return Deny, src
	}
	cmd, hasCmd := "", false
	if c.Tool == BashTool {
		cmd, hasCmd = c.Input["command"].(string)
	}
	if hasCmd && len(p.denyRules) > 0 {
		a := analyze(cmd)
		for _, r := range p.denyRules {
			if a.matches(r.lower) {
				return Deny, r.label
			}
		}
		if a.unverifiable {
			return RequireApproval, RuleUnverifiable
		}
	}
	if src, ok := p.approve[c.Tool]; ok && !slices.Contains(c.Env.Exclusions, c.Tool) {
		return Approve, src
	}
	if hasCmd && len(p.approveRules) > 0 && !slices.Contains(c.Env.Exclusions, BashTool) {
		if norm, ok := normalizeApprove(cmd); ok {
			for _, r := range p.approveRules {
				if !slices.Contains(c.Env.Exclusions, r.entry) && matchApprove(r.pattern, norm) {
					return Approve, r.label
				}
			}
		}
	}
	return Pass, ""
}
