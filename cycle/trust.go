package cycle

import (
	"fmt"
	"slices"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// bufTrust is the host's view of what in a buffer counts as the user's (see
// package trust). The ledger is mirrored in Neovim by lua/flemma/trust.lua,
// which also owns the origin (the text as loaded), the trusted flag and
// the calls the user vouched for.
type bufTrust struct {
	gen     int  // the load of the buffer the origin belongs to (flemma.trust's gen)
	vouch   int  // the last :Flemma trust/untrust of the buffer the host has seen
	trusted bool // the user trusts the buffer's frontmatter (empty when attached, :Flemma trust, or saved trusted)
	ledger  *trust.Ledger
}

// WireRecord is a trust.Record as flemma.trust keeps it.
type WireRecord struct {
	ID       string `msgpack:"id"`
	Received string `msgpack:"received"`
	Status   string `msgpack:"status"`
	By       string `msgpack:"by"`
	Hash     string `msgpack:"hash"`
	Gen      int    `msgpack:"gen"`
	Ran      bool   `msgpack:"ran"`
	Wrote    bool   `msgpack:"wrote"`
	Withheld bool   `msgpack:"withheld"`
	// Seq is the undo state of the write that carried the decision;
	// trust.SeqUnset asks the editor to stamp it (flemma.trust.record).
	Seq int `msgpack:"seq"`
}

func toWire(r trust.Record) WireRecord {
	return WireRecord{ID: r.ID, Received: r.Received, Status: string(r.Status), By: r.By, Hash: r.Hash, Gen: r.Gen, Ran: r.Ran, Wrote: r.Wrote, Withheld: r.Withheld, Seq: r.Seq}
}

func fromWire(w WireRecord) trust.Record {
	return trust.Record{ID: w.ID, Received: w.Received, Status: buffer.Status(w.Status), By: w.By, Hash: w.Hash, Gen: w.Gen, Ran: w.Ran, Wrote: w.Wrote, Withheld: w.Withheld, Seq: w.Seq}
}

type DigestCall struct {
	ID   string `msgpack:"id"`
	Hash string `msgpack:"hash"`
}

// Digest is a trust.Origin as flemma.trust keeps it (instead of the
// loaded lines, once the host has read them).
type Digest struct {
	Calls    []DigestCall `msgpack:"calls"`
	Approved []string     `msgpack:"approved"`
}

type TrustPull struct {
	Gen     int          `msgpack:"gen"`
	LoadSeq int          `msgpack:"load_seq"` // the undo state of the text as loaded
	Trusted bool         `msgpack:"trusted"`
	Origin  []string     `msgpack:"origin"` // the loaded lines, until digested
	Digest  *Digest      `msgpack:"digest"`
	Records []WireRecord `msgpack:"records"`
	// Vouch counts the user's :Flemma trust/untrust in this load; the
	// calls the user vouched for come as the lines of the buffer at the
	// last :Flemma trust (VouchLines) until the host digests them
	// (Vouched).
	Vouch      int          `msgpack:"vouch"`
	VouchLines []string     `msgpack:"vouch_lines"`
	Vouched    []DigestCall `msgpack:"vouched"`
	// Tombs are the compacted records (trust.EncodeTombs).
	Tombs string `msgpack:"tombs"`
	// Always are the user's grants in this buffer (always.go).
	Always *WireGrants `msgpack:"always"`
}

// Ancestry is the editor's answer to which undo states the buffer's text
// descends from (flemma.trust.ancestry).
type Ancestry struct {
	Stale bool  `msgpack:"stale"` // the buffer changed since the snapshot: no answer
	In    []int `msgpack:"in"`    // the asked seqs the current text descends from
}

// digestOf is the digest of calls as flemma.trust keeps it.
func digestOf(calls map[string]string) []DigestCall {
	out := make([]DigestCall, 0, len(calls))
	for id, hash := range calls {
		out = append(out, DigestCall{ID: id, Hash: hash})
	}
	slices.SortFunc(out, func(a, b DigestCall) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// syncTrust brings the host's view of a buffer's trust up to date with the
// snapshot: the trusted flag always; the origin, the vouched calls and the
// records whenever the buffer was (re)loaded, the user vouched anew, or
// the host has not seen it yet.
func (sess *session) syncTrust(s *Snapshot) error {
	h, bufnr := sess.h, sess.bufnr
	sess.mu.Lock()
	bt := sess.trust
	if bt != nil && bt.gen == s.TrustGen && bt.vouch == s.TrustVouch {
		bt.trusted = s.Trusted
		sess.mu.Unlock()
		return nil
	}
	sess.mu.Unlock()
	p, err := h.ed.TrustPull(bufnr)
	if err != nil {
		return fmt.Errorf("read the trust state of buffer %d: %w", bufnr, err)
	}
	l := trust.NewLedger()
	l.Gen, l.LoadSeq = p.Gen, p.LoadSeq
	if p.Digest != nil {
		for _, c := range p.Digest.Calls {
			l.Origin.Calls[c.ID] = c.Hash
		}
		for _, id := range p.Digest.Approved {
			l.Origin.Approved[id] = true
		}
	} else {
		l.Origin = trust.OriginOf(buffer.Parse(p.Origin))
		d := Digest{Calls: digestOf(l.Origin.Calls), Approved: []string{}}
		for id := range l.Origin.Approved {
			d.Approved = append(d.Approved, id)
		}
		slices.Sort(d.Approved)
		if err := h.ed.TrustSetDigest(bufnr, p.Gen, d); err != nil {
			h.logf("trust: keep the origin digest of buffer %d: %v", bufnr, err)
		}
	}
	if p.Vouched != nil {
		for _, c := range p.Vouched {
			l.Vouched[c.ID] = c.Hash
		}
	} else if p.VouchLines != nil {
		for id, hash := range trust.OpenCalls(buffer.Parse(p.VouchLines)) {
			l.Vouched[id] = hash
		}
		if err := h.ed.TrustSetVouched(bufnr, p.Gen, p.Vouch, digestOf(l.Vouched)); err != nil {
			h.logf("trust: keep the vouched calls of buffer %d: %v", bufnr, err)
		}
	}
	for _, w := range p.Records {
		l.Put(fromWire(w))
	}
	l.AddTombs(trust.DecodeTombs(p.Tombs))
	l.Always = grantsFromWire(p.Always) // always.go
	sess.mu.Lock()
	if old := sess.trust; old != nil && old.gen == p.Gen && old.vouch != p.Vouch {
		// :Flemma trust or untrust since the host last looked: the audit
		// log has it (recorded before any call of the buffer is decided).
		defer h.recordTrust(journalKey(bufnr, s.Name), p.Trusted, len(l.Vouched))
	}
	if old := sess.trust; old != nil {
		for _, r := range old.ledger.Records {
			l.Put(r) // the host's records are at least as new as the mirror's
		}
		l.Adopt(old.ledger) // and so are its prunes
		if old.ledger.Always != nil {
			l.Always = old.ledger.Always
		}
	}
	sess.trust = &bufTrust{gen: p.Gen, vouch: p.Vouch, trusted: p.Trusted, ledger: l}
	sess.mu.Unlock()
	if p.Gen > 1 || len(l.Origin.Approved) > 0 || len(l.Vouched) > 0 {
		h.logf("trust: buffer %d load %d: %d open call(s) and %d approved placeholder(s) in the loaded text, %d call(s) vouched for, trusted=%v",
			bufnr, p.Gen, len(l.Origin.Calls), len(l.Origin.Approved), len(l.Vouched), p.Trusted)
	}
	return nil
}

// trustOf returns the buffer's trust view (an empty, untrusted one when
// the host has not synced it). Call with st.mu held.
func (st *session) trustOf() *bufTrust {
	if st.trust == nil {
		st.trust = &bufTrust{gen: -1, ledger: trust.NewLedger()}
	}
	return st.trust
}

// commit stores records in the host's ledger (after the write that carried
// them to Neovim was applied, at changedtick tick and undo state seq).
func (sess *session) commit(recs []WireRecord, tick, seq int) {
	if len(recs) == 0 {
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	l := sess.trustOf().ledger
	for _, w := range recs {
		r := fromWire(w)
		if r.Seq == trust.SeqUnset {
			r.Seq = seq
		}
		r.Tick = tick
		l.Put(r)
	}
}

// record stores records in the ledger and in Neovim's copy at once, for a
// fact that comes without an edit (a call is about to start).
func (sess *session) record(recs ...trust.Record) error {
	h, bufnr := sess.h, sess.bufnr
	wire := make([]WireRecord, len(recs))
	for i, r := range recs {
		wire[i] = toWire(r)
	}
	tick := 0
	if st := h.lookup(bufnr); st != nil {
		st.mu.Lock()
		if st.mirror != nil {
			tick = st.mirror.tick
		}
		st.mu.Unlock()
	}
	sess.commit(wire, tick, 0)
	if err := h.ed.TrustRecord(bufnr, wire); err != nil {
		return fmt.Errorf("keep the record of %s: %w", recs[0].ID, err)
	}
	return nil
}

// prune compacts the ledger's records of the calls doc (the text at
// changedtick tick) is done with, here and in Neovim's copy (see
// trust.Ledger.Prune): a conversation's trust state is as large as its open
// calls, plus 8 bytes per call it ever ran.
func (sess *session) prune(tick int, doc *buffer.Document) {
	h, bufnr := sess.h, sess.bufnr
	sess.mu.Lock()
	ids, tombs := sess.trustOf().ledger.Prune(doc, tick, func(id string) bool { return sess.running[id] != nil })
	sess.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := h.ed.TrustPrune(bufnr, ids, trust.EncodeTombs(tombs)); err != nil {
		h.logf("trust: prune the records of buffer %d: %v", bufnr, err)
	}
}

// descends returns the undo-tree ancestry answer for the seqs the approved
// placeholders of doc need (trust.Ledger.CheckApproved), asked of the
// editor in one call. When the buffer changed since the snapshot (tick) it
// answers no for every seq: the plan's write is refused as stale then, and
// the next plan asks again.
func (h *Engine) descends(bufnr, tick int, doc *buffer.Document, l *trust.Ledger) trust.Descends {
	need := map[int]bool{}
	collect := func(seq int) bool { need[seq] = true; return true }
	for _, tu := range doc.ToolUses() {
		if r := doc.Result(tu.ID); r != nil && r.Status == buffer.StatusApproved {
			l.CheckApproved(tu, collect)
		}
	}
	if len(need) == 0 {
		return func(int) bool { return false }
	}
	seqs := make([]int, 0, len(need))
	for s := range need {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	a, err := h.ed.TrustAncestry(bufnr, tick, seqs)
	if err != nil {
		h.logf("trust: undo ancestry of buffer %d: %v", bufnr, err)
		return func(int) bool { return false }
	}
	if a.Stale {
		return func(int) bool { return false }
	}
	in := map[int]bool{}
	for _, s := range a.In {
		in[s] = true
	}
	return func(seq int) bool { return in[seq] }
}

// decided is the record of a decision on u made now by who; the write that
// carries it stamps its undo state.
func decided(l *trust.Ledger, u *buffer.ToolUse, st buffer.Status, who string) WireRecord {
	r := l.Get(u.ID)
	r.Status, r.By, r.Hash, r.Gen, r.Seq, r.Withheld = st, who, trust.CallHash(u), l.Gen, trust.SeqUnset, false
	if who == trust.ByUser || who == trust.ByUserEdit {
		r.Ran = false // the user asks for it (again)
	}
	return toWire(r)
}

// withheld is the record of the host writing pending over an "approved"
// status it did not count (see trust.Record.Withheld).
func withheld(l *trust.Ledger, u *buffer.ToolUse, why string) WireRecord {
	w := decided(l, u, buffer.StatusPending, why)
	w.Withheld = true
	return w
}
