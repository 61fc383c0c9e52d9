// Package shell reads bash command text for the approval policy: what a
// command may run (the deny side) and whether a plain command is known to
// be free of writes and execution beyond what a rule spells (the approve
// side). Both sides share one body of program knowledge (the program
// families, each in its own file with its example table).
//
// The surface is small:
//
//	Analyze(cmd)            what cmd may run: a Verdict per rule, Unverifiable
//	Compile(pattern)        a command rule's glob, for both sides
//	(*Pattern).Approves     the approve side: plain words, glob, option knowledge
//	Normalize, Glob         the glob itself (tool-name patterns use it too)
//
// It is pure: no I/O, no processes.
package shell

// MaxApproveLen is the longest command (in bytes) an approve rule can match;
// longer commands fall through to the next rule or resolver.
const MaxApproveLen = 4096

// MaxAnalyzeLen bounds the work spent looking for denied commands: only
// this many bytes are analysed, and a longer command counts as
// unverifiable.
const MaxAnalyzeLen = 64 << 10

// MaxNesting bounds sh -c / eval / env -S recursion; deeper counts as
// unverifiable.
const MaxNesting = 8

// Verdict is what the analysis says of one deny rule.
type Verdict uint8

const (
	// No: no command the text may run matches the rule.
	No Verdict = iota
	// MayRun: the command may run what the rule names without the analyser
	// being able to tell (the policy asks).
	MayRun
	// Runs: a command the text runs certainly matches the rule (the policy
	// denies).
	Runs
)

// Pattern is a command rule's glob ("git status*"), compiled once.
type Pattern struct {
	text string       // normalized, case-sensitive (approve side)
	deny *denyPattern // ASCII-lowercased (deny side)
}

// Compile returns the pattern with its blanks normalized (see Normalize).
func Compile(pattern string) *Pattern {
	p := Normalize(pattern)
	return &Pattern{text: p, deny: newDenyPattern(asciiLower(p))}
}

// String returns the normalized pattern.
func (p *Pattern) String() string { return p.text }

// Analysis is what a shell text may run, ready to be asked about rules.
type Analysis struct{ a *analysis }

// Analyze reads cmd the way bash would and collects every command it may
// run (see analyze.go).
func Analyze(cmd string) *Analysis { return &Analysis{a: analyze(cmd)} }

// Unverifiable reports that the command may run something no text in it
// shows (a command word built at run time, a script, inline code, ...).
func (x *Analysis) Unverifiable() bool { return x.a.unverifiable }

// Verdict says whether the command certainly runs, may run, or does not
// run what the deny rule p names (matched ASCII case-insensitively).
func (x *Analysis) Verdict(p *Pattern) Verdict {
	switch {
	case x.a.denies(p.deny):
		return Runs
	case x.a.mayMatch(p.deny):
		return MayRun
	}
	return No
}

// Approves reports whether p, as an approve rule, matches cmd: cmd is a
// single plain simple command the glob matches (see plain), and every word
// the pattern does not spell itself is known to be free of writes and
// execution for the program it belongs to (see approve.go).
func (p *Pattern) Approves(cmd string) bool {
	norm, ok := normalizeApprove(cmd)
	return ok && matchApprove(p.text, norm)
}

// Normalize trims ASCII spaces and tabs and collapses every run of them
// into one space.
func Normalize(s string) string { return normalizeBlanks(s) }

// Glob matches s against a pattern where '*' matches any run of bytes and
// every other byte itself, anchored at both ends.
func Glob(pattern, s string) bool { return globMatch(pattern, s) }
