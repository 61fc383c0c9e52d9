package buffer

import "sort"

// index maps tool ids to their blocks. Parse builds it once; methods of a
// hand-made Document build a temporary one.
type index struct {
	uses    []*ToolUse
	results []*ToolResult
	ids     map[string]idBlocks // the first use and the first result of each id
}

// idBlocks are the first use and the first result of an id (either nil).
type idBlocks struct {
	use    *ToolUse
	result *ToolResult
}

func (ix *index) use(id string) *ToolUse       { return ix.ids[id].use }
func (ix *index) result(id string) *ToolResult { return ix.ids[id].result }

func buildIndex(d *Document) *index {
	var uses []*ToolUse
	var results []*ToolResult
	cut := 0
	if d.Summary != nil {
		cut = d.Summary.StartLine
	}
	for _, m := range d.Messages {
		for _, s := range m.Segments {
			switch s := s.(type) {
			case *ToolUse:
				if s.HeaderLine > cut {
					uses = append(uses, s)
				}
			case *ToolResult:
				if s.HeaderLine > cut {
					results = append(results, s)
				}
			}
		}
	}
	return newIndex(uses, results)
}

// newIndex indexes the uses and results of a document, in document order.
func newIndex(uses []*ToolUse, results []*ToolResult) *index {
	return indexPairing(uses, results, nil)
}

// indexPairing is newIndex that also reports, to p (unless nil), what the
// index finds as it goes (see parser.pair): a duplicate tool use id, a
// result for an unknown call, a duplicate result.
func indexPairing(uses []*ToolUse, results []*ToolResult, p *parser) *index {
	// One map for both: a call and its result share an id, so most ids
	// have both, and one map is about two thirds of two maps' memory.
	ix := &index{uses: uses, results: results, ids: make(map[string]idBlocks, max(len(uses), len(results)))}
	for _, u := range uses {
		b := ix.ids[u.ID]
		if b.use != nil {
			p.duplicateUse(u, b.use)
			continue
		}
		b.use = u
		ix.ids[u.ID] = b
	}
	for _, r := range results {
		b := ix.ids[r.ToolUseID]
		if b.use == nil {
			p.unknownUse(r)
		}
		if b.result != nil {
			p.duplicateResult(r, b.result)
			continue
		}
		b.result = r
		ix.ids[r.ToolUseID] = b
	}
	return ix
}

func (d *Document) index() *index {
	if d.ix != nil {
		return d.ix
	}
	return buildIndex(d)
}

// Whole returns a view of d that ignores its compaction summary: every
// tool block of the buffer counts, those above the summary too. It is for
// what the file says about its calls whatever the summary hides (the
// origin of a loaded buffer, trust.OriginOf), never for deciding the work
// of the cycle. The view shares d's nodes; d itself when it has no
// summary.
func (d *Document) Whole() *Document {
	if d.Summary == nil {
		return d
	}
	w := *d
	w.Summary, w.ix, w.all = nil, d.all, nil
	return &w
}

// Compacted reports whether the 1-based line lies above the compaction
// summary in force: it is not sent, and the blocks there are not part of
// the conversation.
func (d *Document) Compacted(line int) bool {
	return d.Summary != nil && line < d.Summary.StartLine
}

// ToolUses returns every tool use in document order (after the summary in
// force, as every query below: see Summary).
func (d *Document) ToolUses() []*ToolUse {
	return append([]*ToolUse(nil), d.index().uses...)
}

// ToolResults returns every tool result in document order.
func (d *Document) ToolResults() []*ToolResult {
	return append([]*ToolResult(nil), d.index().results...)
}

// Use returns the first tool use with the given id, or nil.
func (d *Document) Use(id string) *ToolUse { return d.index().use(id) }

// Result returns the first tool result for id anywhere in the document (its
// position does not matter, as in the Lua Flemma), or nil.
func (d *Document) Result(id string) *ToolResult { return d.index().result(id) }

// Unresolved returns, in document order, the tool uses that have no result
// block at all: the ones Phase 1 of the cycle must give a placeholder. A
// duplicated id (reported by Parse) is listed once, with its first use.
func (d *Document) Unresolved() []*ToolUse {
	ix := d.index()
	var out []*ToolUse
	for _, u := range ix.uses {
		if b := ix.ids[u.ID]; b.result == nil && b.use == u {
			out = append(out, u)
		}
	}
	return out
}

// Incomplete returns, in document order, the tool uses without a completed
// result: no result block, or a placeholder. Sending must wait until it is
// empty. A duplicated id is listed once, with its first use.
func (d *Document) Incomplete() []*ToolUse {
	ix := d.index()
	var out []*ToolUse
	for _, u := range ix.uses {
		if b := ix.ids[u.ID]; (b.result == nil || b.result.Status != "") && b.use == u {
			out = append(out, u)
		}
	}
	return out
}

// MessageAt returns the message whose lines cover the 1-based line, or nil
// (frontmatter, preamble, out of range).
func (d *Document) MessageAt(line int) *Message {
	i := sort.Search(len(d.Messages), func(i int) bool { return d.Messages[i].StartLine > line }) - 1
	if i < 0 || line > d.Messages[i].EndLine {
		return nil
	}
	return d.Messages[i]
}

// BlockAt returns the tool block covering the 1-based line together with its
// counterpart: on a tool use, the use and its first result (nil if none); on
// a tool result, the first use of its id (nil for an orphan) and that result.
// Both are nil when the line is not inside a tool block.
//
// A block above the compaction summary is not part of the conversation:
// nil, nil there.
func (d *Document) BlockAt(line int) (*ToolUse, *ToolResult) {
	m := d.MessageAt(line)
	if m == nil || d.Compacted(line) {
		return nil, nil
	}
	for _, s := range m.Segments {
		start, end := s.Lines()
		if line < start || line > end {
			continue
		}
		switch s := s.(type) {
		case *ToolUse:
			return s, d.Result(s.ID)
		case *ToolResult:
			return d.Use(s.ToolUseID), s
		}
		return nil, nil
	}
	return nil, nil
}

// ToolUses returns the tool uses of the message in order.
func (m *Message) ToolUses() []*ToolUse {
	var out []*ToolUse
	for _, s := range m.Segments {
		if u, ok := s.(*ToolUse); ok {
			out = append(out, u)
		}
	}
	return out
}

// ToolResults returns the tool results of the message in order.
func (m *Message) ToolResults() []*ToolResult {
	var out []*ToolResult
	for _, s := range m.Segments {
		if r, ok := s.(*ToolResult); ok {
			out = append(out, r)
		}
	}
	return out
}

// AbortMarker returns the abort marker that ends the message (its last
// segment), or nil. Tool uses of an aborted assistant message get the
// placeholder status aborted.
func (m *Message) AbortMarker() *Aborted {
	if len(m.Segments) == 0 {
		return nil
	}
	a, _ := m.Segments[len(m.Segments)-1].(*Aborted)
	return a
}
