package buffer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Parse parses the lines of a .chat buffer, without line terminators as
// nvim_buf_get_lines returns them (a line must not contain "\n"). A single
// trailing "\r" is removed from each line first. Parse never fails and
// never panics: what it cannot read as structure stays Text, and the
// problem is reported in Document.Diagnostics.
func Parse(lines []string) *Document { return ParseFrom(nil, lines, 0) }

// ParseFrom is Parse of lines when prev was parsed from lines whose first
// same lines are those of lines (a buffer changed below line same, as
// after a model's response or a placeholder's insertion): the messages of
// prev that lie wholly in that unchanged prefix, followed there by the
// next message's marker, are not parsed again but shared with prev. The
// result is the Document Parse(lines) returns (FuzzParseFrom checks it);
// prev == nil or same == 0 parse everything. Documents are read-only: a
// node may belong to several of them.
func ParseFrom(prev *Document, lines []string, same int) *Document {
	p := &parser{src: stripCR(lines)}
	p.doc = &Document{LineCount: len(p.src)}
	body := 1
	if fm := p.frontmatter(); fm != nil {
		p.doc.Frontmatter = fm
		body = fm.EndLine + 1
	}
	kept := p.reuse(prev, min(same, len(p.src)))
	p.split(body, kept)
	p.uses = slices.Grow(p.uses, p.useLines)
	p.results = slices.Grow(p.results, p.resultLines)
	for _, m := range p.doc.Messages[kept:] {
		at := len(p.doc.Diagnostics)
		switch m.Role {
		case "You", "Assistant":
			p.blocks(m)
		default:
			if t := p.text(m.StartLine+1, m.EndLine); t != nil {
				m.Segments = append(m.Segments, t)
			}
		}
		if len(p.doc.Diagnostics) > at {
			d := slices.Clone(p.doc.Diagnostics[at:])
			m.diags = &d
		}
	}
	p.index()
	slices.SortStableFunc(p.doc.Diagnostics, func(a, b Diagnostic) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return p.doc
}

// reuse takes from prev the messages before the last that end, with the
// marker line after them, within the first same lines, with their tool
// blocks, summaries and diagnostics, and returns how many it took.
func (p *parser) reuse(prev *Document, same int) int {
	if prev == nil || prev.ix == nil || len(prev.Messages) < 2 {
		return 0
	}
	k := 0
	for k < len(prev.Messages)-1 && prev.Messages[k].EndLine+1 <= same {
		k++
	}
	if k == 0 {
		return 0
	}
	end := prev.Messages[k-1].EndLine
	p.doc.Messages = append(make([]*Message, 0, len(prev.Messages)+8), prev.Messages[:k]...)
	all := prev.all
	if all == nil {
		all = prev.ix
	}
	n := sort.Search(len(all.uses), func(i int) bool { return all.uses[i].HeaderLine > end })
	p.uses = append(p.uses, all.uses[:n]...)
	n = sort.Search(len(all.results), func(i int) bool { return all.results[i].HeaderLine > end })
	p.results = append(p.results, all.results[:n]...)
	for _, m := range p.doc.Messages {
		for _, seg := range m.Segments {
			if s, ok := seg.(*Summary); ok {
				p.doc.Summary = s
			}
		}
	}
	return k
}

// stripCR returns lines without a trailing "\r" on any line. It copies the
// slice only when it has to.
func stripCR(lines []string) []string {
	for i, s := range lines {
		if strings.HasSuffix(s, "\r") {
			out := make([]string, len(lines))
			copy(out, lines[:i])
			for j := i; j < len(lines); j++ {
				out[j] = strings.TrimSuffix(lines[j], "\r")
			}
			return out
		}
	}
	return lines
}

type parser struct {
	src        []string // src[n-1] is line n
	doc        *Document
	fmUnclosed bool // "Frontmatter is not closed" was reported

	// A search for </thinking> from line h that failed at line stop also
	// fails from any later line before stop; remembering stop keeps a run
	// of unclosed tags linear instead of quadratic.
	splitNoClose, tagNoClose int

	uses    []*ToolUse // in document order, for the index
	results []*ToolResult
	// Header lines split saw outside fences: how many uses and results
	// there can be, to size the slices above once.
	useLines, resultLines int

	segs     []Segment // the segments of the message being parsed
	segArena []Segment // see keep
	// Memory handed out in pieces (see copyLines, newMessage): a few
	// allocations per document instead of a few per node.
	lineArena  []string
	msgArena   []Message
	textArena  []Text
	thinkArena []Thinking
	bodies     strings.Builder // see body
}

func (p *parser) line(n int) string { return p.src[n-1] }

func (p *parser) report(line, col int, sev Severity, kind, format string, args ...any) {
	p.doc.Diagnostics = append(p.doc.Diagnostics, Diagnostic{
		Line: line, Col: col, Severity: sev, Kind: kind, Message: fmt.Sprintf(format, args...),
	})
}

// text returns the lines a..b as a Text, with blank lines at both ends
// dropped, or nil if nothing is left. The Text keeps a copy of the slice
// of lines (not of their bytes), so a caller that reuses its slice after
// Parse does not change it.
func (p *parser) text(a, b int) *Text {
	for a <= b && isBlank(p.line(a)) {
		a++
	}
	for b >= a && isBlank(p.line(b)) {
		b--
	}
	if a > b {
		return nil
	}
	t := p.newText()
	*t = Text{lines: p.copyLines(p.src[a-1 : b]), StartLine: a, EndLine: b}
	return t
}

// newText returns a zero Text from memory shared with the other text
// nodes of the document, as newMessage does for messages (the nodes of
// a message are kept, or dropped, together).
func (p *parser) newText() *Text {
	if len(p.textArena) == 0 {
		p.textArena = make([]Text, 64)
	}
	t := &p.textArena[0]
	p.textArena = p.textArena[1:]
	return t
}

// newThinking returns a zero Thinking from memory shared with the other
// thinking blocks of the document, as newText does for text.
func (p *parser) newThinking() *Thinking {
	if len(p.thinkArena) == 0 {
		p.thinkArena = make([]Thinking, 32)
	}
	t := &p.thinkArena[0]
	p.thinkArena = p.thinkArena[1:]
	return t
}

// frontmatter reads a frontmatter opened on line 1 and closed by the first
// line of exactly three backticks. The search stops at a role marker, so a
// forgotten closer cannot swallow the conversation (it is reported instead).
func (p *parser) frontmatter() *Frontmatter {
	if len(p.src) == 0 {
		return nil
	}
	lang, ok := frontmatterOpen(p.src[0])
	if !ok {
		return nil
	}
	for n := 2; n <= len(p.src); n++ {
		s := p.line(n)
		if frontmatterClose(s) {
			return &Frontmatter{
				Language:  lang,
				Code:      strings.Join(p.src[1:n-1], "\n"),
				StartLine: 1,
				EndLine:   n,
			}
		}
		if _, ok := roleMarker(s); ok {
			break
		}
	}
	p.fmUnclosed = true
	p.report(1, 1, SeverityWarning, KindFrontmatter,
		"Frontmatter is not closed (a line of exactly ``` must end it before the first role marker); it is ignored")
	return nil
}

// split cuts the lines from body on into the preamble and the messages.
// A role marker inside an open code fence is content. The preamble is not
// fence-tracked (an unclosed frontmatter must not hide the first message).
func (p *parser) split(body, kept int) {
	n := len(p.src)
	i := body
	for i <= n {
		if _, ok := roleMarker(p.line(i)); ok {
			break
		}
		i++
	}
	if t := p.text(body, i-1); t != nil {
		p.doc.Preamble = t
		if !p.fmUnclosed { // one warning about the same lines is enough
			p.report(t.StartLine, 1, SeverityWarning, KindMessage,
				"Text before the first role marker belongs to no message and is ignored (a marker such as @You: must be alone on its line)")
		}
	}
	if kept > 0 { // messages taken from a previous parse (reuse)
		for _, m := range p.doc.Messages[:kept] {
			if m.diags != nil {
				p.doc.Diagnostics = append(p.doc.Diagnostics, *m.diags...)
			}
		}
		i = p.doc.Messages[kept-1].EndLine + 1
	}
	for i <= n {
		role, _ := roleMarker(p.line(i))
		m := p.newMessage()
		m.Role, m.StartLine = role, i
		j := p.messageEnd(i, role)
		m.EndLine = j - 1
		p.doc.Messages = append(p.doc.Messages, m)
		i = j
	}
}

// messageEnd returns the line after the message whose marker is on line i:
// the next role marker outside a code fence, or the line after the last.
// Only the first byte of most lines is looked at: every line that matters
// here starts with '@', '`', '<' or '*'.
func (p *parser) messageEnd(i int, role string) int {
	n := len(p.src)
	fence, opened, swallowed := 0, 0, 0
	j := i + 1
scan:
	for ; j <= n; j++ {
		s := p.line(j)
		if s == "" {
			continue
		}
		if fence > 0 {
			switch s[0] {
			case '`':
				if fenceCloses(s, fence) {
					fence, swallowed = 0, 0
				}
			case '@':
				if _, ok := roleMarker(s); ok && swallowed == 0 {
					swallowed = j
				}
			}
			continue
		}
		switch s[0] {
		case '@':
			if _, ok := roleMarker(s); ok {
				break scan
			}
		case '<':
			if role == "Assistant" {
				if k := p.thinkingEnd(j); k > 0 {
					j = k // fences inside thinking content do not count
				}
			}
		case '`':
			if fence = fenceOpen(s); fence > 0 {
				opened = j
			}
		case '*':
			p.countHeader(s)
		}
	}
	if fence > 0 { // only the last message can end inside a fence
		p.doc.openFence = opened
		if swallowed > 0 {
			p.report(swallowed, 1, SeverityWarning, KindMessage,
				"Role marker inside the code fence left open on line %d is read as text; close the fence to start a new message", opened)
		}
	}
	return j
}

// countHeader counts a line that may be a tool block's header (see
// useLines).
func (p *parser) countHeader(s string) {
	switch {
	case strings.HasPrefix(s, toolUsePrefix):
		p.useLines++
	case strings.HasPrefix(s, toolResultPrefix):
		p.resultLines++
	}
}

// thinkingEnd returns the closing </thinking> line of a thinking block
// opened on line h, or 0 when h opens none or no close comes before the
// next role marker (a thinking block never contains one).
func (p *parser) thinkingEnd(h int) int {
	t, ok := thinkingOpen(p.line(h))
	if !ok || t.selfClosing || h < p.splitNoClose {
		return 0
	}
	k := h + 1
	for ; k <= len(p.src); k++ {
		s := p.line(k)
		if s == thinkingClose {
			return k
		}
		if _, ok := roleMarker(s); ok {
			break
		}
	}
	p.splitNoClose = k
	return 0
}

// blocks parses the content of a @You: or @Assistant: message. Structure is
// recognised only outside code fences, tracked with the same rules as the
// message splitter, so a header quoted in a fenced example stays text.
func (p *parser) blocks(m *Message) {
	assistant := m.Role == "Assistant"
	lo, hi := m.StartLine+1, m.EndLine
	textStart := 0 // first line of the pending text run, 0 if none
	flush := func(end int) {
		if textStart > 0 {
			if t := p.text(textStart, end-1); t != nil {
				p.segs = append(p.segs, t)
			}
			textStart = 0
		}
	}
	fence := 0
	for i := lo; i <= hi; {
		s := p.line(i)
		var seg Segment
		next := 0
		switch {
		case fence > 0:
			if fenceCloses(s, fence) {
				fence = 0
			}
		case s == "":
		case s[0] == '`':
			fence = fenceOpen(s)
		case s[0] == '*' && assistant:
			seg, next = p.toolUse(i, hi)
		case s[0] == '*':
			seg, next = p.toolResult(i, hi)
		case s[0] == '<' && assistant:
			seg, next = p.tag(i, hi)
		case s[0] == '<':
			seg, next = p.summary(i, hi)
		}
		if seg != nil {
			switch s := seg.(type) {
			case *ToolUse:
				p.uses = append(p.uses, s)
			case *ToolResult:
				p.results = append(p.results, s)
			case *Summary:
				p.doc.Summary = s // the last one wins
			}
			flush(i)
			p.segs = append(p.segs, seg)
			i = next
			continue
		}
		if textStart == 0 {
			textStart = i
		}
		i++
	}
	flush(hi + 1)
	m.Segments = p.keep(p.segs)
	p.segs = p.segs[:0]
}

// copyLines returns a copy of a slice of lines (the strings are shared),
// from memory shared with the other copies of the document.
func (p *parser) copyLines(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	if len(p.lineArena) < len(lines) {
		p.lineArena = make([]string, max(len(lines), 1024))
	}
	out := p.lineArena[:len(lines):len(lines)]
	copy(out, lines)
	p.lineArena = p.lineArena[len(lines):]
	return out
}

// newMessage returns a zero Message from memory shared with the other
// messages of the document.
func (p *parser) newMessage() *Message {
	if len(p.msgArena) == 0 {
		p.msgArena = make([]Message, 64)
	}
	m := &p.msgArena[0]
	p.msgArena = p.msgArena[1:]
	return m
}

// keep returns a copy of segs whose memory is shared with the other
// messages of the document (one allocation for many messages instead of a
// few per message), or nil for none. Its capacity is its length, so an
// append by a caller copies it instead of overwriting a neighbour.
func (p *parser) keep(segs []Segment) []Segment {
	if len(segs) == 0 {
		return nil
	}
	if len(p.segArena) < len(segs) {
		p.segArena = make([]Segment, max(len(segs), 256))
	}
	out := p.segArena[:len(segs):len(segs)]
	copy(out, segs)
	p.segArena = p.segArena[len(segs):]
	return out
}

// fencedBody finds the fence of a tool block whose header is on line h:
// blank lines are skipped, then a fence opener must follow, closed within
// the message. It returns the opener line, its backtick count and the
// closing line; open == 0 when there is no opener, end == 0 when the fence
// is not closed.
func (p *parser) fencedBody(h, hi int) (open, n, end int) {
	j := h + 1
	for j <= hi && isBlank(p.line(j)) {
		j++
	}
	if j > hi {
		return 0, 0, 0
	}
	n = fenceOpen(p.line(j))
	if n == 0 {
		return 0, 0, 0
	}
	for k := j + 1; k <= hi; k++ {
		if fenceCloses(p.line(k), n) {
			return j, n, k
		}
	}
	return j, n, 0
}

// body returns the lines strictly between two fence lines joined by "\n".
// A body of one line is that line; one of several is copied into memory
// shared with the other bodies of the document (chunks of bodyChunk bytes:
// a few allocations per document instead of one per body), unless it is
// large enough to have its own.
func (p *parser) body(open, end int) string {
	lines := p.src[open : end-1]
	if len(lines) < 2 {
		return strings.Join(lines, "\n") // "" or the line itself
	}
	n := len(lines) - 1
	for _, l := range lines {
		n += len(l)
	}
	if n > bodyChunk/4 {
		return strings.Join(lines, "\n")
	}
	b := &p.bodies
	if b.Cap()-b.Len() < n {
		*b = strings.Builder{}
		b.Grow(bodyChunk)
	}
	// What a Builder holds is only appended to: the string of its first
	// bytes stays valid while later bodies go after it, within its
	// capacity (never regrown: a new chunk starts a new Builder).
	start := b.Len()
	b.WriteString(lines[0])
	for _, l := range lines[1:] {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	return b.String()[start:]
}

// bodyChunk is the size of the memory the tool blocks' bodies share. A
// body kept after its document keeps at most this much alive.
const bodyChunk = 8 << 10

// toolUse parses a Tool Use block whose header is on line h. On any problem
// it reports it and returns nil: the header then stays text and parsing goes
// on with the next line, so nothing after a bad block is lost.
func (p *parser) toolUse(h, hi int) (Segment, int) {
	name, id, suffix, ok := toolUseHeader(p.line(h))
	if !ok {
		if strings.HasPrefix(p.line(h), "**Tool Use") {
			// A header edited out of shape: say so rather than let the
			// block pass as text in silence.
			p.report(h, 1, SeverityWarning, KindToolUse, "Not a tool use header, so this block is text: the form is **Tool Use:** `NAME` (`ID`)")
		}
		return nil, 0
	}
	open, n, end := p.fencedBody(h, hi)
	if open == 0 {
		p.report(h, 1, SeverityWarning, KindToolUse, "Tool use requires a fenced code block with JSON input")
		return nil, 0
	}
	if end == 0 {
		p.report(h, 1, SeverityWarning, KindToolUse, "Unclosed fenced code block in tool use (missing closing fence)")
		return nil, 0
	}
	lang, _ := fenceInfo(p.line(open), n)
	if lang != "" && !strings.EqualFold(lang, "json") {
		p.report(open, n+1, SeverityWarning, KindToolUse,
			"Failed to parse tool input: No parser registered for language: %s", lang)
		return nil, 0
	}
	raw := p.body(open, end)
	if isBlank(raw) {
		p.report(open, 1, SeverityWarning, KindToolUse, "Failed to parse tool input: the fenced block is empty")
		return nil, 0
	}
	// One pass checks the input and measures its depth; InputTooLarge
	// (its own pass) only when that pass cannot say it is within bounds.
	ok, deep := false, 0
	if len(raw) <= MaxInputBytes {
		ok, deep = validInput(raw)
	}
	why := ""
	if !ok || deep > MaxInputDepth {
		why = InputTooLarge(raw)
	}
	if why != "" {
		// Not decoded: no resolver, preview or tool is handed it.
		p.report(open+1, 1, SeverityWarning, KindToolUse, "Tool input refused: %s", why)
		return &ToolUse{
			Name: name, ID: id, RawInput: raw, Language: lang, FenceLen: n, Suffix: suffix,
			HeaderLine: h, FenceLine: open, EndLine: end,
		}, end + 1
	}
	if !ok { // not valid, or an edge the fast path leaves to encoding/json
		if err := checkJSON(raw); err != nil {
			line, col := open+1, 1
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col = offsetPos(raw, int(se.Offset)-1)
				line += open + 1
			}
			p.report(line, col, SeverityWarning, KindToolUse, "Failed to parse tool input: JSON parse error: %s", err)
			return nil, 0
		}
	}
	u := &ToolUse{
		Name: name, ID: id, RawInput: raw, Language: lang, FenceLen: n, Suffix: suffix,
		HeaderLine: h, FenceLine: open, EndLine: end,
	}
	if isObjectText(raw) {
		u.object = true
	} else {
		var v any
		_ = json.Unmarshal([]byte(raw), &v) // valid: checked above
		p.report(open+1, 1, SeverityWarning, KindToolUse,
			"Tool input must be a JSON object, got %s", jsonType(v))
	}
	return u, end + 1
}

// checkJSON is encoding/json's verdict on a tool input the fast path did
// not accept (its error words the diagnostic). It is a function of its own
// so that the value it decodes into is not allocated on Parse's path.
func checkJSON(raw string) error {
	var v any
	return json.Unmarshal([]byte(raw), &v)
}

// decodeObject decodes a tool input Parse found to be a JSON object, nulls
// left out (see ToolUse.Input), or returns nil if it is not one.
func decodeObject(raw string) map[string]any {
	v, fast := decodeInput(raw) // nulls already left out
	if !fast {
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil
		}
		if obj, ok := v.(map[string]any); ok {
			v = dropNulls(obj)
		}
	}
	obj, _ := v.(map[string]any)
	return obj
}

// isObjectText reports whether valid JSON text is an object (its first
// token is '{').
func isObjectText(s string) bool {
	s = trimLeftSpace(s)
	return s != "" && s[0] == '{'
}

// offsetPos converts a byte offset in s to a 0-based line and 1-based
// column, clamping it into s.
func offsetPos(s string, off int) (line, col int) {
	off = max(0, min(off, len(s)-1))
	line = strings.Count(s[:off], "\n")
	return line, off - (strings.LastIndexByte(s[:off], '\n') + 1) + 1
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "object"
}

// dropNulls removes keys whose value is JSON null, in nested objects too
// (the Lua Flemma cannot represent them). Nulls inside arrays are kept.
func dropNulls(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(x)
		case []any:
			dropNullsIn(x)
		}
	}
	return m
}

func dropNullsIn(a []any) {
	for _, v := range a {
		switch x := v.(type) {
		case map[string]any:
			dropNulls(x)
		case []any:
			dropNullsIn(x)
		}
	}
}

// toolResult parses a Tool Result block whose header is on line h; on a
// problem the header stays text, as in toolUse.
func (p *parser) toolResult(h, hi int) (Segment, int) {
	id, suffix, ok := toolResultHeader(p.line(h))
	if !ok {
		if strings.HasPrefix(p.line(h), "**Tool Result") {
			p.report(h, 1, SeverityWarning, KindToolResult, "Not a tool result header, so this block is text: the form is **Tool Result:** `ID`")
		}
		return nil, 0
	}
	open, n, end := p.fencedBody(h, hi)
	if open == 0 {
		p.report(h, 1, SeverityWarning, KindToolResult, "Tool result requires a fenced code block")
		return nil, 0
	}
	if end == 0 {
		p.report(h, 1, SeverityWarning, KindToolResult, "Unclosed fenced code block in tool result (missing closing fence)")
		return nil, 0
	}
	lang, info := fenceInfo(p.line(open), n)
	r := &ToolResult{
		ToolUseID: id, Suffix: suffix, Language: lang, Info: info, FenceLen: n,
		Content:    p.body(open, end),
		HeaderLine: h, FenceLine: open, EndLine: end,
	}
	hs, herr, _ := headerSuffix(suffix)
	r.IsError = herr || errorSuffix(suffix)
	switch {
	case lang == "flemma:tool":
		r.Status = fenceStatus(info)
		if hs != "" {
			p.report(h, 1, SeverityWarning, KindToolResult,
				"Tool result %s has a status in its header (%s) and in its flemma:tool fence; the fence (%s) is used",
				id, hs, r.Status)
		}
	case hs != "":
		r.Status, r.HeaderForm = hs, true
	}
	return r, end + 1
}

// tag parses a thinking block or an abort marker starting on line h.
func (p *parser) tag(h, hi int) (Segment, int) {
	s := p.line(h)
	if msg, ok := abortMarker(s); ok {
		return &Aborted{Message: msg, StartLine: h, EndLine: h}, h + 1
	}
	t, ok := thinkingOpen(s)
	if !ok {
		if summaryLike(s) {
			p.report(h, 1, SeverityWarning, KindSummary,
				"A compaction summary counts only in a @You: message; this marker is text and the conversation above it is sent")
		}
		return nil, 0
	}
	th := p.newThinking()
	*th = Thinking{Provider: t.provider, Signature: t.signature, Redacted: t.redacted, StartLine: h}
	if t.selfClosing {
		th.EndLine = h
		return th, h + 1
	}
	if h >= p.tagNoClose {
		k := h + 1
		for ; k <= hi; k++ {
			s := p.line(k)
			if s == thinkingClose {
				th.lines = p.copyLines(p.src[h : k-1])
				th.EndLine = k
				return th, k + 1
			}
			if _, ok := roleMarker(s); ok { // as in thinkingEnd
				break
			}
		}
		p.tagNoClose = k
	}
	p.report(h, 1, SeverityWarning, KindThinking,
		"Unclosed <thinking> block (missing </thinking>); its lines are kept as text")
	return nil, 0
}

// The checks of tool uses against tool results across the document (the
// blocks sent: after the summary in force), made as the index is built
// (indexPairing); a nil parser reports nothing.

func (p *parser) duplicateUse(u, first *ToolUse) {
	if p != nil {
		p.report(u.HeaderLine, 1, SeverityError, KindToolUse,
			"Duplicate tool use id: %s (first used on line %d)", u.ID, first.HeaderLine)
	}
}

func (p *parser) unknownUse(r *ToolResult) {
	if p != nil {
		p.report(r.HeaderLine, 1, SeverityWarning, KindToolResult,
			"Tool result for unknown tool use: %s", r.ToolUseID)
	}
}

func (p *parser) duplicateResult(r, first *ToolResult) {
	if p != nil {
		p.report(r.HeaderLine, 1, SeverityWarning, KindToolResult,
			"Duplicate tool result for %s (first on line %d); only the first is used", r.ToolUseID, first.HeaderLine)
	}
}

// summary parses a compaction summary whose marker is on line h of a @You:
// message: the lines up to the closing marker, found outside code fences
// (the rules of the message splitter: a closing marker quoted in a fence is
// content). A summary that does not close within its message, a closing
// marker alone, and a line that looks like a marker but is not one are
// reported and stay text: then nothing is left out of the conversation.
func (p *parser) summary(h, hi int) (Segment, int) {
	s := p.line(h)
	note, ok := summaryOpen(s)
	switch {
	case ok:
	case summaryEnd(s):
		p.report(h, 1, SeverityWarning, KindSummary,
			"Closing %s without its <!-- flemma:summary --> marker; it is text", summaryClose)
		return nil, 0
	case summaryLike(s):
		p.report(h, 1, SeverityWarning, KindSummary,
			"Not a compaction marker: the marker is <!-- flemma:summary: NOTE --> alone on its line; this line is text")
		return nil, 0
	default:
		return nil, 0
	}
	fence := 0
	for k := h + 1; k <= hi; k++ {
		l := p.line(k)
		if fence > 0 {
			if fenceCloses(l, fence) {
				fence = 0
			}
			continue
		}
		if summaryEnd(l) {
			sm := &Summary{Note: note, StartLine: h, EndLine: k, lines: p.copyLines(p.src[h : k-1])}
			if isBlank(sm.Content()) {
				p.report(h, 1, SeverityWarning, KindSummary,
					"The compaction summary is empty: the conversation above it is not sent and nothing replaces it (delete the block to send it)")
			}
			return sm, k + 1
		}
		fence = fenceOpen(l)
	}
	p.report(h, 1, SeverityWarning, KindSummary,
		"The compaction summary is not closed (%s must end it, outside a code fence, within its message); it is read as text and the conversation above it is sent", summaryClose)
	return nil, 0
}

// index builds the document's index of tool blocks: those after the
// summary in force, if any (the conversation that is sent), and all of
// them for Whole. Building the first pairs the uses with the results and
// reports what does not match (indexPairing).
func (p *parser) index() {
	// No blocks: nil, whether or not header lines made room for some (a
	// Document is the same however it was parsed, ParseFrom or Parse).
	if len(p.uses) == 0 {
		p.uses = nil
	}
	if len(p.results) == 0 {
		p.results = nil
	}
	if p.doc.Summary == nil {
		p.doc.ix = indexPairing(p.uses, p.results, p)
		return
	}
	cut := p.doc.Summary.StartLine
	p.doc.ix = indexPairing(after(p.uses, cut), after(p.results, cut), p)
	p.doc.all = newIndex(p.uses, p.results)
}

// after returns the blocks (in document order) that start after line cut.
func after[T interface{ Lines() (int, int) }](blocks []T, cut int) []T {
	i := sort.Search(len(blocks), func(i int) bool { start, _ := blocks[i].Lines(); return start > cut })
	return blocks[i:]
}
