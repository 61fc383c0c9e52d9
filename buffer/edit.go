package buffer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Edit replaces the lines [Start, End) of the original buffer with Lines.
// Positions are 0-based and end-exclusive, as in nvim_buf_set_lines;
// Start == End inserts before line Start.
type Edit struct {
	Start, End int
	Lines      []string
}

// Apply returns a copy of lines with the edits applied. All edits refer to
// the original lines and must not overlap; two insertions at the same
// position are ambiguous and count as overlapping. Neovim gets the same
// edits applied bottom-up (highest Start first), which needs no position
// adjustment.
func Apply(lines []string, edits []Edit) ([]string, error) {
	sorted := slices.Clone(edits)
	slices.SortStableFunc(sorted, func(a, b Edit) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
	size := len(lines)
	for i, e := range sorted {
		if e.Start < 0 || e.End < e.Start || e.End > len(lines) {
			return nil, fmt.Errorf("edit [%d, %d) out of range for %d lines", e.Start, e.End, len(lines))
		}
		if i > 0 {
			prev := sorted[i-1]
			if prev.End > e.Start || prev.Start == prev.End && e.Start == e.End && prev.Start == e.Start {
				return nil, fmt.Errorf("edits [%d, %d) and [%d, %d) overlap", prev.Start, prev.End, e.Start, e.End)
			}
		}
		size += len(e.Lines) - (e.End - e.Start)
	}
	out := make([]string, 0, size)
	at := 0
	for _, e := range sorted {
		out = append(out, lines[at:e.Start]...)
		out = append(out, e.Lines...)
		at = e.End
	}
	return append(out, lines[at:]...), nil
}

// FirstChange returns the first line (0-based) that edits change: the
// lines before it are the same after Apply (for ParseFrom).
func FirstChange(edits []Edit) int {
	first := -1
	for _, e := range edits {
		if first < 0 || e.Start < first {
			first = e.Start
		}
	}
	return max(first, 0)
}

// Placement asks PlacePlaceholders for a placeholder with Status for the
// tool use ID.
type Placement struct {
	ID     string
	Status Status
	// Error, when set, places a completed error result with this text
	// instead of a placeholder (a call that cannot run: an unknown tool),
	// and Status is ignored.
	Error string
	// Body, when set, is text inside the placeholder (a rejection's
	// reason: RenderPlaceholderBody).
	Body string
}

// PlacePlaceholders returns the edits that insert a placeholder
// (RenderPlaceholder) for each listed tool use that has no result yet; ids
// that already have a result are skipped, as in the Lua Flemma.
//
// A placeholder goes into the @You: message right after the tool use's
// assistant message, which is created (after the assistant message's last
// non-blank line) when it does not exist. Results keep the order of their
// tool uses: a new one goes after the existing result of the nearest
// earlier tool use of the same assistant message, else before the first
// existing result, else right below the @You: marker — above any text the
// user already typed there. Placeholders that land on the same spot form one
// edit. Each block is preceded by a blank line (followed by one before an
// existing result), and a blank line is added when the next original line
// is not blank.
//
// It fails when lines do not match d, an id has no tool use or cannot be
// written in a header, or a status is not valid ("" writes a plain fence).
func PlacePlaceholders(d *Document, lines []string, ps []Placement) ([]Edit, error) {
	p, err := Place(d, lines, ps)
	return p.Edits, err
}

// Placed is what Place returns: the edits, and the text and Document they
// make (the edits applied to lines, parsed: the check's own parse).
type Placed struct {
	Edits []Edit
	Lines []string  // nil when there are no edits
	Doc   *Document // nil when there are no edits
}

// Place is PlacePlaceholders that also returns the text after the edits
// and its Document, so that a caller writing them parses nothing again.
func Place(d *Document, lines []string, ps []Placement) (Placed, error) {
	if err := check(d, lines); err != nil {
		return Placed{}, err
	}
	ix := d.index()
	p := &placer{d: d, lines: lines, ix: ix, homes: toolHomes(d, len(ix.uses)),
		groups: map[int]*placeGroup{}, placed: map[string]Status{}}
	seen := map[string]bool{}
	for _, pl := range ps {
		if seen[pl.ID] {
			continue
		}
		seen[pl.ID] = true
		if err := p.add(pl); err != nil {
			return Placed{}, err
		}
	}
	edits := make([]Edit, 0, len(p.groups))
	for _, g := range p.groups {
		edits = append(edits, g.edit(lines))
	}
	slices.SortFunc(edits, func(a, b Edit) int { return a.Start - b.Start })
	out, after, err := verifyPlaced(d, lines, edits, p.placed)
	if err != nil {
		return Placed{}, err
	}
	return Placed{Edits: edits, Lines: out, Doc: after}, nil
}

// home is where a tool use lives: its assistant message and its index
// among that message's tool uses.
type home struct {
	msg int // index into Document.Messages
	pos int // index among the message's tool uses
}

// toolHomes returns the home of each tool use of d (of about n uses).
func toolHomes(d *Document, n int) map[*ToolUse]home {
	homes := make(map[*ToolUse]home, n)
	for mi, m := range d.Messages {
		k := 0
		for _, s := range m.Segments {
			if u, ok := s.(*ToolUse); ok {
				homes[u] = home{mi, k}
				k++
			}
		}
	}
	return homes
}

// placer plans the edits of Place: the blocks to insert, grouped by the
// line they go before.
type placer struct {
	d      *Document
	lines  []string
	ix     *index
	homes  map[*ToolUse]home
	groups map[int]*placeGroup // by insertion index
	placed map[string]Status   // what verifyPlaced must read back
}

// placeItem is one block to insert: a placeholder, or an error result.
type placeItem struct {
	pos    int // the tool use's index in its message (the blocks' order)
	id     string
	status Status
	err    string
	body   string
}

// How a group's blocks are separated by blank lines.
const (
	blankBefore = iota // "", H, "", opener, closer
	blankAfter         // H, "", opener, closer, ""
)

// placeGroup is the blocks inserted at one place.
type placeGroup struct {
	at     int // 0-based insertion index
	mode   int // blankBefore or blankAfter
	newYou bool
	items  []placeItem
}

// add plans the block of one placement (its id seen for the first time).
func (p *placer) add(pl Placement) error {
	u, err := placeable(p.ix, pl)
	if err != nil || u == nil {
		return err
	}
	h := p.homes[u]
	g, err := p.spot(h, pl.ID)
	if err != nil {
		return err
	}
	gp := p.groups[g.at]
	if gp == nil {
		gp = &g
		p.groups[g.at] = gp
	}
	gp.items = append(gp.items, placeItem{h.pos, pl.ID, pl.Status, pl.Error, pl.Body})
	p.placed[pl.ID] = pl.Status
	if pl.Error != "" {
		p.placed[pl.ID] = errorPlaced
	}
	return nil
}

// placeable returns the tool use a placement is for, or nil when the call
// already has a result (nothing to place). It fails when there is no such
// call, the status is not valid (unless an error result is placed), or
// the id cannot be written in a result header.
func placeable(ix *index, pl Placement) (*ToolUse, error) {
	u := ix.use(pl.ID)
	if u == nil {
		return nil, fmt.Errorf("tool use not found: %s", pl.ID)
	}
	if pl.Error == "" && pl.Status != "" && !pl.Status.Valid() {
		return nil, fmt.Errorf("invalid status %q for %s", pl.Status, pl.ID)
	}
	if strings.ContainsAny(pl.ID, "`\n\r") {
		return nil, fmt.Errorf("tool use id %q cannot be written in a result header", pl.ID)
	}
	if ix.result(pl.ID) != nil {
		return nil, nil
	}
	return u, nil
}

// spot returns where the block of the tool use at h goes, as an empty
// group: in a new @You: message after the assistant message's last
// non-blank line when none follows it; else after the result of the
// nearest earlier call of the same message, else before the message's
// first result, else right below its @You: marker. It fails when the
// assistant message is the last and ends inside an open fence.
func (p *placer) spot(h home, id string) (placeGroup, error) {
	var y *Message
	if h.msg+1 < len(p.d.Messages) && p.d.Messages[h.msg+1].Role == "You" {
		y = p.d.Messages[h.msg+1]
	}
	switch {
	case y == nil && h.msg == len(p.d.Messages)-1 && p.d.openFence > 0:
		return placeGroup{}, fmt.Errorf("cannot place a placeholder for %s: the message ends inside the code fence opened on line %d", id, p.d.openFence)
	case y == nil:
		return placeGroup{at: lastNonBlank(p.lines, p.d.Messages[h.msg]), mode: blankBefore, newYou: true}, nil
	}
	results := y.ToolResults()
	if pred := p.predecessor(results, h); pred != nil {
		return placeGroup{at: pred.EndLine, mode: blankBefore}, nil
	}
	if len(results) > 0 {
		return placeGroup{at: results[0].HeaderLine - 1, mode: blankAfter}, nil
	}
	return placeGroup{at: y.StartLine, mode: blankBefore}, nil
}

// predecessor returns, among results, the result of the nearest earlier
// call of the same assistant message as the call at h (the last such
// result when the call has several), or nil.
func (p *placer) predecessor(results []*ToolResult, h home) *ToolResult {
	var pred *ToolResult
	predPos := -1
	for _, r := range results {
		ru := p.ix.use(r.ToolUseID)
		if ru == nil {
			continue
		}
		if rh, ok := p.homes[ru]; ok && rh.msg == h.msg && rh.pos < h.pos && rh.pos >= predPos {
			pred, predPos = r, rh.pos
		}
	}
	return pred
}

// edit returns the insertion of the group's blocks, in their calls' order,
// each with its blank line, and a blank line before a following line that
// is not blank.
func (g *placeGroup) edit(lines []string) Edit {
	slices.SortStableFunc(g.items, func(a, b placeItem) int { return a.pos - b.pos })
	var out []string
	if g.newYou {
		out = append(out, "", "@You:")
	}
	for _, it := range g.items {
		block := RenderPlaceholderBody(it.id, it.status, it.body)
		if it.err != "" {
			block = RenderResult(it.id, it.err, true, "")
		}
		if g.mode == blankBefore {
			out = append(out, "")
			out = append(out, block...)
		} else {
			out = append(out, block...)
			out = append(out, "")
		}
	}
	if g.mode == blankBefore && g.at < len(lines) && !isBlank(lines[g.at]) {
		out = append(out, "")
	}
	return Edit{Start: g.at, End: g.at, Lines: out}
}

// errorPlaced marks, for verifyPlaced, a placement of an error result.
const errorPlaced Status = "\x00error"

// verifyPlaced re-parses the edited lines and checks that every placeholder
// reads back with its status, so that an odd buffer gets an error instead of
// a block that is not one. d is the Document of lines: the messages above
// the first edit are not parsed again (ParseFrom).
func verifyPlaced(d *Document, lines []string, edits []Edit, placed map[string]Status) ([]string, *Document, error) {
	if len(edits) == 0 {
		return nil, nil, nil
	}
	out, err := Apply(lines, edits)
	if err != nil {
		return nil, nil, err
	}
	d = ParseFrom(d, out, FirstChange(edits))
	for id, st := range placed {
		if r := d.Result(id); st == errorPlaced && (r == nil || r.Status != "" || !r.IsError) {
			return nil, nil, fmt.Errorf("cannot place the result of %s: it would not read back as its tool result", id)
		} else if st != errorPlaced && (r == nil || r.Status != st) {
			return nil, nil, fmt.Errorf("cannot place a placeholder for %s: it would not read back as its tool result", id)
		}
	}
	return out, d, nil
}

// lastNonBlank returns the 1-based number of the last non-blank line of m
// (the marker at least), which is also the 0-based index just after it.
func lastNonBlank(lines []string, m *Message) int {
	n := m.EndLine
	for n > m.StartLine && isBlank(lines[n-1]) {
		n--
	}
	return n
}

// check verifies that lines is what d was parsed from, as far as cheaply
// possible.
func check(d *Document, lines []string) error {
	if d == nil {
		return errors.New("no document")
	}
	if len(lines) != d.LineCount {
		return fmt.Errorf("document was parsed from %d lines, got %d: parse the buffer again", d.LineCount, len(lines))
	}
	return nil
}

// result finds the result block of id and checks that its header and fence
// are still where d says.
func result(d *Document, lines []string, id string) (*ToolResult, error) {
	if err := check(d, lines); err != nil {
		return nil, err
	}
	r := d.Result(id)
	if r == nil {
		return nil, fmt.Errorf("tool result not found: %s", id)
	}
	if r.HeaderLine < 1 || r.FenceLine <= r.HeaderLine || r.EndLine <= r.FenceLine || r.EndLine > len(lines) {
		return nil, fmt.Errorf("tool result %s has invalid positions", id)
	}
	if hid, _, ok := toolResultHeader(strings.TrimSuffix(lines[r.HeaderLine-1], "\r")); !ok || hid != id {
		return nil, fmt.Errorf("unexpected header line content for %s", id)
	}
	if backticks(lines[r.FenceLine-1]) != r.FenceLen {
		return nil, fmt.Errorf("unexpected fence line content for %s", id)
	}
	return r, nil
}

// ReplaceResult returns the edit that replaces the whole result block of id
// (header through closing fence) with RenderResult(id, content, isError,
// lang): a placeholder becomes a completed result, an old result is
// overwritten.
func ReplaceResult(d *Document, lines []string, id, content string, isError bool, lang string) (Edit, error) {
	r, err := result(d, lines, id)
	if err != nil {
		return Edit{}, err
	}
	return Edit{Start: r.HeaderLine - 1, End: r.EndLine, Lines: RenderResult(id, content, isError, lang)}, nil
}

// SetStatus returns the edit that gives the placeholder of id the status s;
// the body is never touched. In the fence form only the opener changes, and
// its other tokens (timeout=30, …) are kept. A v0.11 header-form
// placeholder is converted to the fence form: the header becomes bare (with
// " (error)" kept) and the opener becomes ```flemma:tool status=S followed
// by the header's other key=value tokens. A completed result is an error.
func SetStatus(d *Document, lines []string, id string, s Status) (Edit, error) {
	if !s.Valid() {
		return Edit{}, fmt.Errorf("invalid status %q", s)
	}
	r, err := result(d, lines, id)
	if err != nil {
		return Edit{}, err
	}
	if r.Status == "" {
		return Edit{}, fmt.Errorf("tool %s has already completed", id)
	}
	var info string
	if r.Language == "flemma:tool" {
		info = setStatusToken(r.Info, s)
	} else {
		_, _, extra := headerSuffix(r.Suffix)
		info = strings.Join(append([]string{"status=" + string(s)}, extra...), " ")
	}
	return rewrite(r, lines, opener(r.FenceLen, "flemma:tool", info)), nil
}

// StripFence returns the edit that turns the placeholder of id into a
// completed result whose content is the text the user wrote in it
// (content-overwrite protection): a flemma:tool opener becomes plain
// backticks of the same length, a status in the header suffix is removed
// (" (error)" is kept), and the body and everything else stay untouched. It
// does not check that the body is non-empty; a completed result is an
// error.
func StripFence(d *Document, lines []string, id string) (Edit, error) {
	r, err := result(d, lines, id)
	if err != nil {
		return Edit{}, err
	}
	if r.Status == "" {
		return Edit{}, fmt.Errorf("tool result has no flemma:tool fence or status: %s", id)
	}
	open := ""
	if r.Language == "flemma:tool" {
		open = strings.Repeat("`", r.FenceLen)
	}
	return rewrite(r, lines, open), nil
}

// rewrite builds the edit for the header-to-opener range of a placeholder:
// the opener is replaced by open (kept when open is ""), and a header that
// carries a status suffix is made bare. The edit covers as few lines as
// possible.
func rewrite(r *ToolResult, lines []string, open string) Edit {
	hs, _, _ := headerSuffix(r.Suffix)
	switch {
	case hs == "":
		// A placeholder without a header status has a flemma:tool fence,
		// so open is never "" here.
		return Edit{Start: r.FenceLine - 1, End: r.FenceLine, Lines: []string{open}}
	case open == "":
		return Edit{Start: r.HeaderLine - 1, End: r.HeaderLine, Lines: []string{ResultHeader(r.ToolUseID, r.IsError)}}
	}
	out := []string{ResultHeader(r.ToolUseID, r.IsError)}
	out = append(out, lines[r.HeaderLine:r.FenceLine-1]...)
	out = append(out, open)
	return Edit{Start: r.HeaderLine - 1, End: r.FenceLine, Lines: out}
}

// setStatusToken replaces the value of the first status= token of a
// flemma:tool info string (dropping later ones), or puts status=S first
// when there is none; other tokens are kept in order.
func setStatusToken(info string, s Status) string {
	toks := fields(info)
	out := make([]string, 0, len(toks)+1)
	done := false
	for _, t := range toks {
		if k, _, ok := keyValue(t); ok && k == "status" {
			if !done {
				out = append(out, "status="+string(s))
				done = true
			}
			continue
		}
		out = append(out, t)
	}
	if !done {
		out = append([]string{"status=" + string(s)}, out...)
	}
	return strings.Join(out, " ")
}
