package cycle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Attachment bounds. A file is read only up to maxAttachBytes (no provider
// accepts a larger block); a text file included in a user message is
// inlined up to maxIncludeBytes, the rest cut with a marker.
const (
	maxAttachBytes  = 32 << 20
	maxIncludeBytes = 100 << 10
)

// sendBudget bounds what one send evaluates (issue 24, class 7): its
// templates' time and output, its references, and the bytes of the files
// it attaches (each file counted once, however often it is named). Setup's
// send.budget sets it; a frontmatter cannot.
type sendBudget struct {
	TemplateTime    time.Duration
	TemplateBytes   int
	References      int
	AttachmentBytes int64
}

// Defaults of send.budget.
const (
	DefaultTemplateTime    = time.Second
	DefaultTemplateBytes   = 1 << 20
	DefaultReferences      = 100
	DefaultAttachmentBytes = 32 << 20
)

// attachRules is what a send's attachments are judged by.
type attachRules struct {
	Budget sendBudget
	// Project holds the folders of the buffer's project (its folder and
	// Neovim's cwd, links resolved). When set (the buffer is not
	// trusted), a file elsewhere, or inside a folder or file whose name
	// starts with "." under them (.git, .env, .npmrc, …), is attached only
	// when Allowed holds it; otherwise it is asked about (attachPlan.Ask).
	Project []string
	Allowed map[string]bool
	// Redact is applied to the text of every file included (secrets by
	// shape and the values of secret variables).
	Redact func(string) string
	// Templates makes the renderer of a send's templates ({{ }}, {% %},
	// include()), which may write maxBytes together.
	Templates func(include frontmatter.IncludeFunc, maxBytes int) (*frontmatter.Renderer, error)
}

// askFile is a file outside the project of an untrusted buffer that a send
// would attach: the user's word is needed (:Flemma attach:allow).
type askFile struct {
	Path string // resolved
	Ref  string // as written
	Line int
}

// attachPlan is what loadAttachments decided.
type attachPlan struct {
	Diags []Diag
	Stop  string    // why nothing may be sent ("" = send)
	Ask   []askFile // files waiting for the user's word (Stop says so)
}

// attachedFile is one file a send attaches: read once however often it is
// named.
type attachedFile struct {
	resolved string
	size     int64
	data     []byte
	mime     string
	binary   bool
	err      error
	sent     bool // its content is in the request already (a later reference notes it)
}

// loadAttachments loads what a send evaluates, within r.Budget, checked
// before anything is read: the files of msgs (a user's reference to a text
// file becomes that text between markers, redacted; an image or a PDF gets
// its content; a file that cannot be read gets a note) and the {{ expr }}
// of user messages (their values). A user's reference that cannot be read,
// a file outside the project of an untrusted buffer, a template that
// fails and a budget exceeded are each an error diagnostic on its line, and
// the send stops (Stop names the first); a tool result's file that is
// gone only gets its note. A file named again in the same send is sent once:
// later references say so.
func loadAttachments(sb *sandbox.Sandbox, r attachRules, msgs []provider.Message) attachPlan {
	l := &attachLoad{sb: sb, r: r, msgs: msgs, files: map[string]*attachedFile{}}
	// The files, each resolved and judged once, before any is read; then
	// their sizes against the budget; then their content.
	if l.judgeAll(); l.p.Stop != "" || l.userErrors() || l.ask() {
		return l.p
	}
	if l.sizes(); l.p.Stop != "" {
		return l.p
	}
	for _, a := range l.order {
		if a.err == nil {
			a.data, a.mime, a.binary, a.err = readAttachment(a.resolved, a.size)
		}
	}
	// The templates, within one time budget and one output budget, before
	// the files go in: a reference a {% %} loop repeats or a branch drops
	// is attached where the template put it, and "the same file as above"
	// names only a file that is above.
	if renderTemplates(sb, r, msgs, &l.p, l.failAt); l.p.Stop != "" {
		return l.p
	}
	for mi := range msgs {
		m := &msgs[mi]
		for pi := range m.Parts {
			switch part := &m.Parts[pi]; part.Kind {
			case provider.PartToolResult:
				l.fillResult(part.ToolResult)
			case provider.PartFile:
				l.fillReference(part)
			}
		}
	}
	if l.p.Stop != "" {
		return l.p
	}
	for mi := range msgs {
		msgs[mi].Parts = mergeText(msgs[mi].Parts)
	}
	return l.p
}

// attachLoad is one loadAttachments: the send's messages, the files they
// name (by the path as resolved against the buffer) and the plan so far.
type attachLoad struct {
	sb    *sandbox.Sandbox
	r     attachRules
	msgs  []provider.Message
	files map[string]*attachedFile
	order []*attachedFile
	p     attachPlan
}

// failAt is an error diagnostic on line; the first one stops the send.
func (l *attachLoad) failAt(line int, msg string) {
	l.p.Diags = append(l.p.Diags, Diag{Lnum: line, Severity: "error", Message: msg})
	if l.p.Stop == "" {
		l.p.Stop = fmt.Sprintf("line %d: %s", line, msg)
	}
}

// judgeAll judges every file of the send once, within the budget of
// references.
func (l *attachLoad) judgeAll() {
	refs := 0
	for mi := range l.msgs {
		for _, part := range l.msgs[mi].Parts {
			switch part.Kind {
			case provider.PartFile:
				if refs++; refs == l.r.Budget.References+1 {
					l.failAt(part.File.Line, fmt.Sprintf("more than %d file references in one send (send.budget.references)", l.r.Budget.References))
				}
				l.judge(part.File)
			case provider.PartToolResult:
				for _, f := range part.ToolResult.Files {
					l.judge(f)
				}
			}
		}
	}
}

// judge resolves f and checks it may be read (deny_read; the project of an
// untrusted buffer, which asks), once per file.
func (l *attachLoad) judge(f *provider.File) {
	abs := l.sb.Resolve(f.Path)
	if _, ok := l.files[abs]; ok {
		return
	}
	a := &attachedFile{}
	l.files[abs] = a
	l.order = append(l.order, a)
	a.resolved, a.err = l.sb.CheckRead(abs)
	if a.err != nil {
		var de *sandbox.DenyError
		if errors.As(a.err, &de) {
			a.err = fmt.Errorf("refused by the sandbox (%s)", de.Rule)
		} else {
			a.err = readError(a.err)
		}
		return
	}
	if l.r.Project != nil && !l.r.Allowed[a.resolved] && !inProject(a.resolved, l.r.Project) {
		l.p.Ask = append(l.p.Ask, askFile{Path: a.resolved, Ref: f.Ref, Line: f.Line})
	}
}

// file is the judged file of a reference.
func (l *attachLoad) file(f *provider.File) *attachedFile { return l.files[l.sb.Resolve(f.Path)] }

// userErrors stops the send at a user's reference that cannot be attached
// (a tool result's file only gets its note).
func (l *attachLoad) userErrors() bool {
	for mi := range l.msgs {
		for _, part := range l.msgs[mi].Parts {
			if part.Kind == provider.PartFile {
				if a := l.file(part.File); a.err != nil {
					l.failAt(part.File.Line, fmt.Sprintf("%s: %v", part.File.Ref, a.err))
				}
			}
		}
	}
	return l.p.Stop != ""
}

// ask stops the send at files outside the project of an untrusted buffer,
// naming them: the user's word is needed (:Flemma attach:allow).
func (l *attachLoad) ask() bool {
	if len(l.p.Ask) == 0 {
		return false
	}
	names := make([]string, 0, len(l.p.Ask))
	for _, a := range l.p.Ask {
		l.p.Diags = append(l.p.Diags, Diag{Lnum: a.Line, Severity: "error",
			Message: fmt.Sprintf("%s is outside this buffer's project, and the buffer is not trusted: flemma asks before sending it (:Flemma attach:allow)", a.Ref)})
		names = append(names, fmt.Sprintf("%s (line %d)", a.Ref, a.Line))
	}
	l.p.Stop = fmt.Sprintf("this buffer is not trusted and attaches files outside its project: %s. To send them, :Flemma attach:allow (you allow these files for this buffer until Neovim exits, and the message is sent); or remove the references",
		strings.Join(names, ", "))
	return true
}

// sizes takes the size of every file before any is read: the budget
// counts each file once.
func (l *attachLoad) sizes() {
	var total int64
	for _, a := range l.order {
		if a.err != nil {
			continue
		}
		a.size, a.err = statAttachment(a.resolved)
		total += max(a.size, 0)
	}
	if l.userErrors() || total <= l.r.Budget.AttachmentBytes {
		return
	}
	line := 0
	for mi := range l.msgs {
		for _, part := range l.msgs[mi].Parts {
			if part.Kind == provider.PartFile && line == 0 {
				line = part.File.Line
			}
		}
	}
	l.failAt(line, fmt.Sprintf("the files this send attaches are %s together, more than %s (send.budget.attachment_bytes)",
		tools.FormatSize(total), tools.FormatSize(l.r.Budget.AttachmentBytes)))
}

// fillResult gives a tool result's files their content, or a note.
func (l *attachLoad) fillResult(tr *provider.ToolResult) {
	for _, f := range tr.Files {
		a := l.file(f)
		if a.err != nil {
			f.Note = a.err.Error()
			continue
		}
		if f.MIME == "" {
			f.MIME = a.mime
		}
		f.Data = a.data
	}
}

// fillReference puts a user's reference's content in place: a text file
// inlined (redacted), an image or a PDF as its bytes, a file named again
// as a note that it is above.
func (l *attachLoad) fillReference(part *provider.Part) {
	f := part.File
	a := l.file(f)
	if a.err != nil {
		l.failAt(f.Line, fmt.Sprintf("%s: %v", f.Ref, a.err))
		return
	}
	if a.sent {
		*part = provider.Part{Kind: provider.PartText, Text: fmt.Sprintf("<file path=%q>[the same file as attached above]</file>", f.Path)}
		return
	}
	a.sent = true
	binary := a.binary
	if f.MIME == "" {
		f.MIME = a.mime
	} else {
		binary = !strings.HasPrefix(f.MIME, "text/")
	}
	if !binary {
		*part = provider.Part{Kind: provider.PartText, Text: includeText(f, a.data, l.r.Redact, &l.p.Diags)}
		return
	}
	f.Data = a.data
	if !strings.HasPrefix(f.MIME, "image/") && f.MIME != "application/pdf" {
		l.p.Diags = append(l.p.Diags, Diag{Lnum: f.Line, Severity: "warning",
			Message: fmt.Sprintf("%s: %s files are not attached (only text, images and PDFs); a note is sent instead", f.Ref, f.MIME)})
	}
}

// inProject reports whether path (resolved) lies inside one of the
// project's folders, and not inside anything there whose name starts with
// "." (.git, .env, .ssh, .npmrc: configuration and credentials).
func inProject(path string, project []string) bool {
	for _, root := range project {
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			continue
		}
		hidden := false
		for _, c := range strings.Split(rel, string(filepath.Separator)) {
			if strings.HasPrefix(c, ".") && c != "." {
				hidden = true
			}
		}
		if !hidden {
			return true
		}
	}
	return false
}

// mergeText joins adjacent text parts: an included file or a template's
// value reads as part of the sentence around it.
func mergeText(parts []provider.Part) []provider.Part {
	out := parts[:0]
	for _, p := range parts {
		if n := len(out); n > 0 && p.Kind == provider.PartText && out[n-1].Kind == provider.PartText {
			out[n-1].Text += p.Text
			continue
		}
		out = append(out, p)
	}
	return out
}

// clipExpr shortens an expression for a message.
func clipExpr(code string) string {
	code = strings.Join(strings.Fields(code), " ")
	if r := []rune(code); len(r) > 40 {
		code = string(r[:40]) + "…"
	}
	return " " + code + " "
}

// hasExprs reports whether msgs hold a {{ }} or a {% %} to evaluate.
func hasExprs(msgs []provider.Message) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == provider.PartExpr || p.Kind == provider.PartCode {
				return true
			}
		}
	}
	return false
}

// includeText is a text file as a user message includes it.
func includeText(f *provider.File, data []byte, redact func(string) string, diags *[]Diag) string {
	text := string(data)
	cut := ""
	if len(data) > maxIncludeBytes {
		text = strings.ToValidUTF8(string(data[:maxIncludeBytes]), "")
		cut = fmt.Sprintf("\n[cut: the first %s of %s are included]", tools.FormatSize(maxIncludeBytes), tools.FormatSize(int64(len(data))))
		*diags = append(*diags, Diag{Lnum: f.Line, Severity: "warning",
			Message: fmt.Sprintf("%s is %s: only its first %s are sent", f.Ref, tools.FormatSize(int64(len(data))), tools.FormatSize(maxIncludeBytes))})
	}
	text = strings.TrimSuffix(text, "\n")
	if redact != nil {
		text = redact(text)
	}
	return fmt.Sprintf("<file path=%q>\n%s%s\n</file>", f.Path, text, cut)
}

// statAttachment is the size of the file at resolved (a path CheckRead
// returned), opened without following a link: what reading it will cost.
func statAttachment(resolved string) (int64, error) {
	f, err := sandbox.OpenNoFollow(resolved)
	if err != nil {
		return 0, readError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, readError(err)
	}
	if fi.Size() > maxAttachBytes {
		return 0, fmt.Errorf("larger than %s", tools.FormatSize(maxAttachBytes))
	}
	return fi.Size(), nil
}

// readAttachment reads the file at resolved (a path CheckRead returned),
// never following a link, at most size bytes (statAttachment's answer: a
// file that grew since is cut there, so the budget holds).
func readAttachment(resolved string, size int64) (data []byte, mime string, binary bool, err error) {
	f, err := sandbox.OpenNoFollow(resolved)
	if err != nil {
		return nil, "", false, readError(err)
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, size))
	if err != nil {
		return nil, "", false, readError(err)
	}
	mime, binary = tools.DetectMIME(resolved, data[:min(len(data), 8192)])
	return data, mime, binary, nil
}

func readError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, sandbox.ErrNotRegular):
		return errors.New("file not found")
	case errors.Is(err, sandbox.ErrIsDir):
		return errors.New("is a directory")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("permission denied")
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot read: %v", pe.Err)
	}
	return fmt.Errorf("cannot read: %v", err)
}
