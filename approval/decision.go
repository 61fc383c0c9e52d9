package approval

import "fmt"

// Decision is what a resolver or the chain says about one tool call.
type Decision string

// The decisions. Pass is the resolver's "no opinion": the chain moves on to
// the next resolver. The chain itself never returns Pass.
const (
	Approve         Decision = "approve"
	RequireApproval Decision = "require_approval"
	Deny            Decision = "deny"
	Pass            Decision = ""
)

// Valid reports whether d is one of the three final decisions (Pass is not).
func (d Decision) Valid() bool {
	return d == Approve || d == RequireApproval || d == Deny
}

// ParseDecision converts the string a Lua resolver returned ("approve",
// "require_approval", "deny", or "" for nil) into a Decision. Anything else is
// an error; the chain logs such a result and skips the resolver.
func ParseDecision(s string) (Decision, error) {
	d := Decision(s)
	if d == Pass || d.Valid() {
		return d, nil
	}
	return Pass, fmt.Errorf("invalid approval result %q (want \"approve\", \"require_approval\", \"deny\" or nil)", s)
}

// FromAutoApprove maps the value an auto_approve *function* returned (seed
// 004) to a Decision: true approves, false requires approval, the string
// "deny" denies, and anything else (nil, 42, "approve", ...) passes.
func FromAutoApprove(v any) Decision {
	switch v := v.(type) {
	case bool:
		if v {
			return Approve
		}
		return RequireApproval
	case string:
		if v == "deny" {
			return Deny
		}
	}
	return Pass
}

// Outcome is the chain's answer with its provenance: which resolver decided
// and which rule inside it (a preset name such as "$default", a tool name
// such as "read", a command rule such as "bash(git status*)", "function",
// "sandbox", ...). Resolver is empty when no resolver decided.
type Outcome struct {
	Decision Decision
	Resolver string
	Rule     string
}

// Rule texts the package itself produces.
const (
	// RuleDefault is the rule of the outcome when no resolver decided.
	RuleDefault = "default"
	// RuleCanceled is the rule when the context ended before a decision.
	RuleCanceled = "canceled"
	// RuleError is the rule when a fail-closed resolver errored.
	RuleError = "error"
	// RuleFunction is the rule of decisions made by an auto_approve function.
	RuleFunction = "function"
	// RuleSandbox is the rule of the sandbox resolver's approvals.
	RuleSandbox = "sandbox"
	// RuleCatchAll is the rule of the catch-all resolver's approvals.
	RuleCatchAll = "require_approval = false"
)

// String renders the outcome for logs and :Flemma tool:list, e.g.
// "approve by urn:flemma:approval:config ($default)" or
// "require_approval by default".
func (o Outcome) String() string {
	d := string(o.Decision)
	if d == "" {
		d = "pass"
	}
	switch {
	case o.Resolver == "" && o.Rule == "":
		return d
	case o.Resolver == "":
		return d + " by " + o.Rule
	case o.Rule == "":
		return d + " by " + o.Resolver
	default:
		return d + " by " + o.Resolver + " (" + o.Rule + ")"
	}
}
