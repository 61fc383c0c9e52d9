package approval

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flemma-dev/flemma/approval/shell"
)

// PresetDef is one approval preset: tool names (or command rules) to approve
// and to deny, and tags whose tools it approves.
type PresetDef struct {
	Approve []string
	Deny    []string
	// Tags approve every tool that declares one of them (Call.Tags). The
	// built-in presets are made of tags, so a tool that declares
	// TagReadonly is in $readonly without a name list naming it. User
	// presets (tools.presets) have names and rules only.
	Tags []string
}

// The privilege tags: what a tool declares it does. The built-in presets
// approve tools by them.
const (
	TagReadonly = "readonly" // only reads (files, the editor's state)
	TagWrites   = "writes"   // changes files
	TagExec     = "exec"     // runs programs
)

// Built-in preset names. $readonly, $files and $commands are the privilege
// groups of seed 003, each the one before it plus more.
const (
	PresetReadonly = "$readonly" // tools tagged readonly: read, grep, find, ls, and the editor's diagnostics, lsp, buffers
	PresetFiles    = "$files"    // $readonly plus the tools tagged writes: write, edit
	PresetCommands = "$commands" // $files plus the tools tagged exec: bash, sandboxed or not
	PresetDefault  = "$default"  // $files
	// PresetStandard is an alias of $default (the name the v0.11 plugin
	// uses). It follows $default, also a user-defined $default, unless the
	// user defines $standard itself.
	PresetStandard = "$standard"
)

// builtinPresets are the privilege groups, by tag: no preset names a tool.
func builtinPresets() map[string]PresetDef {
	return map[string]PresetDef{
		PresetReadonly: {Tags: []string{TagReadonly}},
		PresetFiles:    {Tags: []string{TagReadonly, TagWrites}},
		PresetCommands: {Tags: []string{TagReadonly, TagWrites, TagExec}},
		PresetDefault:  {Tags: []string{TagReadonly, TagWrites}},
	}
}

// Presets is the preset registry: the built-ins overridden by the user's
// presets. It is immutable after NewPresets and safe for concurrent use.
type Presets struct {
	defs map[string]PresetDef
	// tagged lists the tools that declare a tag (Get shows a preset's
	// tags as those tools); nil: none.
	tagged func(tag string) []string
}

// NewPresets returns the built-in presets with the valid user presets laid
// over them (a user preset replaces a built-in of the same name). An invalid
// user preset is left out and reported, one error per preset, in name order:
// its key must start with '$' and every entry must be non-empty, and an entry
// starting with "bash(" must be a well-formed command rule. tagged, when not
// nil, names the tools that declare a tag, for Get; deciding needs only the
// call's own tags.
func NewPresets(user map[string]PresetDef, tagged func(tag string) []string) (*Presets, []error) {
	p := &Presets{defs: builtinPresets(), tagged: tagged}
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

// PresetError says that a user preset is left out, and why, in the Lua
// plugin's words: "Preset '<name>' ignored — <why>".
type PresetError struct{ Name, Why string }

func (e *PresetError) Error() string { return "Preset '" + e.Name + "' ignored — " + e.Why }

func validatePreset(name string, def PresetDef) error {
	if !strings.HasPrefix(name, "$") {
		return &PresetError{Name: name, Why: "preset keys must start with '$'"}
	}
	for _, field := range []struct {
		key  string
		list []string
	}{{"approve", def.Approve}, {"deny", def.Deny}} {
		for _, e := range field.list {
			if err := ValidateEntry(e); err != nil {
				return &PresetError{Name: name, Why: fmt.Sprintf("'%s': %v", field.key, err)}
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
	if looksLikeFetchRule(e) {
		if _, ok := ParseFetchRule(e); !ok {
			return fmt.Errorf("malformed fetch rule '%s' (want fetch(<host>) or fetch(*.<domain>))", e)
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
			errs = append(errs, &PresetError{Name: name, Why: "expected table, got " + luaType(entries[name])})
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
				bad = &PresetError{Name: name, Why: fmt.Sprintf("'%s' must be a string[], got %s", key, luaType(v))}
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

// Get returns a copy of the preset called name (aliases resolved), its
// tags' tools (as NewPresets' tagged names them, each tag's in its order)
// first in Approve.
func (p *Presets) Get(name string) (PresetDef, bool) {
	def, ok := p.lookup(name)
	if !ok {
		return PresetDef{}, false
	}
	var approve []string
	if p != nil && p.tagged != nil {
		for _, tag := range def.Tags {
			for _, t := range p.tagged(tag) {
				if !slices.Contains(approve, t) {
					approve = append(approve, t)
				}
			}
		}
	}
	approve = append(approve, def.Approve...)
	return PresetDef{Approve: approve, Deny: slices.Clone(def.Deny), Tags: slices.Clone(def.Tags)}, true
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
	label   string // rule text for Outcome.Rule
	glob    *shell.Pattern
}

// Policy is an expanded approve/deny list: tool names to approve and deny,
// each with the entry that put it there, and command rules for bash. Build it
// with Presets.Expand; it is immutable and safe for concurrent use. A nil
// *Policy passes on every call.
type Policy struct {
	approve      map[string]string // tool -> rule label ("$default" or "read")
	approveAt    map[string]int    // tool -> position of its entry in the list
	approveTags  []tagRule         // tags of the presets in the list, in list order
	excluded     map[string]bool   // tools the exclusions remove (from tag approvals too)
	deny         map[string]string // tool -> preset name
	approveRules []cmdRule
	denyRules    []cmdRule
	fetchRules   []cmdRule // fetch(<host>) approve rules: pattern is the host
}

// tagRule approves the tools that declare tag, as the preset label says.
type tagRule struct {
	tag, label string
	at         int // position of the preset in the list
}

// Expand turns an auto_approve list into a Policy:
//
//   - "$name" naming a known preset adds its approve entries to the approve
//     set, the tools declaring its tags too, and its deny entries to the
//     deny set (union over the list); an unknown "$name" adds nothing;
//   - any other entry is a tool name (or command rule) to approve; plain
//     entries can never deny;
//   - exclusions (frontmatter :remove() of something that is not a list
//     entry) remove from the approve side only: a tool name removes that
//     tool, "bash" also removes every bash(...) approve rule, and a rule text
//     removes that rule. Nothing removes a deny.
//
// When deciding, deny wins over approve (see Policy.Decide).
func (p *Presets) Expand(list []string, exclusions []string) *Policy {
	pol := &Policy{approve: map[string]string{}, approveAt: map[string]int{}, excluded: map[string]bool{}, deny: map[string]string{}}
	at := 0 // the position of the list entry being expanded
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
		*rules = append(*rules, cmdRule{entry: entry, pattern: pattern, label: label, glob: shell.Compile(pattern)})
	}
	approve := func(entry, source string) {
		if host, ok := ParseFetchRule(entry); ok {
			label := entry
			if source != "" {
				label = entry + " from " + source
			}
			pol.fetchRules = append(pol.fetchRules, cmdRule{entry: entry, pattern: host, label: label})
			return
		}
		if looksLikeRule(entry) {
			addRule(&pol.approveRules, entry, source)
			return
		}
		if entry == "" {
			return
		}
		entry = InternalName(entry)
		if _, ok := pol.approve[entry]; !ok {
			label := source
			if label == "" {
				label = entry
			}
			pol.approve[entry] = label
			pol.approveAt[entry] = at
		}
	}
	for i, entry := range list {
		at = i
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
		for _, tag := range def.Tags {
			pol.approveTags = append(pol.approveTags, tagRule{tag: tag, label: entry, at: i})
		}
		for _, d := range def.Deny {
			if looksLikeRule(d) {
				addRule(&pol.denyRules, d, entry)
			} else if _, ok := pol.deny[InternalName(d)]; !ok && d != "" {
				pol.deny[InternalName(d)] = entry
			}
		}
	}
	for _, x := range exclusions {
		delete(pol.approve, InternalName(x))
		pol.excluded[InternalName(x)] = true
		pol.approveRules = slices.DeleteFunc(pol.approveRules, func(r cmdRule) bool {
			return x == BashTool || r.entry == x
		})
		pol.fetchRules = slices.DeleteFunc(pol.fetchRules, func(r cmdRule) bool {
			return x == FetchTool || r.entry == x
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
	for _, r := range p.fetchRules {
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

// RuleMayMatch prefixes the rule of the require_approval a policy returns
// for a command that may run what a deny rule names although no text of it
// matches: "may match bash(rm *) from $safety".
const RuleMayMatch = "may match "

// Decide applies the policy to a call, returning Approve, Deny,
// RequireApproval or Pass and the rule that decided, in this order:
//
//  1. the tool is in the deny set → Deny (rule: the preset);
//  2. bash with a string "command" that a deny rule matches (see
//     MatchCommand) → Deny (rule: "bash(...) from $preset");
//  3. bash when the policy has deny rules and the command is unverifiable
//     (see below) → RequireApproval (rule: RuleUnverifiable);
//  4. bash when a deny rule may match (see below) → RequireApproval (rule:
//     RuleMayMatch + "bash(...) from $preset");
//  5. the tool is in the approve set or declares a tag (Call.Tags) of a
//     preset in the list, and is not excluded by call.Env.Exclusions →
//     Approve (rule: the preset or the tool name, the one earliest in the
//     list);
//  6. bash whose command is a plain simple command (see MatchCommand) that
//     an approve rule matches, rule not excluded → Approve (rule: the rule);
//     fetch whose URL's host a fetch(<host>) rule covers (see fetch.go) →
//     Approve (rule: the rule);
//  7. otherwise Pass.
//
// Steps 3 and 4 keep a deny rule from being evaded by obfuscation, neither
// here nor through a lower resolver: when the analyser cannot be sure that
// no deny rule matches, the answer is require_approval.
//
// A command is unverifiable when it may run something no text in it shows:
//
//   - a command word built at run time ($x, "$@", $(...), `...`, globs,
//     brace expansion, ${x:1}, ~user, zsh's =cmd), also the command
//     xargs, find -exec or parallel fill in from their input, and input
//     xargs appends to a program whose arguments may be code or options
//     (awk, sed, find, make, ssh, watch, flock, git without subcommand);
//   - a script file or stdin given to a shell (sh x.sh, source, ".",
//     cat x | sh, bash < x, sudo -s, su, chroot or ssh without a
//     command), or a string a shell parses again that holds an expansion
//     (eval "$x", sh -c "echo $x", trap "$x");
//   - code in another language: python -c, perl -e, ruby -e, node -e,
//     php -r, lua -e and the like, an interpreter reading stdin, awk
//     programs calling system(), using pipes or loading files, sed scripts
//     with the e command or flag or read from a file, make with $ in an
//     argument or --eval, vim -c or +cmd, ex, emacs --eval, gdb, pwsh;
//   - commands run from stdin, history or later: at, batch, parallel,
//     sem, crontab (installing), fc, newgrp, script without -c, and
//     programs that run shell commands found in their input (sqlite3,
//     psql, mysql, ed, dc, ftp, gnuplot, ...) when the command has a pipe,
//     an input redirection or a here-document; nc -e;
//   - a name bound to another program: hash -p, enable -f, BASH_CMDS,
//     BASH_ALIASES, a function imported from the environment
//     (BASH_FUNC_...); a file bash reads: BASH_ENV, ENV, --rcfile; git
//     configuration set in the environment (GIT_CONFIG_*); a variable
//     whose value programs run (GIT_SSH_COMMAND, PAGER, EDITOR,
//     TAR_OPTIONS, LD_PRELOAD, PS4, PROMPT_COMMAND, ...) set to a value
//     built at run time;
//   - a shell evaluating values the command builds at run time: ${x@P},
//     zsh's ${(e)x}, arithmetic ($((x)), ((x)), let, [[ x -eq y ]],
//     subscripts, declare -i) on a variable the command assigns when some
//     value is built at run time, and variable names built at run time
//     given to read, printf -v, test -v, declare, unset or mapfile;
//   - unbalanced quotes, substitutions, [[ or case; nesting of sh -c,
//     eval, backticks and the like deeper than 8, or of $( ) deeper than
//     100; more than 32 wrappers in a row; a NUL byte; more than
//     MaxAnalyzeCommandLen bytes;
//
// A deny rule may match when
//
//   - its glob matches the text for some value of the expansions in it
//     ("rm $FLAGS /" against bash(rm -rf*));
//   - it matches a text that may or may not run: a here-document body or
//     here-string, a literal string holding "$(", "`", "<(" or ">(" (which
//     eval, ${x@P}, arithmetic, PS4 or git may run later), an extglob;
//   - a word that may name the command something runs holds a word
//     whose value or basename matches the rule's first word that is not
//     only stars, as written or with the quotes, backslashes and
//     expansions a later shell would remove (r\m, "r"m, r${x}m); words
//     are split at every byte but letters, digits and "_./-". Such words
//     are the arguments and stdin texts of commands that may run them —
//     a command word the analyser does not know, git with a subcommand
//     other than the plain ones (status, log, diff, commit, rm, ...),
//     an interpreter running a script file, make, a wrapper given an
//     option it does not know, and printing commands that write a file
//     (echo ... > x.sh) — as well as wrappers' option values, git's -c
//     values, env's NAME=VALUE entries and assignment values anywhere,
//     and, when the command has a pipe, an input redirection or a
//     here-document next to such a command, the literal words of its
//     printing commands. Examples: "foo rm -rf x", "mywrap git push",
//     "docker run img rm -rf /", "cp /bin/rm x", "echo rm x | mywrap",
//     "GIT_SSH_COMMAND='rm x' git fetch". An argument of such a command
//     built at run time from a value the command sets ($_, "$1", a
//     variable it assigns, a substitution, a glob) counts as holding any
//     word;
//   - a command named by the rule's first word has the rule's other
//     words (those not only stars) among its arguments, or for a
//     short-flag cluster such as -rf its letters among its short options,
//     in any order: "docker --context x rm c" against bash(docker rm*),
//     "kubectl -n x delete pod y" against bash(kubectl delete*),
//     "git push origin main --force" against bash(git push --force*),
//     "rm -r -f /" and "rm / -fr" against bash(rm -rf*); for git with a
//     plain subcommand the subcommand must match the rule's second word.
//
// Programs run by name are taken to be what their name says: a script or
// binary that the command (or an earlier call, or the write tool) creates
// and then runs, a script file given to an interpreter, hooks, aliases and
// scripts from existing configuration (.git/config, Makefiles,
// package.json) and long options spelled differently from a rule
// (--recursive for -r) are beyond the analysis. Deny rules stop accidents
// and the evasions above; they are not a sandbox.
//
// A bash call whose input has no string "command" matches no command rule.
func (p *Policy) Decide(c Call) (Decision, string) {
	if p == nil {
		return Pass, ""
	}
	if src, ok := p.deny[c.Tool]; ok {
		return Deny, src
	}
	if src, ok := matchNamePattern(p.deny, c.Tool); ok {
		return Deny, src
	}
	cmd, hasCmd := "", false
	if c.Tool == BashTool {
		cmd, hasCmd = c.Input["command"].(string)
	}
	if hasCmd && len(p.denyRules) > 0 {
		a := shell.Analyze(cmd)
		for _, r := range p.denyRules {
			if a.Runs(r.glob) {
				return Deny, r.label
			}
		}
		if a.Unverifiable() {
			return RequireApproval, RuleUnverifiable
		}
		for _, r := range p.denyRules {
			if a.MayRun(r.glob) {
				return RequireApproval, RuleMayMatch + r.label
			}
		}
	}
	excluded := slices.ContainsFunc(c.Env.Exclusions, func(x string) bool { return InternalName(x) == c.Tool })
	if src, ok := p.approvedByEntry(c); ok && !excluded {
		return Approve, src
	}
	if src, ok := matchNamePattern(p.approve, c.Tool); ok && !excluded {
		return Approve, src
	}
	if c.Tool == FetchTool && len(p.fetchRules) > 0 && !excluded {
		if u, ok := c.Input["url"].(string); ok {
			if host, ok := fetchHost(u); ok {
				for _, r := range p.fetchRules {
					if !slices.Contains(c.Env.Exclusions, r.entry) && fetchRuleMatches(r.pattern, host) {
						return Approve, r.label
					}
				}
			}
		}
	}
	if hasCmd && len(p.approveRules) > 0 && !slices.Contains(c.Env.Exclusions, BashTool) {
		for _, r := range p.approveRules {
			if !slices.Contains(c.Env.Exclusions, r.entry) && r.glob.Approves(cmd) {
				return Approve, r.label
			}
		}
	}
	return Pass, ""
}

// approvedByEntry finds what approves c by its name or its tags: the entry
// earliest in the list.
func (p *Policy) approvedByEntry(c Call) (string, bool) {
	src, ok := p.approve[c.Tool]
	at := p.approveAt[c.Tool]
	if p.excluded[c.Tool] {
		return src, ok
	}
	for _, r := range p.approveTags {
		if (!ok || r.at < at) && slices.Contains(c.Tags, r.tag) {
			return r.label, true
		}
	}
	return src, ok
}

// InternalName is a tool name as the registry knows it: the providers send
// a name's ':' as "__" (mcp:github:create_issue travels as
// mcp__github__create_issue), so an entry written the wire's way
// ("mcp__github__*") means the same tools.
func InternalName(entry string) string { return strings.ReplaceAll(entry, "__", ":") }

// matchNamePattern finds, among the entries of set, a name pattern (an
// entry with '*', which matches any run of characters: "mcp__github__*")
// matching tool, the first in sorted order, and returns its label. A
// pattern never matches bash: bash is approved by its name or by
// bash(<pattern>) rules, which look at the command.
func matchNamePattern(set map[string]string, tool string) (string, bool) {
	if tool == BashTool {
		return "", false
	}
	for _, entry := range slices.Sorted(maps.Keys(set)) {
		if strings.Contains(entry, "*") && NameMatch(entry, tool) {
			return set[entry], true
		}
	}
	return "", false
}

// NameMatch reports whether a tool name pattern matches name: '*' matches
// any run of characters (none included), every other character itself —
// the matching of command rules (globMatch).
func NameMatch(pattern, name string) bool { return shell.Glob(pattern, name) }
