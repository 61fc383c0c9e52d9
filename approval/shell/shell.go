// Package shell reads bash command text for the approval policy: what a
// command may run (the deny side) and whether a plain command is known to
// be free of writes and execution beyond what a rule spells (the approve
// side). Both sides share one body of program knowledge (the program
// families, each in its own file with its example table).
//
// The surface is small:
//
//	Analyze(cmd)            what cmd may run: per deny rule Runs (deny) or
//	                        MayRun (ask), and Unverifiable (ask)
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
type Analysis = analysis

// Analyze reads cmd the way bash would and collects every command it may
// run (see analyze.go).
func Analyze(cmd string) *Analysis { return analyze(cmd) }

// Unverifiable reports that the command may run something no text in it
// shows (a command word built at run time, a script, inline code, ...).
func (x *Analysis) Unverifiable() bool { return x.unverifiable }

// Runs reports that a command the text runs certainly matches the deny
// rule p (matched ASCII case-insensitively): the policy denies.
func (x *Analysis) Runs(p *Pattern) bool { return x.denies(p.deny) }

// MayRun reports that the command may run what the deny rule p names
// without the analyser being able to tell (an expansion, a command it does
// not know given the rule's first word, ...): the policy asks. Ask it only
// of a rule that Runs does not match.
func (x *Analysis) MayRun(p *Pattern) bool { return x.mayMatch(p.deny) }

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
