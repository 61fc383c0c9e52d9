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
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"iter"
	"slices"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
)

// CallHash identifies a call's content: its tool name and its input as
// parsed from the buffer (canonical JSON), hashed.
func CallHash(u *buffer.ToolUse) string {
	input := strings.TrimSpace(u.RawInput)
	if in := u.Input(); in != nil {
		if b, err := json.Marshal(in); err == nil {
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

// OriginOf reads the Origin of a loaded buffer. Only the calls still open
// in it count (no result, or a placeholder): a call whose result is in the
// text is done, and should its result go later, nothing the file said
// about it is needed to make it ask. So an origin is as large as the open
// calls of the file, not as its history. The calls above a compaction
// summary count too (buffer.Document.Whole): removing the summary brings
// them back, and what the file said about them must still not be the
// user's word.
func OriginOf(doc *buffer.Document) Origin {
	doc = doc.Whole()
	o := Origin{Calls: map[string]string{}, Approved: map[string]bool{}}
	for id, hash := range OpenCalls(doc) {
		o.Calls[id] = hash
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
	// Seq is the buffer's undo state (Neovim's undotree() seq_cur) right
	// after the host wrote Status into the buffer: the text from which the
	// user's own change of that status must descend (see CheckApproved).
	// SeqUnset until the write that carries the decision stamps it.
	Seq int
	// Tick is the buffer's changedtick when the host stored the record
	// (host-side only): a prune judged on older text leaves it alone.
	Tick int
}

// SeqUnset is Record.Seq of a decision not yet written: the editor stamps
// the undo state of the write that carries it.
const SeqUnset = -1

// Who decided, as Record.By records it for the user's own decisions.
const (
	ByUser     = "user"               // a command, <M-CR>, or the user's edit of the status
	ByUserEdit = "user (status edit)" // an edit of the status the host saw
)

// Ledger is one buffer's Origin and this session's records of its calls.
// It is not safe for concurrent use: the host holds its lock. A copy made
// by Clone may be read without it.
type Ledger struct {
	// Gen counts the loads of the buffer: the Origin is the text of load
	// Gen. A decision made in an earlier load says nothing about a status
	// in the text loaded since (it may come from anyone).
	Gen    int
	Origin Origin
	// LoadSeq is the undo state of the text as load Gen read it: text
	// that does not descend from it (an undo to before a reload) is older
	// than the origin.
	LoadSeq int
	// Vouched are the calls the user vouched for in load Gen (:Flemma
	// trust, flemma-host run --trust): id -> CallHash of the call as it
	// was then. The policy decides them as if the provider had sent them.
	Vouched map[string]string
	// Records are the live records: calls that are unresolved, running or
	// waiting in the buffer. Calls whose result is in the buffer, or that
	// left it, are kept compacted in tombs (Prune).
	Records map[string]Record
	tombs   Tombs
	// Always are the user's "always allow" grants in this buffer for this
	// session (see Grants); nil: none. Replaced, never changed in place.
	Always *Grants
}

// NewLedger returns an empty ledger with an empty origin.
func NewLedger() *Ledger {
	return &Ledger{Origin: Origin{Calls: map[string]string{}, Approved: map[string]bool{}},
		Vouched: map[string]string{}, Records: map[string]Record{}}
}

// Clone copies the ledger for a reader without the host's lock. The
// origin, the vouched calls and the tombs are shared: they are replaced,
// never changed in place.
func (l *Ledger) Clone() *Ledger {
	c := *l
	c.Records = make(map[string]Record, len(l.Records))
	for k, v := range l.Records {
		c.Records[k] = v
	}
	return &c
}

// Get returns the record of id: the live one, else what the tombs keep of
// it (Ran, Wrote), else the zero Record with ID set.
func (l *Ledger) Get(id string) Record {
	if r, ok := l.Records[id]; ok {
		return r
	}
	r := Record{ID: id}
	if f, ok := l.tombs.find(id); ok {
		r.Ran, r.Wrote = f&tombRan != 0, f&tombWrote != 0
	}
	return r
}

// Put stores a record (live: a call the buffer is still deciding on).
func (l *Ledger) Put(r Record) { l.Records[r.ID] = r }

// FromProvider reports whether u arrived in this session as a structured
// tool call from the provider, with exactly this content. Only such calls
// may be approved by a policy (unless the user vouched for the call).
func (l *Ledger) FromProvider(u *buffer.ToolUse) bool {
	r, ok := l.Records[u.ID]
	return ok && r.Received != "" && r.Received == CallHash(u)
}

// VouchedFor reports whether the user vouched for u, with exactly this
// content, in this load of the buffer (Ledger.Vouched).
func (l *Ledger) VouchedFor(u *buffer.ToolUse) bool {
	h, ok := l.Vouched[u.ID]
	return ok && h == CallHash(u)
}

// Ran reports whether the call was started in this session.
func (l *Ledger) Ran(id string) bool { return l.Get(id).Ran }

// Verdict says whether an "approved" status in the buffer counts.
type Verdict struct {
	OK       bool
	UserEdit bool   // it counts because the user set it (record it as ByUserEdit)
	Why      string // when !OK: why not, in words for the user
}

// Descends answers whether the buffer's current text descends, in its undo
// tree, from the undo state seq: the text was reached from the state seq
// by changes made after it (not by undoing past it). The engine asks the
// editor (flemma.trust.ancestry) for the seqs CheckApproved needs.
type Descends func(seq int) bool

// CheckApproved decides whether the "approved" status of u's placeholder
// counts. It does when
//
//   - a decision of this session approved exactly this content, and the
//     call has not run since; or
//   - the user changed the status: in this load of the buffer the host
//     wrote another status for the call, the current text descends from
//     the text of that write (undo-tree ancestry, never a count of undos),
//     and now it says approved; or the call was in the loaded text without
//     an approved status, nothing was decided on it since, and the current
//     text descends from the text as loaded (the user approved one of the
//     file's calls before flemma looked at it).
//
// Text that does not descend from the host's write was reached by undoing
// past it: whatever "approved" it holds was not typed after the host asked
// (an undo, then an edit in the same typeahead — `uGo<Esc>`, `:undo | $put`
// — makes a new branch beside the host's write, not below it).
//
// Anything else does not count: a status that was already "approved" in the
// text as loaded, a call that ran already (its result was lost), a call
// whose content changed since it was approved, and an approved placeholder
// for a call that neither the file nor the provider brought and nobody
// decided on. The caller turns such a placeholder back into pending.
func (l *Ledger) CheckApproved(u *buffer.ToolUse, descends Descends) Verdict {
	h := CallHash(u)
	r := l.Get(u.ID)
	_, live := l.Records[u.ID]
	decidedNow := live && r.Status != "" && r.Gen == l.Gen // decided in this load
	const ranAlready = "it already ran in this session and its result is missing"
	switch {
	case live && r.Status == buffer.StatusApproved && r.Hash == h:
		if r.Ran {
			return Verdict{Why: ranAlready}
		}
		return Verdict{OK: true}
	case !live && r.Ran:
		return Verdict{Why: ranAlready} // compacted after its result was in the buffer
	case decidedNow && r.Status != buffer.StatusApproved && !descends(r.Seq):
		if r.Withheld {
			return Verdict{Why: "an undo brought back an approval that was not yours; set it to approved again if you mean it"}
		}
		return Verdict{Why: "an undo went back past flemma's last change of this call, so this approval is not one you gave after it; set it to approved again if you mean it"}
	case decidedNow && r.Status != buffer.StatusApproved:
		return Verdict{OK: true, UserEdit: true} // the user flipped a status the host wrote
	case l.Origin.Approved[u.ID]:
		return Verdict{Why: "it was already marked approved in the file as it was loaded, not by you"}
	case decidedNow:
		return Verdict{Why: "the call changed after it was approved"}
	}
	if _, inFile := l.Origin.Calls[u.ID]; inFile {
		if !descends(l.LoadSeq) {
			// Undo reached text from before this load (an earlier origin).
			return Verdict{Why: "an undo went back to before the file was loaded, so this approval may not be yours; set it to approved again if you mean it"}
		}
		return Verdict{OK: true, UserEdit: true} // one of the file's calls, approved by the user
	}
	return Verdict{Why: "nobody approved it in this session"}
}

// OpenCalls yields the id and CallHash of each call of doc that is still
// open: no result, or a placeholder (a status, not a result), above a
// compaction summary too (Whole). A repeated id is the first use's (the
// parser reports the rest).
func OpenCalls(doc *buffer.Document) iter.Seq2[string, string] {
	doc = doc.Whole()
	return func(yield func(string, string) bool) {
		for _, u := range doc.ToolUses() {
			if doc.Use(u.ID) != u {
				continue
			}
			if r := doc.Result(u.ID); r != nil && r.Status == "" {
				continue
			}
			if !yield(u.ID, CallHash(u)) {
				return
			}
		}
	}
}

// Tombs keep, compactly, what the ledger still needs of the calls it no
// longer holds records of (Prune): whether each ran and whether its result
// was written, so that a result that disappears (an undo, an edit) does not
// make the call run again, and is not recovered from the journal over the
// user's change. One uint64 per call: 62 bits of the sha256 of its id and
// the two flags. A collision can only make a call ask.
//
// They are kept as a few sorted runs, never changed in place (clones of the
// ledger share them): adding makes a new run, and runs of similar size are
// merged, so that an add costs O(log n) amortized, not a copy of them all.
type Tombs struct {
	runs [][]uint64 // each sorted, one entry per key; larger runs first
}

const (
	tombRan   = 1
	tombWrote = 2
	tombFlags = tombRan | tombWrote
)

func tombKey(id string) uint64 {
	sum := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint64(sum[:8]) &^ tombFlags
}

// Len is the number of entries (a call in two runs counts twice until they
// merge).
func (t Tombs) Len() int {
	n := 0
	for _, r := range t.runs {
		n += len(r)
	}
	return n
}

// find returns the flags of id's tomb.
func (t Tombs) find(id string) (uint64, bool) {
	k := tombKey(id)
	var flags uint64
	found := false
	for _, r := range t.runs {
		i, ok := slices.BinarySearchFunc(r, k, func(e, k uint64) int { return cmp.Compare(e&^tombFlags, k) })
		if ok {
			flags |= r[i] & tombFlags
			found = true
		}
	}
	return flags, found
}

// merge merges two sorted runs, the flags of one key joined.
func merge(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	put := func(e uint64) {
		if n := len(out); n > 0 && out[n-1]&^tombFlags == e&^tombFlags {
			out[n-1] |= e & tombFlags
			return
		}
		out = append(out, e)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || i < len(a) && a[i] <= b[j] {
			put(a[i])
			i++
		} else {
			put(b[j])
			j++
		}
	}
	return out
}

// with returns Tombs holding t and adds; t is not changed.
func (t Tombs) with(adds []uint64) Tombs {
	if len(adds) == 0 {
		return t
	}
	run := merge(nil, slices.Sorted(slices.Values(adds)))
	runs := slices.Clone(t.runs)
	for len(runs) > 0 && len(runs[len(runs)-1]) <= 2*len(run) {
		run = merge(runs[len(runs)-1], run)
		runs = runs[:len(runs)-1]
	}
	return Tombs{runs: slices.Clip(append(runs, run))}
}

// entries is every tomb, sorted (for the editor's copy).
func (t Tombs) entries() []uint64 {
	var all []uint64
	for _, r := range t.runs {
		all = merge(all, r)
	}
	return all
}

// EncodeTombs is tombs as the editor's copy keeps them: 16 hex digits each.
func EncodeTombs(tombs []uint64) string {
	b := make([]byte, 0, 16*len(tombs))
	for _, e := range tombs {
		b = binary.BigEndian.AppendUint64(b, e)
	}
	return hex.EncodeToString(b)
}

// DecodeTombs reads EncodeTombs's form (what does not parse is skipped:
// a tomb lost only makes a call ask).
func DecodeTombs(s string) []uint64 {
	var out []uint64
	for i := 0; i+16 <= len(s); i += 16 {
		b, err := hex.DecodeString(s[i : i+16])
		if err != nil {
			continue
		}
		out = append(out, binary.BigEndian.Uint64(b))
	}
	return out
}

// AddTombs merges tombs (from the editor's copy) into the ledger.
func (l *Ledger) AddTombs(tombs []uint64) { l.tombs = l.tombs.with(tombs) }

// TombCount is the number of calls the ledger keeps compacted.
func (l *Ledger) TombCount() int { return len(l.tombs.entries()) }

// Prune compacts the records of the calls the buffer is done with: a call
// whose result is in doc (not a placeholder), or that doc does not hold,
// and that is not running (running may be nil). Only records stored at or
// before tick, the changedtick of doc, are judged: a record stored since
// may be about text doc does not show. A compacted call keeps only its
// tomb (when it ran or its result was written); its other facts — that it
// came from the provider, who decided it — are dropped: should it open
// again, it asks. Prune returns the ids it compacted and the tombs it
// added, for the editor's copy.
func (l *Ledger) Prune(doc *buffer.Document, tick int, running func(id string) bool) (ids []string, added []uint64) {
	for id, r := range l.Records {
		if r.Tick > tick || running != nil && running(id) {
			continue
		}
		if doc.Use(id) != nil {
			if res := doc.Result(id); res == nil || res.Status != "" {
				continue // open: still being decided
			}
		}
		ids = append(ids, id)
		var f uint64
		if r.Ran {
			f |= tombRan
		}
		if r.Wrote {
			f |= tombWrote
		}
		if f != 0 {
			added = append(added, tombKey(id)|f)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	for _, id := range ids {
		delete(l.Records, id)
	}
	if len(ids) > 64 && len(ids) > len(l.Records) {
		// A Go map keeps the room it once needed: start a small one.
		m := make(map[string]Record, len(l.Records))
		for k, v := range l.Records {
			m[k] = v
		}
		l.Records = m
	}
	l.tombs = l.tombs.with(added)
	return ids, added
}

// Adopt takes over what old, an earlier view of the same buffer, compacted:
// its tombs, and the removal of the records it compacted that l still
// holds live (a copy that missed the prune).
func (l *Ledger) Adopt(old *Ledger) {
	l.tombs = l.tombs.with(old.tombs.entries())
	for id := range l.Records {
		if _, live := old.Records[id]; live {
			continue
		}
		if _, compacted := old.tombs.find(id); compacted {
			delete(l.Records, id)
		}
	}
}
