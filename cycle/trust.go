package cycle

import (
	"fmt"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/trust"
)

// bufTrust is the host's view of what in a buffer counts as the user's (see
// package trust). The ledger is mirrored in Neovim by lua/flemma/trust.lua,
// which also owns the origin (the text as loaded) and the trusted flag.
type bufTrust struct {
	gen     int  // the load of the buffer the origin belongs to (flemma.trust's gen)
	trusted bool // the user trusts the buffer (empty when attached, :Flemma trust, or saved trusted)
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
	Undos    int    `msgpack:"undos"`
}

func toWire(r trust.Record) WireRecord {
	return WireRecord{ID: r.ID, Received: r.Received, Status: string(r.Status), By: r.By, Hash: r.Hash, Gen: r.Gen, Ran: r.Ran, Wrote: r.Wrote, Withheld: r.Withheld, Undos: r.Undos}
}

func fromWire(w WireRecord) trust.Record {
	return trust.Record{ID: w.ID, Received: w.Received, Status: buffer.Status(w.Status), By: w.By, Hash: w.Hash, Gen: w.Gen, Ran: w.Ran, Wrote: w.Wrote, Withheld: w.Withheld, Undos: w.Undos}
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
	Gen       int          `msgpack:"gen"`
	LoadUndos int          `msgpack:"load_undos"`
	Trusted   bool         `msgpack:"trusted"`
	Origin    []string     `msgpack:"origin"` // the loaded lines, until digested
	Digest    *Digest      `msgpack:"digest"`
	Records   []WireRecord `msgpack:"records"`
}

// syncTrust brings the host's view of a buffer's trust up to date with the
// snapshot: the trusted flag always, the origin and the records whenever
// the buffer was (re)loaded or the host has not seen it yet.
func (h *Engine) syncTrust(bufnr int, s *Snapshot) error {
	h.mu.Lock()
	bt := h.state(bufnr).trust
	if bt != nil && bt.gen == s.TrustGen {
		bt.trusted = s.Trusted
		bt.ledger.Undos = s.Undos
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	p, err := h.ed.TrustPull(bufnr)
	if err != nil {
		return fmt.Errorf("read the trust state of buffer %d: %w", bufnr, err)
	}
	l := trust.NewLedger()
	l.Gen, l.Undos, l.LoadUndos = p.Gen, s.Undos, p.LoadUndos
	if p.Digest != nil {
		for _, c := range p.Digest.Calls {
			l.Origin.Calls[c.ID] = c.Hash
		}
		for _, id := range p.Digest.Approved {
			l.Origin.Approved[id] = true
		}
	} else {
		l.Origin = trust.OriginOf(buffer.Parse(p.Origin))
		d := Digest{Calls: []DigestCall{}, Approved: []string{}}
		for id, hash := range l.Origin.Calls {
			d.Calls = append(d.Calls, DigestCall{ID: id, Hash: hash})
		}
		for id := range l.Origin.Approved {
			d.Approved = append(d.Approved, id)
		}
		if err := h.ed.TrustSetDigest(bufnr, p.Gen, d); err != nil {
			h.logf("trust: keep the origin digest of buffer %d: %v", bufnr, err)
		}
	}
	for _, w := range p.Records {
		l.Put(fromWire(w))
	}
	h.mu.Lock()
	st := h.state(bufnr)
	if old := st.trust; old != nil {
		for _, r := range old.ledger.Records {
			l.Put(r) // the host's records are at least as new as the mirror's
		}
	}
	st.trust = &bufTrust{gen: p.Gen, trusted: p.Trusted, ledger: l}
	h.mu.Unlock()
	if p.Gen > 1 || len(l.Origin.Approved) > 0 {
		h.logf("trust: buffer %d load %d: %d call(s) and %d approved placeholder(s) in the loaded text, trusted=%v",
			bufnr, p.Gen, len(l.Origin.Calls), len(l.Origin.Approved), p.Trusted)
	}
	return nil
}

// trustOf returns the buffer's trust view (an empty, untrusted one when
// the host has not synced it). Call with h.mu held.
func (h *Engine) trustOf(bufnr int) *bufTrust {
	st := h.state(bufnr)
	if st.trust == nil {
		st.trust = &bufTrust{gen: -1, ledger: trust.NewLedger()}
	}
	return st.trust
}

// commit stores records in the host's ledger (after the step that carried
// them to Neovim was applied).
func (h *Engine) commit(bufnr int, recs []WireRecord) {
	if len(recs) == 0 {
		return
	}
	h.mu.Lock()
	l := h.trustOf(bufnr).ledger
	for _, w := range recs {
		l.Put(fromWire(w))
	}
	h.mu.Unlock()
}

// record stores records in the ledger and in Neovim's copy at once, for a
// fact that comes without an edit (a call is about to start).
func (h *Engine) record(bufnr int, recs ...trust.Record) error {
	wire := make([]WireRecord, len(recs))
	for i, r := range recs {
		wire[i] = toWire(r)
	}
	h.commit(bufnr, wire)
	if err := h.ed.TrustRecord(bufnr, wire); err != nil {
		return fmt.Errorf("keep the record of %s: %w", recs[0].ID, err)
	}
	return nil
}

// decided is the record of a decision on u made now by who.
func decided(l *trust.Ledger, u *buffer.ToolUse, st buffer.Status, who string) WireRecord {
	r := l.Get(u.ID)
	r.Status, r.By, r.Hash, r.Gen, r.Undos, r.Withheld = st, who, trust.CallHash(u), l.Gen, l.Undos, false
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
