package provider

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// PartFile is a file attached to a user message (an @./path reference in
// the user's text) or to a tool result (the file reference `read` answers
// for an image or a PDF). FromDocument only records the reference; the
// engine loads the file (through the sandbox's read rules) before the
// request is built, and each provider sends what it accepts as a content
// block and everything else as a short text note.
const PartFile = "file"

// File is an attachment. Path is the reference as the buffer holds it,
// percent-decoded ("./shot.png", "~/x.pdf", "/abs/x.png"): the buffer never
// holds the file's content.
type File struct {
	Path string
	// Ref is the reference as written (for notes): "@./shot.png;type=image/png".
	Ref string
	// MIME is the type the reference names (";type=…") or the engine
	// detected; "" = unknown.
	MIME string
	// Line is the 1-based buffer line of the reference (0 = unknown).
	Line int
	// Data is the content, set by the engine; nil = not loaded, and Note
	// says why (refused, missing, too large).
	Data []byte
	Note string
}

// Name is the file's base name.
func (f *File) Name() string { return path.Base(f.Path) }

// DataURL is the file as a data: URL.
func (f *File) DataURL() string {
	return "data:" + f.MIME + ";base64," + base64.StdEncoding.EncodeToString(f.Data)
}

// Base64 is the file's content in base64.
func (f *File) Base64() string { return base64.StdEncoding.EncodeToString(f.Data) }

// attachLimit is what a wire accepts as a content block: the MIME types and
// the largest size of each kind.
type attachLimit struct {
	images   map[string]bool
	imageMax int
	pdfMax   int // 0 = PDFs are not accepted
}

const mb = 1 << 20

var (
	commonImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}
	// Anthropic: 5 MB per image, 32 MB per PDF (the request's own limit).
	anthropicAttach = attachLimit{images: commonImages, imageMax: 5 * mb, pdfMax: 32 * mb}
	// OpenAI Responses: 20 MB per image, PDFs as input_file up to 32 MB.
	openaiAttach = attachLimit{images: commonImages, imageMax: 20 * mb, pdfMax: 32 * mb}
	// Chat Completions: images (image_url parts), 20 MB; PDFs as file
	// parts only where the server documents them (OpenAI, Azure OpenAI,
	// OpenRouter: chatDialect.pdf), up to 32 MB.
	chatAttach    = attachLimit{images: commonImages, imageMax: 20 * mb}
	chatPDFAttach = attachLimit{images: commonImages, imageMax: 20 * mb, pdfMax: 32 * mb}
	// Vertex/Gemini inline data: 7 MB per image, PDFs inline up to 20 MB.
	vertexAttach = attachLimit{images: map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true,
		"image/heic": true, "image/heif": true}, imageMax: 7 * mb, pdfMax: 20 * mb}
)

// accept reports whether f goes as a content block; when not, the note to
// send in its place.
func (l attachLimit) accept(f *File, wire string) (kind string, note string) {
	if f.Data == nil {
		why := f.Note
		if why == "" {
			why = "not loaded"
		}
		return "", fmt.Sprintf("[%s: not attached: %s]", f.ref(), why)
	}
	size := len(f.Data)
	switch {
	case l.images[f.MIME]:
		if size > l.imageMax {
			return "", fmt.Sprintf("[%s: not attached: %s is larger than %s's limit of %s for images]", f.ref(), sizeText(size), wire, sizeText(l.imageMax))
		}
		return "image", ""
	case f.MIME == "application/pdf" && l.pdfMax > 0:
		if size > l.pdfMax {
			return "", fmt.Sprintf("[%s: not attached: %s is larger than %s's limit of %s for PDFs]", f.ref(), sizeText(size), wire, sizeText(l.pdfMax))
		}
		return "pdf", ""
	}
	return "", fmt.Sprintf("[%s: not attached: %s does not accept %s files]", f.ref(), wire, orUnknown(f.MIME))
}

func (f *File) ref() string {
	if f.Ref != "" {
		return f.Ref
	}
	return "@" + f.Path
}

func orUnknown(m string) string {
	if m == "" {
		return "unknown"
	}
	return m
}

func sizeText(n int) string {
	if n >= mb {
		return fmt.Sprintf("%.1f MB", float64(n)/mb)
	}
	return fmt.Sprintf("%d KB", (n+1023)/1024)
}

// refPattern finds file references in a user's text: @./x, @../x, @~/x,
// @//abs (reference §8.3), optionally with ;type=MIME, preceded by the
// start of the text or a character that cannot be part of a word or an
// e-mail address. A backslash before the @ escapes it.
var refPattern = regexp.MustCompile(`(^|[\s(\[{"'<>,\\])@((?:\.\.?/|~/|//)[^\s]+)`)

// trailingPunct is stripped from the end of a reference and kept as text.
const trailingPunct = ".,;:!?)]}'\"`>"

// splitRefs cuts a user's text into text parts and file parts; line is the
// buffer line of the text's first line. "\@./x" stays the literal text
// "@./x".
func splitRefs(text string, line int) []Part {
	var parts []Part
	addText := func(s string) {
		if s == "" {
			return
		}
		if n := len(parts); n > 0 && parts[n-1].Kind == PartText {
			parts[n-1].Text += s
			return
		}
		parts = append(parts, Part{Kind: PartText, Text: s})
	}
	rest, consumed := text, 0
	for {
		m := refPattern.FindStringSubmatchIndex(rest)
		if m == nil {
			addText(rest)
			return parts
		}
		at := m[4] - 1 // the '@'
		refEnd := m[5]
		if m[2] < m[3] && rest[m[2]:m[3]] == `\` {
			// Escaped: drop the backslash, keep the reference as text.
			addText(rest[:m[2]] + rest[at:refEnd])
			consumed += refEnd
			rest = rest[refEnd:]
			continue
		}
		raw := rest[m[4]:refEnd]
		trimmed := strings.TrimRight(raw, trailingPunct)
		mime := ""
		pathPart := trimmed
		if i := strings.Index(trimmed, ";type="); i >= 0 {
			pathPart, mime = trimmed[:i], strings.ToLower(trimmed[i+len(";type="):])
		}
		if strings.HasPrefix(pathPart, "//") {
			pathPart = pathPart[1:]
		}
		if p, err := url.PathUnescape(pathPart); err == nil {
			pathPart = p
		}
		if pathPart == "" || pathPart == "./" || pathPart == "../" || pathPart == "~/" || pathPart == "/" {
			addText(rest[:refEnd])
			consumed += refEnd
			rest = rest[refEnd:]
			continue
		}
		addText(rest[:at])
		ln := line + strings.Count(text[:consumed+at], "\n")
		parts = append(parts, Part{Kind: PartFile, File: &File{Path: pathPart, Ref: "@" + trimmed, MIME: mime, Line: ln}})
		addText(raw[len(trimmed):])
		consumed += refEnd
		rest = rest[refEnd:]
	}
}

// readReference returns the file of a `read` result that is a single file
// reference ("@./shot.png;type=image/png", as read answers an image or a
// PDF), or nil.
func readReference(content string) *File {
	c := strings.TrimSpace(content)
	if strings.ContainsAny(c, " \t\n") || !strings.Contains(c, ";type=") {
		return nil
	}
	ps := splitRefs(c, 0)
	if len(ps) != 1 || ps[0].Kind != PartFile {
		return nil
	}
	f := ps[0].File
	f.Line = 0
	return f
}

// Files lists every file of a conversation (user parts and tool results),
// for the engine to load before the request is built.
func Files(msgs []Message) []*File {
	var out []*File
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch {
			case p.Kind == PartFile && p.File != nil:
				out = append(out, p.File)
			case p.Kind == PartToolResult && p.ToolResult != nil:
				out = append(out, p.ToolResult.Files...)
			}
		}
	}
	return out
}

// anthropicFile is f as an Anthropic content block (image or document), or
// a text block with the note.
func anthropicFile(f *File) map[string]any {
	kind, note := anthropicAttach.accept(f, "anthropic")
	src := map[string]any{"type": "base64", "media_type": f.MIME, "data": f.Base64()}
	switch kind {
	case "image":
		return map[string]any{"type": "image", "source": src}
	case "pdf":
		return map[string]any{"type": "document", "source": src, "title": f.Name()}
	}
	return map[string]any{"type": "text", "text": note}
}

// openaiFile is f as a Responses input part (input_image, input_file), or
// an input_text with the note.
func openaiFile(f *File) map[string]any {
	kind, note := openaiAttach.accept(f, "openai")
	switch kind {
	case "image":
		return map[string]any{"type": "input_image", "image_url": f.DataURL(), "detail": "auto"}
	case "pdf":
		return map[string]any{"type": "input_file", "filename": f.Name(), "file_data": f.DataURL()}
	}
	return map[string]any{"type": "input_text", "text": note}
}

// chatFile is f as a Chat Completions content part (image_url; a PDF as a
// file part where the server documents them), or a text part with the
// note.
func chatFile(f *File, d chatDialect) map[string]any {
	limit, wire := chatAttach, "chat_completions"
	if d.pdf {
		limit = chatPDFAttach
	}
	kind, note := limit.accept(f, wire)
	switch kind {
	case "":
		return map[string]any{"type": "text", "text": note}
	case "pdf":
		return map[string]any{"type": "file", "file": map[string]any{"filename": f.Name(), "file_data": f.DataURL()}}
	}
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": f.DataURL()}}
}

// vertexFile is f as a Gemini inlineData part, or a text part with the note.
func vertexFile(f *File) map[string]any {
	if kind, note := vertexAttach.accept(f, "vertex"); kind == "" {
		return map[string]any{"text": note}
	}
	return map[string]any{"inlineData": map[string]any{"mimeType": f.MIME, "data": f.Base64(), "displayName": f.Name()}}
}

// PartExpr is a {{ expr }} of a user message, to be evaluated by the
// engine with the frontmatter's variables (it becomes a PartText). A
// provider never sees one: an unevaluated expression is not sent.
const PartExpr = "expr"

// PartCode is a {% statements %} block of a user message: a fragment of
// the one Lua chunk the engine runs for the message (loops, conditions,
// local variables around its text and expressions). Like PartExpr, a
// provider never sees one.
const PartCode = "code"

// Expr is the code of a {{ }} or a {% %} and the buffer line of its "{".
type Expr struct {
	Code string
	Line int
}

// splitUser cuts a user's text into text, expression, code and file parts:
// the templates first (SplitTemplate: an expression's value is text, never
// a reference), then the file references of the text between them.
func splitUser(text string, line int) []Part {
	var parts []Part
	for _, t := range splitTemplate(text, line) {
		if t.Kind != PartText {
			parts = append(parts, t.Part)
			continue
		}
		for _, p := range splitRefs(t.Text, t.line) {
			if n := len(parts); n > 0 && p.Kind == PartText && parts[n-1].Kind == PartText {
				parts[n-1].Text += p.Text
				continue
			}
			parts = append(parts, p)
		}
	}
	return parts
}

// SplitTemplate cuts a template's text (a user message, or a file a
// template includes) into PartText, PartExpr ({{ expr }}) and PartCode
// ({% statements %}) parts; line is the buffer line of text's first line
// (an Expr's Line counts from it). "\{{" and "\{%" are the
// literal "{{" and "{%"; an opener without its closer is text. A "-" just
// inside a delimiter ("{{-", "-}}", "{%-", "-%}") trims the text beside it:
// the blanks on that side up to and including the nearest newline.
func SplitTemplate(text string, line int) []Part {
	segs := splitTemplate(text, line)
	parts := make([]Part, len(segs))
	for i, s := range segs {
		parts[i] = s.Part
	}
	return parts
}

// segment is a part of a template and the line its text starts on.
type segment struct {
	Part
	line int
}

func splitTemplate(text string, line int) []segment {
	var parts []segment
	var lit strings.Builder // text of the current run, escapes undone
	litStart := 0           // where in text the current run started
	trimNext := false       // the last tag ended with "-": trim the next text's start
	flush := func() {
		s := lit.String()
		lit.Reset()
		if trimNext {
			s = trimStart(s)
			trimNext = false
		}
		if s != "" {
			parts = append(parts, segment{Part{Kind: PartText, Text: s}, line + strings.Count(text[:litStart], "\n")})
		}
	}
	for i := 0; ; {
		j := nextOpener(text, i)
		if j < 0 {
			lit.WriteString(text[i:])
			flush()
			return parts
		}
		code := text[j+1] == '%'
		if j > 0 && text[j-1] == '\\' {
			lit.WriteString(text[i:j-1] + text[j:j+2])
			i = j + 2
			continue
		}
		start := j + 2
		trimBefore := start < len(text) && text[start] == '-'
		if trimBefore {
			start++
		}
		var end int
		if code {
			end = codeEnd(text, start)
		} else {
			end = exprEnd(text, start)
		}
		if end < 0 {
			lit.WriteString(text[i:])
			flush()
			return parts
		}
		lit.WriteString(text[i:j])
		if trimBefore {
			s := trimEnd(lit.String())
			lit.Reset()
			lit.WriteString(s)
		}
		flush()
		body := text[start:end]
		trimAfter := strings.HasSuffix(body, "-")
		if trimAfter {
			body = body[:len(body)-1]
		}
		kind := PartExpr
		if code {
			kind = PartCode
		}
		at := line + strings.Count(text[:j], "\n")
		parts = append(parts, segment{Part{Kind: kind, Expr: &Expr{Code: body, Line: at}}, at})
		trimNext = trimAfter
		i, litStart = end+2, end+2
	}
}

// nextOpener is the index of the next "{{" or "{%" at or after i, or -1.
func nextOpener(s string, i int) int {
	for {
		k := strings.IndexByte(s[i:], '{')
		if k < 0 || i+k+1 >= len(s) {
			return -1
		}
		if c := s[i+k+1]; c == '{' || c == '%' {
			return i + k
		}
		i += k + 1
	}
}

// trimEnd removes the blanks at the end of s up to and including the last
// newline among them (all of them when there is no newline).
func trimEnd(s string) string {
	t := strings.TrimRight(s, " \t")
	if strings.HasSuffix(t, "\n") {
		t = strings.TrimSuffix(strings.TrimSuffix(t, "\n"), "\r")
	}
	return t
}

// trimStart removes the blanks at the start of s up to and including the
// first newline among them.
func trimStart(s string) string {
	t := strings.TrimLeft(s, " \t")
	t = strings.TrimPrefix(t, "\r")
	return strings.TrimPrefix(t, "\n")
}

// codeEnd returns the index of the "%}" closing a statement block whose
// code starts at i, skipping Lua strings and comments; -1 if none.
func codeEnd(s string, i int) int {
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '-':
			if i+1 < len(s) && s[i+1] == '-' {
				if k := strings.IndexByte(s[i:], '\n'); k >= 0 {
					i += k
				} else {
					return -1
				}
			}
		case '%':
			if i+1 < len(s) && s[i+1] == '}' {
				return i
			}
		}
	}
	return -1
}

// exprEnd returns the index of the "}}" closing an expression whose code
// starts at i, skipping Lua strings and nested braces; -1 if none.
func exprEnd(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			if depth == 0 && i+1 < len(s) && s[i+1] == '}' {
				return i
			}
			if depth > 0 {
				depth--
			}
		}
	}
	return -1
}
