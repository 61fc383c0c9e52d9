package shell

// Each program family carries an example table next to its knowledge: a
// command and what a rule must say of it (anchor: codex's execpolicy,
// rules with match / not-match examples). TestFamilyExamples checks every
// table.

// verdict is what the analysis says of one deny rule.
type verdict uint8

const (
	// No: no command the text may run matches the rule.
	No verdict = iota
	// MayRun: the command may run what the rule names (the policy asks).
	MayRun
	// Runs: a command the text runs certainly matches it (the policy denies).
	Runs
)

// verdictOf is the analysis's verdict on a deny rule.
func verdictOf(cmd, rule string) verdict {
	a, p := Analyze(cmd), Compile(rule)
	switch {
	case a.Runs(p):
		return Runs
	case a.MayRun(p):
		return MayRun
	}
	return No
}

type example struct {
	rule, cmd string
	approve   bool    // an approve example (else a deny example)
	want      bool    // approve: whether the rule matches
	verdict   verdict // deny: what the analysis says of the rule
	unverify  bool    // deny: the command is unverifiable
}

// approves: the approve rule matches cmd (want) or falls through.
func approves(rule, cmd string, want bool) example {
	return example{rule: rule, cmd: cmd, approve: true, want: want}
}

// denies: the deny rule's verdict on cmd.
func denies(rule, cmd string, v verdict) example {
	return example{rule: rule, cmd: cmd, verdict: v}
}

// unverifiable: the analyser cannot tell what cmd runs.
func unverifiable(cmd string) example { return example{cmd: cmd, unverify: true} }

// families are the example tables, by family.
var families = map[string][]example{
	"data": dataExamples, "find": findExamples, "sed": sedExamples, "awk": awkExamples,
	"git": gitExamples, "wrappers": wrapperExamples, "runners": runnerExamples,
}
