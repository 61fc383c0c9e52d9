package buffer

import "strings"

// Fence returns the backtick fence for content: one more backtick than the
// longest run of backticks anywhere in content, and at least three.
func Fence(content string) string {
	longest, run := 0, 0
	for i := 0; i < len(content); i++ {
		if content[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// ResultHeader returns the header line of a tool result:
// **Tool Result:** `id`, with " (error)" appended when isError.
func ResultHeader(id string, isError bool) string {
	h := toolResultPrefix + " `" + id + "`"
	if isError {
		h += " (error)"
	}
	return h
}

// RenderPlaceholder returns the four lines of a placeholder in the fence
// form of seed 004: the header, a blank line, the opener
// ```flemma:tool status=STATUS and the closer. With status "" the opener is
// a plain ``` (an empty completed result), as the Lua executor writes it.
// id must not contain a backtick or a newline.
func RenderPlaceholder(id string, status Status) []string {
	return RenderPlaceholderBody(id, status, "")
}

// RenderPlaceholderBody is RenderPlaceholder with text inside the block (a
// rejection reason, a result the user gives); the fence is one longer than
// the longest backtick run in it.
func RenderPlaceholderBody(id string, status Status, body string) []string {
	fence := "```"
	if body != "" {
		fence = Fence(body)
	}
	opener := fence
	if status != "" {
		opener = fence + "flemma:tool status=" + string(status)
	}
	out := []string{ResultHeader(id, false), "", opener}
	if body != "" {
		out = append(out, strings.Split(body, "\n")...)
	}
	return append(out, fence)
}

// RenderResult returns the lines of a completed result: the header (with
// " (error)" when isError), a blank line, the fence with lang, the content
// lines and the closing fence. Empty content gives an empty fence. A "\r"
// at the end of a content line is dropped (CRLF output reads back as LF),
// and so is a lang that could not be read back (one with a backtick or
// whitespace). id must not contain a backtick or a newline.
func RenderResult(id, content string, isError bool, lang string) []string {
	fence := Fence(content)
	if strings.ContainsAny(lang, "` \t\r\n\v\f") {
		lang = ""
	}
	out := []string{ResultHeader(id, isError), "", fence + lang}
	if content != "" {
		for _, l := range strings.Split(content, "\n") {
			out = append(out, strings.TrimSuffix(l, "\r"))
		}
	}
	return append(out, fence)
}

func opener(n int, lang, info string) string {
	s := strings.Repeat("`", n) + lang
	if info != "" {
		s += " " + info
	}
	return s
}

func (u *ToolUse) header() string {
	return toolUsePrefix + " `" + u.Name + "` (`" + u.ID + "`)" + u.Suffix
}

func (r *ToolResult) header() string {
	return toolResultPrefix + " `" + r.ToolUseID + "`" + r.Suffix
}

func (t *Thinking) openTag() string {
	switch {
	case t.Redacted:
		return "<thinking redacted>"
	case t.Provider == "":
		return "<thinking>"
	case t.StartLine == t.EndLine:
		return "<thinking " + t.Provider + `:signature="` + t.Signature + `"/>`
	}
	return "<thinking " + t.Provider + `:signature="` + t.Signature + `">`
}

// Render returns the canonical text of the document, line for line: the
// result has LineCount lines and every node at the lines it was parsed
// from. Lines that belong to no node (blank separators) are "". Structural
// lines are rebuilt from the nodes (markers lose trailing blanks, closing
// fences get the opener's length, tags and headers their canonical
// spacing); text, code, thinking and fence bodies are kept verbatim (a line
// whose text ends in "\r" gets the "\r" that Parse strips back). So
// Render(Parse(Render(Parse(x)))) equals Render(Parse(x)), and a
// well-formed buffer renders back to itself.
func Render(d *Document) []string {
	w := writer{out: make([]string, d.LineCount)}
	if fm := d.Frontmatter; fm != nil {
		w.put(fm.StartLine, "```"+fm.Language)
		w.body(fm.StartLine, fm.EndLine, fm.Code)
		w.put(fm.EndLine, "```")
	}
	if d.Preamble != nil {
		w.text(d.Preamble)
	}
	for _, m := range d.Messages {
		w.put(m.StartLine, "@"+m.Role+":")
		for _, s := range m.Segments {
			switch s := s.(type) {
			case *Text:
				w.text(s)
			case *Thinking:
				w.put(s.StartLine, s.openTag())
				if s.EndLine > s.StartLine {
					for i, l := range s.lines {
						w.put(s.StartLine+1+i, l)
					}
					w.put(s.EndLine, thinkingClose)
				}
			case *Aborted:
				w.put(s.StartLine, "<!-- flemma:aborted: "+s.Message+" -->")
			case *Summary:
				w.put(s.StartLine, SummaryMarker(s.Note))
				for i, l := range s.lines {
					w.put(s.StartLine+1+i, l)
				}
				w.put(s.EndLine, summaryClose)
			case *ToolUse:
				w.put(s.HeaderLine, s.header())
				w.put(s.FenceLine, opener(s.FenceLen, s.Language, ""))
				w.body(s.FenceLine, s.EndLine, s.RawInput)
				w.put(s.EndLine, strings.Repeat("`", s.FenceLen))
			case *ToolResult:
				w.put(s.HeaderLine, s.header())
				w.put(s.FenceLine, opener(s.FenceLen, s.Language, s.Info))
				w.body(s.FenceLine, s.EndLine, s.Content)
				w.put(s.EndLine, strings.Repeat("`", s.FenceLen))
			}
		}
	}
	return w.out
}

// writer places lines at 1-based positions; out-of-range writes (possible
// only in hand-made documents) are dropped rather than panicking.
type writer struct{ out []string }

func (w *writer) put(line int, s string) {
	if line >= 1 && line <= len(w.out) {
		if strings.HasSuffix(s, "\r") {
			// Parse strips one "\r" from every line, so text that really
			// ends in "\r" needs one more to read back the same.
			s += "\r"
		}
		w.out[line-1] = s
	}
}

// body writes content on the lines strictly between open and end.
func (w *writer) body(open, end int, content string) {
	if end-open <= 1 {
		return
	}
	for i, l := range strings.Split(content, "\n") {
		w.put(open+1+i, l)
	}
}

func (w *writer) text(t *Text) {
	for i, l := range t.lines {
		w.put(t.StartLine+i, l)
	}
}

// RenderSummary returns the lines of a compaction summary block for text,
// the model's answer to the summarization request: the marker with note,
// the text, and, when closed, the closing marker. Text is untrusted: it is
// sanitized (Sanitize), every line that would read as structure — a role
// marker, a tool header, a summary marker — is escaped (EscapeLine, undone
// when the summary is sent), and a code fence it leaves open is closed
// before the closing marker, so the block always parses as one Summary and
// nothing else. Blank lines at the start and, when closed, at the end are
// left out. An unclosed block is what a summary being streamed looks like
// (the parser reads it as text until it is closed).
func RenderSummary(note, text string, closed bool) []string {
	text = strings.TrimLeft(Sanitize(text), "\n")
	if closed {
		text = strings.TrimRight(text, "\n")
	}
	out := []string{SummaryMarker(note)}
	var f FenceState
	if text != "" {
		for _, l := range strings.Split(text, "\n") {
			l = EscapeLine(l)
			f.Feed(l)
			out = append(out, l)
		}
	}
	if closed {
		if c := f.Closer(); c != "" {
			out = append(out, c)
		}
		out = append(out, summaryClose)
	}
	return out
}
