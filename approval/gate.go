package approval

import "fmt"

// The gates a policy's approval passes after the chain (issue 11, SPEC
// §5a). The chain decides what the user's policy says of a call; the gates
// know what the policy cannot see — where the call came from, whether it
// ran already, what it writes — and turn an approval into a question when
// only the user may decide. They never approve, and never touch a denial
// or a question.
const (
	// OriginResolver keeps calls found in a file (not received from the
	// provider in this session) from being auto-approved, and calls that
	// already ran from running again silently.
	OriginResolver = "urn:flemma:approval:origin"
	// JournalResolver keeps interrupted calls (the journal knows they
	// started and never finished) from running again by themselves.
	JournalResolver = "urn:flemma:approval:journal"
	// ProtectedResolver keeps policies from approving writes to protected
	// paths (.git/config and hooks, shell start-up files, .envrc, editor
	// configurations that run code, the buffer's own file, flemma's state).
	ProtectedResolver = "urn:flemma:approval:protected"
	// ReadRootsResolver keeps policies from approving reads outside the
	// readable roots (the project: the writable roots, sandbox.readable):
	// such a read asks, naming the path (issue 28 item 6).
	ReadRootsResolver = "urn:flemma:approval:read-roots"
)

// Facts are what the host knows of one call beyond its name and input.
type Facts struct {
	// Interrupted is set when the journal says the call started and never
	// finished, or is running in another flemma: the reason, for the user.
	Interrupted string
	// Ran: the call already ran in this session and its result is missing
	// (the buffer was reloaded, or the host crashed).
	Ran bool
	// FromProvider: the call arrived from the provider in this session as a
	// structured tool call with exactly this content.
	FromProvider bool
	// FileCallsAllowed: the user trusts the buffer (:Flemma trust, a new
	// buffer, a file saved from a trusted one) or set
	// tools.auto_approve_file_calls.
	FileCallsAllowed bool
	// Writes is the path the call writes, for a tool with side effects that
	// takes one ("" for none, and for bash: the sandbox confines it).
	Writes string
	// Protected, given a path, says whether it is protected and by which
	// rule (nil: nothing is).
	Protected func(path string) (rule string, protected bool)
	// Reads is the path a call of a tool that reads where its input says
	// (the reads_path capability: read, grep, find, ls) reads, resolved
	// ("" for other tools).
	Reads string
	// Outside, given a path, says whether it lies outside the readable
	// roots, and which roots those are (nil: nothing is outside).
	Outside func(path string) (roots string, outside bool)
}

// Gate applies the gates to the chain's outcome for one call.
func Gate(out Outcome, f Facts) Outcome {
	if out.Decision != Approve {
		return out
	}
	ask := func(resolver, rule string) Outcome {
		return Outcome{Decision: RequireApproval, Resolver: resolver, Rule: rule}
	}
	switch {
	case f.Interrupted != "":
		return ask(JournalResolver, f.Interrupted)
	case f.Ran:
		return ask(OriginResolver, "it already ran in this session and its result is missing: approve it again to re-run it")
	case !f.FromProvider && !f.FileCallsAllowed:
		return ask(OriginResolver, "call found in the file, not received from the provider: approve it yourself (or :Flemma trust the file)")
	}
	if f.Writes != "" && f.Protected != nil {
		if rule, ok := f.Protected(f.Writes); ok {
			return ask(ProtectedResolver, fmt.Sprintf("writes %s, a protected path (%s): approve it yourself", f.Writes, rule))
		}
	}
	if f.Reads != "" && f.Outside != nil {
		if roots, ok := f.Outside(f.Reads); ok {
			return ask(ReadRootsResolver, fmt.Sprintf("reads %s, outside the project (%s; sandbox.readable adds roots): approve it yourself", f.Reads, roots))
		}
	}
	return out
}
