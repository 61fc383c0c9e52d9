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
func loadAttachments(sb *sandbox.Sandbox, r attachRules, msgs []provider.Message) (p attachPlan) {
	failAt := func(line int, msg string) {
		p.Diags = append(p.Diags, Diag{Lnum: line, Severity: "error", Message: msg})
		if p.Stop == "" {
			p.Stop = fmt.Sprintf("line %d: %s", line, msg)
		}
	}
	// The files, each resolved and judged once, before any is read.
	files := map[string]*attachedFile{} // by the path as resolved against the buffer
	var order []*attachedFile
	refs := 0
	judge := func(f *provider.File) *attachedFile {
		abs := sb.Resolve(f.Path)
		if a, ok := files[abs]; ok {
			return a
		}
		a := &attachedFile{}
		files[abs] = a
		order = append(order, a)
		a.resolved, a.err = sb.CheckRead(abs)
		if a.err != nil {
			var de *sandbox.DenyError
			if errors.As(a.err, &de) {
				a.err = fmt.Errorf("refused by the sandbox (%s)", de.Rule)
			} else {
				a.err = readError(a.err)
			}
			return a
		}
		if r.Project != nil && !r.Allowed[a.resolved] && !inProject(a.resolved, r.Project) {
			p.Ask = append(p.Ask, askFile{Path: a.resolved, Ref: f.Ref, Line: f.Line})
		}
		return a
	}
	for mi := range msgs {
		for _, part := range msgs[mi].Parts {
			switch part.Kind {
			case provider.PartFile:
				refs++
				if refs == r.Budget.References+1 {
					failAt(part.File.Line, fmt.Sprintf("more than %d file references in one send (send.budget.references)", r.Budget.References))
				}
				judge(part.File)
			case provider.PartToolResult:
				for _, f := range part.ToolResult.Files {
					judge(f)
				}
			}
		}
	}
	// userErrors stops the send at a user's reference that cannot be
	// attached (a tool result's file only gets its note).
	userErrors := func() bool {
		for mi := range msgs {
			for _, part := range msgs[mi].Parts {
				if part.Kind == provider.PartFile {
					if a := files[sb.Resolve(part.File.Path)]; a.err != nil {
						failAt(part.File.Line, fmt.Sprintf("%s: %v", part.File.Ref, a.err))
					}
				}
			}
		}
		return p.Stop != ""
	}
	if p.Stop != "" || userErrors() {
		return p
	}
	for _, a := range p.Ask {
		p.Diags = append(p.Diags, Diag{Lnum: a.Line, Severity: "error",
			Message: fmt.Sprintf("%s is outside this buffer's project, and the buffer is not trusted: flemma asks before sending it (:Flemma attach:allow)", a.Ref)})
	}
	if len(p.Ask) > 0 {
		names := make([]string, 0, len(p.Ask))
		for _, a := range p.Ask {
			names = append(names, fmt.Sprintf("%s (line %d)", a.Ref, a.Line))
		}
		p.Stop = fmt.Sprintf("this buffer is not trusted and attaches files outside its project: %s. To send them, :Flemma attach:allow (you allow these files for this buffer until Neovim exits, and the message is sent); or remove the references",
			strings.Join(names, ", "))
		return p
	}
	// Sizes before reading: the budget counts each file once.
	var total int64
	for _, a := range order {
		if a.err != nil {
			continue
		}
		a.size, a.err = statAttachment(a.resolved)
		total += max(a.size, 0)
	}
	if userErrors() {
		return p
	}
	if total > r.Budget.AttachmentBytes {
		line := 0
		for mi := range msgs {
			for _, part := range msgs[mi].Parts {
				if part.Kind == provider.PartFile && line == 0 {
					line = part.File.Line
				}
			}
		}
		failAt(line, fmt.Sprintf("the files this send attaches are %s together, more than %s (send.budget.attachment_bytes)",
			tools.FormatSize(total), tools.FormatSize(r.Budget.AttachmentBytes)))
		return p
	}
	for _, a := range order {
		if a.err == nil {
			a.data, a.mime, a.binary, a.err = readAttachment(a.resolved, a.size)
		}
	}
	// The templates, within one time budget and one output budget, before
	// the files go in: a reference a {% %} loop repeats or a branch drops
	// is attached where the template put it, and "the same file as above"
	// names only a file that is above.
	if renderTemplates(sb, r, msgs, &p, failAt); p.Stop != "" {
		return p
	}
	for mi := range msgs {
		m := &msgs[mi]
		for pi := range m.Parts {
			part := &m.Parts[pi]
			switch part.Kind {
			case provider.PartToolResult:
				for _, f := range part.ToolResult.Files {
					a := files[sb.Resolve(f.Path)]
					if a.err != nil {
						f.Note = a.err.Error()
						continue
					}
					if f.MIME == "" {
						f.MIME = a.mime
					}
					f.Data = a.data
				}
			case provider.PartFile:
				f := part.File
				a := files[sb.Resolve(f.Path)]
				if a.err != nil {
					failAt(f.Line, fmt.Sprintf("%s: %v", f.Ref, a.err))
					continue
				}
				if a.sent {
					*part = provider.Part{Kind: provider.PartText, Text: fmt.Sprintf("<file path=%q>[the same file as attached above]</file>", f.Path)}
					continue
				}
				a.sent = true
				binary := a.binary
				if f.MIME == "" {
					f.MIME = a.mime
				} else {
					binary = !strings.HasPrefix(f.MIME, "text/")
				}
				if binary {
					f.Data = a.data
					if !strings.HasPrefix(f.MIME, "image/") && f.MIME != "application/pdf" {
						p.Diags = append(p.Diags, Diag{Lnum: f.Line, Severity: "warning",
							Message: fmt.Sprintf("%s: %s files are not attached (only text, images and PDFs); a note is sent instead", f.Ref, f.MIME)})
					}
					continue
				}
				*part = provider.Part{Kind: provider.PartText, Text: includeText(f, a.data, r.Redact, &p.Diags)}
			}
		}
	}
	if p.Stop != "" {
		return p
	}
	for mi := range msgs {
		msgs[mi].Parts = mergeText(msgs[mi].Parts)
	}
	return p
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
