package cycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// renderTemplates runs the templates of msgs' user messages — their text,
// {{ expr }} and {% statements %} as one Lua chunk per message, in one VM
// for the send (r.Templates) — within the press's time budget and the
// send's output budget, and puts what they wrote in place of the parts.
// A file part the chunk reaches is written where it is reached (a loop may
// repeat it; a branch not taken leaves it out). The first failure is an
// error diagnostic on its line and stops the send.
func renderTemplates(sb *sandbox.Sandbox, r attachRules, msgs []provider.Message, p *attachPlan, failAt func(int, string)) {
	if !hasExprs(msgs) || r.Templates == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Budget.TemplateTime)
	defer cancel()
	inc := &includer{sb: sb, r: r, p: p}
	rd, err := r.Templates(inc.read, r.Budget.TemplateBytes)
	if err != nil {
		failAt(firstExprLine(msgs), err.Error())
		return
	}
	defer rd.Close()
	for mi := range msgs {
		m := &msgs[mi]
		if !hasExprs(msgs[mi : mi+1]) {
			continue
		}
		pieces := piecesOf(m.Parts)
		// Text pieces take the line of the template piece before them.
		line := firstExprLine(msgs[mi : mi+1])
		for i := range pieces {
			if pieces[i].Kind == frontmatter.PieceExpr || pieces[i].Kind == frontmatter.PieceCode {
				line = pieces[i].Line
			} else {
				pieces[i].Line = line
			}
		}
		outs, err := rd.Render(ctx, pieces)
		if err != nil {
			failAt(templateFailure(m.Parts, err, r.Budget))
			return
		}
		parts := make([]provider.Part, 0, len(outs))
		for _, o := range outs {
			if o.Slot >= 0 {
				parts = append(parts, m.Parts[o.Slot])
				continue
			}
			parts = append(parts, provider.Part{Kind: provider.PartText, Text: o.Text})
		}
		m.Parts = parts
	}
}

// templateFailure is the line and message of a failed template.
func templateFailure(parts []provider.Part, err error, b sendBudget) (int, string) {
	var re *frontmatter.RenderError
	if !errors.As(err, &re) {
		return firstExprLine([]provider.Message{{Parts: parts}}), err.Error()
	}
	code := ""
	for _, part := range parts {
		if part.Expr != nil && part.Expr.Line <= re.Line {
			code = part.Expr.Code
			if part.Kind == provider.PartCode {
				code = "%" + clipExpr(code) + "%"
			} else {
				code = "{" + clipExpr(code) + "}"
			}
		}
	}
	msg := re.Msg
	switch {
	case errors.Is(err, frontmatter.ErrTemplateBytes):
		msg = fmt.Sprintf("the templates of this send write more than %s (send.budget.template_bytes)", tools.FormatSize(int64(b.TemplateBytes)))
	case errors.Is(err, frontmatter.ErrTemplateBudget):
		msg = frontmatter.ErrTemplateBudget.Error()
	}
	if code != "" {
		msg = "{" + code + "}: " + msg
	}
	return re.Line, msg
}

// firstExprLine is the line of the first template piece of msgs.
func firstExprLine(msgs []provider.Message) int {
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Expr != nil {
				return p.Expr.Line
			}
		}
	}
	return 0
}

// includer reads the files include() names, by the rules of a user's file
// references: relative to the chat's folder (or to the including file's),
// deny_read, the project of an untrusted buffer (asked about with
// :Flemma attach:allow), text only, at most maxIncludeBytes, redacted.
type includer struct {
	sb *sandbox.Sandbox
	r  attachRules
	p  *attachPlan
}

func (in *includer) read(from, path string) (string, []frontmatter.Piece, error) {
	if path == "" {
		return "", nil, errors.New("empty path")
	}
	abs := in.sb.Resolve(path)
	if from != "" && !filepath.IsAbs(path) && !strings.HasPrefix(path, "~") {
		abs = filepath.Join(filepath.Dir(from), path)
	}
	resolved, err := in.sb.CheckRead(abs)
	if err != nil {
		var de *sandbox.DenyError
		if errors.As(err, &de) {
			return "", nil, fmt.Errorf("refused by the sandbox (%s)", de.Rule)
		}
		return "", nil, readError(err)
	}
	if in.r.Project != nil && !in.r.Allowed[resolved] && !inProject(resolved, in.r.Project) {
		in.p.Ask = append(in.p.Ask, askFile{Path: resolved, Ref: "include('" + path + "')"})
		return "", nil, errors.New("outside this buffer's project, and the buffer is not trusted: flemma asks before reading it (:Flemma attach:allow)")
	}
	size, err := statAttachment(resolved)
	if err != nil {
		return "", nil, err
	}
	if size > maxIncludeBytes {
		return "", nil, fmt.Errorf("larger than %s (a template includes at most that)", tools.FormatSize(maxIncludeBytes))
	}
	data, mime, binary, err := readAttachment(resolved, size)
	if err != nil {
		return "", nil, err
	}
	if binary {
		return "", nil, fmt.Errorf("a %s file is not a template (attach it with @%s instead)", mime, path)
	}
	text := string(data)
	if in.r.Redact != nil {
		text = in.r.Redact(text)
	}
	return resolved, piecesOf(provider.SplitTemplate(text, 1)), nil
}

// piecesOf is a message's parts as a template: its text, expressions and
// statements, and a slot for anything else (a file, a tool result).
func piecesOf(parts []provider.Part) []frontmatter.Piece {
	pieces := make([]frontmatter.Piece, len(parts))
	for i, part := range parts {
		switch part.Kind {
		case provider.PartText:
			pieces[i] = frontmatter.Piece{Kind: frontmatter.PieceText, Text: part.Text}
		case provider.PartExpr:
			pieces[i] = frontmatter.Piece{Kind: frontmatter.PieceExpr, Text: part.Expr.Code, Line: part.Expr.Line}
		case provider.PartCode:
			pieces[i] = frontmatter.Piece{Kind: frontmatter.PieceCode, Text: part.Expr.Code, Line: part.Expr.Line}
		default:
			pieces[i] = frontmatter.Piece{Kind: frontmatter.PieceSlot}
		}
	}
	return pieces
}
