// Package trust decides which parts of a .chat buffer count as the user's.
//
// The rule it serves: only the user's own configuration and the user's own
// edits in this session can approve a tool call. A .chat file as it was
// loaded — its tool calls, their placeholders and statuses, its frontmatter —
// may come from someone else; a model's answer and a tool's output are
// untrusted too (they are written so that they never parse as structure,
// see buffer.EscapeLine and buffer.Fence). So the host keeps, per buffer:
//
//   - the Origin: what the buffer held when it was loaded from disk (or when
//     flemma first attached to it), computed once per load;
//   - a Ledger of this session: for each call, whether it arrived as a
//     structured call from the provider (and with which content), the last
//     status decided for it in this session and by whom, and whether it ran.
//
// From these it answers two questions (see Ledger.FromProvider and
// Ledger.CheckApproved): may a policy auto-approve this call, and does an
// "approved" status in the buffer count. A call is identified by its id and
// its content (CallHash), so a call planted in a file under an id the
// provider used does not inherit that call's standing.
//
// It is pure: no Neovim, no I/O. The host keeps the Ledger and mirrors it
// into Neovim's memory (lua/flemma/trust.lua), so that a restarted host
// still knows what happened in this editor session.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// CallHash identifies a call's content: its tool name and its input as
// parsed from the buffer (canonical JSON), hashed.
func CallHash(u *buffer.ToolUse) string {
	input := strings.TrimSpace(u.RawInput)
	if u.Input != nil {
		if b, err := json.Marshal(u.Input); err == nil {
			input = string(b)
		}
	}
	sum := sha256.Sum256([]byte(u.Name + "\x00" + input))
	return hex.EncodeToString(sum[:16])
}

// Origin is what a buffer held when it was loaded: text nobody in this
// session wrote.
type Origin struct {
	Calls    map[string]string // tool-use id -> CallHash, every tool use of the loaded text
	Approved map[string]bool   // ids whose placeholder said "approved" in the loaded text
}

// OriginOf reads the Origin of a loaded buffer.
func OriginOf(doc *buffer.Document) Origin {
	o := Origin{Calls: map[string]string{}, Approved: map[string]bool{}}
	for _, u := range doc.ToolUses() {
		if _, dup := o.Calls[u.ID]; !dup {
			o.Calls[u.ID] = CallHash(u)
		}
	}
	for _, r := range doc.ToolResults() {
		if r.Status == buffer.StatusApproved {
			o.Approved[r.ToolUseID] = true
		}
	}
	return o
}

// Record is what this session knows of one call.
type Record struct {
	ID       string
	Received string        // CallHash of the call as it arrived from the provider; "" when it did not
	Status   buffer.Status // the last status decided for the call in this session; "" when none
	By       string        // who decided Status ("user", or the approval outcome)
	Hash     string        // the CallHash the decision was made on
	Gen      int           // the load of the buffer (Ledger.Gen) the decision was made in
	Ran      bool          // the call was started in this session
	Wrote    bool          // its result was written into the buffer in this session
	// Withheld: the host wrote Status (pending) over an "approved" it did
	// not count (planted in the file, or a call interrupted by a crash).
	// Undo can bring that "approved" back; it is not the user's approval.
	Withheld bool
	Undos    int // the buffer's undo count (Ledger.Undos) when Status was decided
}

// Who decided, as Record.By records it for the user's own decisions.
const (
	ByUser     = "user"               // a command, <M-CR>, or the user's edit of the status
	ByUserEdit = "user (status edit)" // an edit of the status the host saw
)

// Ledger is one buffer's Origin and this session's records of its calls.
// It is not safe for concurrent use: the host holds its lock.
type Ledger struct {
	// Gen counts the loads of the buffer: the Origin is the text of load
	// Gen. A decision made in an earlier load says nothing about a status
	// in the text loaded since (it may come from anyone).
	Gen     int
	Origin  Origin
	Records map[string]Record
	// Undos counts the undos (and other steps back in the undo history)
	// Neovim saw in the buffer; LoadUndos is the count when load Gen was
	// read. Text brought back by undo was not typed by the user now, so a
	// status that undo may have restored is not taken as the user's edit.
	Undos, LoadUndos int
}

// NewLedger returns an empty ledger with an empty origin.
func NewLedger() *Ledger {
	return &Ledger{Origin: Origin{Calls: map[string]string{}, Approved: map[string]bool{}}, Records: map[string]Record{}}
}

// Get returns the record of id (the zero Record with ID set when none).
func (l *Ledger) Get(id string) Record {
	if r, ok := l.Records[id]; ok {
		return r
	}
	return Record{ID: id}
}

// Put stores a record.
func (l *Ledger) Put(r Record) { l.Records[r.ID] = r }

// FromProvider reports whether u arrived in this session as a structured
// tool call from the provider, with exactly this content. Only such calls
// may be approved by a policy (unless the user trusts the buffer).
func (l *Ledger) FromProvider(u *buffer.ToolUse) bool {
	r, ok := l.Records[u.ID]
	return ok && r.Received != "" && r.Received == CallHash(u)
}

// Ran reports whether the call was started in this session.
func (l *Ledger) Ran(id string) bool { return l.Records[id].Ran }

// Verdict says whether an "approved" status in the buffer counts.
type Verdict struct {
	OK       bool
	UserEdit bool   // it counts because the user set it (record it as ByUserEdit)
	Why      string // when !OK: why not, in words for the user
}

// CheckApproved decides whether the "approved" status of u's placeholder
// counts. It does when
//
//   - a decision of this session approved exactly this content, and the
//     call has not run since; or
//   - the user changed the status: since the buffer was last loaded, the
//     host decided or saw another status for the call, and now it says
//     approved; or the call was in the loaded text without an approved
//     status and nothing was decided on it since (the user approved one of
//     the file's calls before flemma looked at it).
//
// A status the host withheld (wrote pending over) and that reads approved
// again after an undo in the buffer does not count either: the undo may have
// restored the withheld text. The user sets it again, and that counts.
//
// Anything else does not count: a status that was already "approved" in the
// text as loaded, a call that ran already (its result was lost), a call
// whose content changed since it was approved, and an approved placeholder
// for a call that neither the file nor the provider brought and nobody
// decided on. The caller turns such a placeholder back into pending.
func (l *Ledger) CheckApproved(u *buffer.ToolUse) Verdict {
	h := CallHash(u)
	r, has := l.Records[u.ID]
	decidedNow := has && r.Status != "" && r.Gen == l.Gen // decided in this load
	switch {
	case has && r.Status == buffer.StatusApproved && r.Hash == h:
		if r.Ran {
			return Verdict{Why: "it already ran in this session and its result is missing"}
		}
		return Verdict{OK: true}
	case decidedNow && r.Status != buffer.StatusApproved && r.Withheld && l.Undos != r.Undos:
		return Verdict{Why: "an undo brought back an approval that was not yours; set it to approved again if you mean it"}
	case decidedNow && r.Status != buffer.StatusApproved:
		return Verdict{OK: true, UserEdit: true} // the user flipped a status the host wrote or saw
	case l.Origin.Approved[u.ID]:
		return Verdict{Why: "it was already marked approved in the file as it was loaded, not by you"}
	case decidedNow:
		return Verdict{Why: "the call changed after it was approved"}
	}
	if _, inFile := l.Origin.Calls[u.ID]; inFile {
		if l.Undos != l.LoadUndos {
			// Undo may reach text from before a reload (an earlier origin).
			return Verdict{Why: "an undo may have brought this approval back; set it to approved again if you mean it"}
		}
		return Verdict{OK: true, UserEdit: true} // one of the file's calls, approved by the user
	}
	return Verdict{Why: "nobody approved it in this session"}
}
