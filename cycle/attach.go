package cycle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/builtin"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Attachment bounds. A file is read only up to maxAttachBytes (no provider
// accepts a larger block); a text file included in a user message is
// inlined up to maxIncludeBytes, the rest cut with a marker.
const (
	maxAttachBytes  = 32 << 20
	maxIncludeBytes = 100 << 10
)

// attachSandbox is the sandbox that judges the files a send attaches. A
// reference in a buffer is untrusted (a .chat file from someone else may
// name ~/.ssh/id_ed25519), so deny_read and the /proc rules apply even when
// the sandbox is disabled for tools.
func (h *Engine) attachSandbox(fm *frontmatter.Result, cwd, bufferPath string) (*sandbox.Sandbox, error) {
	sc := h.sandboxConfig(fm)
	sc.Enabled = true
	return sandbox.New(sc, cwd, bufferPath, sandbox.WithRootPins(sandbox.NewRootPins()))
}

// loadAttachments reads every file of msgs through sb: a user's reference
// to a text file becomes that text (between markers), an image or a PDF
// gets its content (the provider decides what it accepts), and a file that
// cannot be read gets a note. A user's reference that cannot be read is an
// error diagnostic on its line, and the send stops (stop names the first);
// a tool result's file that is gone only gets its note.
//
// A {{ expr }} becomes its value (expand); an expression that fails is an
// error diagnostic on its line and stops the send too.
func loadAttachments(sb *sandbox.Sandbox, expand func(string) (string, error), msgs []provider.Message) (diags []Diag, stop string) {
	failAt := func(line int, msg string) {
		diags = append(diags, Diag{Lnum: line, Severity: "error", Message: msg})
		if stop == "" {
			stop = fmt.Sprintf("line %d: %s", line, msg)
		}
	}
	fail := func(f *provider.File, msg string) { failAt(f.Line, msg) }
	for mi := range msgs {
		m := &msgs[mi]
		for pi := range m.Parts {
			p := &m.Parts[pi]
			switch p.Kind {
			case provider.PartExpr:
				v, err := expand(p.Expr.Code)
				if err != nil {
					failAt(p.Expr.Line, fmt.Sprintf("{{%s}}: %v", clipExpr(p.Expr.Code), err))
					continue
				}
				*p = provider.Part{Kind: provider.PartText, Text: v}
			case provider.PartToolResult:
				for _, f := range p.ToolResult.Files {
					data, mime, _, err := readAttachment(sb, f.Path)
					if err != nil {
						f.Note = err.Error()
						continue
					}
					if f.MIME == "" {
						f.MIME = mime
					}
					f.Data = data
				}
			case provider.PartFile:
				f := p.File
				data, mime, binary, err := readAttachment(sb, f.Path)
				if err != nil {
					fail(f, fmt.Sprintf("%s: %v", f.Ref, err))
					continue
				}
				if f.MIME == "" {
					f.MIME = mime
				} else {
					binary = !strings.HasPrefix(f.MIME, "text/")
				}
				if binary {
					f.Data = data
					if !strings.HasPrefix(f.MIME, "image/") && f.MIME != "application/pdf" {
						diags = append(diags, Diag{Lnum: f.Line, Severity: "warning",
							Message: fmt.Sprintf("%s: %s files are not attached (only text, images and PDFs); a note is sent instead", f.Ref, f.MIME)})
					}
					continue
				}
				*p = provider.Part{Kind: provider.PartText, Text: includeText(f, data, &diags)}
			}
		}
	}
	for mi := range msgs {
		msgs[mi].Parts = mergeText(msgs[mi].Parts)
	}
	return diags, stop
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

// hasExprs reports whether msgs hold a {{ }} to evaluate.
func hasExprs(msgs []provider.Message) bool {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == provider.PartExpr {
				return true
			}
		}
	}
	return false
}

// includeText is a text file as a user message includes it.
func includeText(f *provider.File, data []byte, diags *[]Diag) string {
	text := string(data)
	cut := ""
	if len(data) > maxIncludeBytes {
		text = strings.ToValidUTF8(string(data[:maxIncludeBytes]), "")
		cut = fmt.Sprintf("\n[cut: the first %s of %s are included]", tools.FormatSize(maxIncludeBytes), tools.FormatSize(int64(len(data))))
		*diags = append(*diags, Diag{Lnum: f.Line, Severity: "warning",
			Message: fmt.Sprintf("%s is %s: only its first %s are sent", f.Ref, tools.FormatSize(int64(len(data))), tools.FormatSize(maxIncludeBytes))})
	}
	text = strings.TrimSuffix(text, "\n")
	return fmt.Sprintf("<file path=%q>\n%s%s\n</file>", f.Path, text, cut)
}

// readAttachment reads the file a reference names, relative to the
// buffer's folder, after the sandbox's read check, never following a
// link, at most maxAttachBytes.
func readAttachment(sb *sandbox.Sandbox, p string) (data []byte, mime string, binary bool, err error) {
	abs := sb.Resolve(p)
	resolved, err := sb.CheckRead(abs)
	if err != nil {
		var de *sandbox.DenyError
		if errors.As(err, &de) {
			return nil, "", false, fmt.Errorf("refused by the sandbox (%s)", de.Rule)
		}
		return nil, "", false, readError(err)
	}
	f, err := sandbox.OpenNoFollow(resolved)
	if err != nil {
		return nil, "", false, readError(err)
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, maxAttachBytes+1))
	if err != nil {
		return nil, "", false, readError(err)
	}
	if len(data) > maxAttachBytes {
		return nil, "", false, fmt.Errorf("larger than %s", tools.FormatSize(maxAttachBytes))
	}
	mime, binary = builtin.DetectMIME(resolved, data[:min(len(data), 8192)])
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

// hadAttachDiags reports whether the buffer's last send published
// diagnostics of its attachments (to be cleared once fixed).
func (h *Engine) hadAttachDiags(bufnr int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state(bufnr).attachDiags
}

// attach loads the files of a send (loadAttachments) and publishes their
// diagnostics with the buffer's others. stop reports that the send is
// refused; the reply says why.
func (h *Engine) attach(bufnr int, doc *buffer.Document, fm *frontmatter.Result, s *Snapshot, msgs []provider.Message, work bool) (Reply, bool) {
	var diags []Diag
	var stop string
	if work {
		sb, err := h.attachSandbox(fm, s.Cwd, s.Name)
		if err != nil {
			return reply("send", "Cannot send: the sandbox that checks attached files: "+err.Error(), levelError), true
		}
		var vars map[string]any
		if fm != nil {
			vars = fm.Vars
		}
		expand := func(code string) (string, error) { return h.fm.Expand(vars, code) }
		diags, stop = loadAttachments(sb, expand, msgs)
	}
	h.mu.Lock()
	h.state(bufnr).attachDiags = len(diags) > 0
	h.mu.Unlock()
	all := append(diagnostics(doc, fm, h.notesOf(bufnr)), diags...)
	if err := h.ed.SetDiagnostics(bufnr, all); err != nil {
		h.logf("publish diagnostics: %v", err)
	}
	if stop != "" {
		return reply("send", "Cannot send: "+stop+". Nothing was sent; fix it, or escape it (\\@./path, \\{{).", levelError), true
	}
	return Reply{}, false
}
