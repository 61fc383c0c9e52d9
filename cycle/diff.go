package cycle

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/preview"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

// Highlight groups of a diff preview's lines.
const (
	hlDiffAdd    = "DiffAdd"
	hlDiffDelete = "DiffDelete"
	hlDiffError  = "WarningMsg"
)

// diffInlineMax bounds the diff lines shown under a pending placeholder.
const diffInlineMax = 12

// proposes reports whether a call has a diff preview: the built-in
// write/edit (not a Lua tool of the same name) and Lua tools with the
// "diff" capability.
func (h *Engine) proposes(name string) bool {
	t, ok := h.Registry.Get(name)
	if !ok {
		return false
	}
	if lt, lua := t.(*luaTool); lua {
		return lt.hasDiff
	}
	return h.proposer.Proposes(name)
}

// reviewable reports whether the user's version of a proposal can become
// the call's input: write/edit, and Lua tools with a review function.
func (h *Engine) reviewable(name string) bool {
	t, ok := h.Registry.Get(name)
	if lt, lua := t.(*luaTool); ok && lua {
		return lt.hasReview
	}
	return ok && h.proposer.Proposes(name)
}

// propose computes what a pending write/edit would leave in its file, by
// the tool's own steps and under the sandbox the call would run in (a
// deny_read file is refused before it is opened).
func (sess *session) propose(tu *buffer.ToolUse, s *Snapshot) (tools.Proposal, error) {
	h, bufnr := sess.h, sess.bufnr
	sess.mu.Lock()
	var fm = sess.fm
	sess.mu.Unlock()
	env, err := sess.callEnv(fm, s.Cwd, s.Name, false)
	if err != nil {
		return tools.Proposal{}, err
	}
	input := tu.Input()
	if input == nil {
		input = map[string]any{}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return tools.Proposal{}, err
	}
	call := tools.Call{ID: tu.ID, Tool: tu.Name, Bufnr: bufnr, Cwd: s.Cwd, Buffer: s.Name, Env: env}
	if t, _ := h.Registry.Get(tu.Name); t != nil && isLua(t) {
		return h.proposeLua(call, fm, input)
	}
	return h.proposer.Propose(call, tu.Name, raw)
}

// proposeLua asks a Lua tool's diff function what it would write, and
// reads the file as it is. The path is the model's to choose, so the file
// is read after the read check that attachments get: deny_read applies
// even with the sandbox disabled for tools.
func (h *Engine) proposeLua(call tools.Call, fm *frontmatter.Result, input map[string]any) (tools.Proposal, error) {
	d, err := h.lua.Diff(call.Tool, input, ToolInfo{Bufnr: call.Bufnr, Cwd: call.Cwd, Buffer: call.Buffer, ToolID: call.ID})
	switch {
	case err != nil:
		h.logf("diff of %s (%s): %v", call.Tool, call.ID, err)
		return tools.Proposal{}, errors.New("its diff function could not be called")
	case d == nil:
		return tools.Proposal{}, errors.New("its diff function declined this call")
	case d.Error != "":
		return tools.Proposal{}, fmt.Errorf("its diff function failed: %s", d.Error)
	case !filepath.IsAbs(d.Path):
		return tools.Proposal{}, fmt.Errorf("its diff function named no absolute path (%q)", d.Path)
	}
	sb, err := h.attachSandbox(fm, call.Cwd, call.Buffer)
	if err != nil {
		return tools.Proposal{}, err
	}
	return h.proposer.ProposeContent(sb, d.Path, d.Input, []byte(d.Content))
}

// diffLines are the virtual lines of a pending write/edit's diff preview
// (nil for any other call).
func (sess *session) diffLines(tu *buffer.ToolUse, s *Snapshot) []MarkLine {
	h := sess.h
	if !h.proposes(tu.Name) {
		return nil
	}
	p, err := sess.propose(tu, s)
	if err != nil {
		e := preview.DiffPreview([]preview.DiffLine{{Kind: '@', Text: "✗ " + err.Error()}}, s.Width, 1, preview.Options{AmbiguousWide: s.Ambiwidth == "double"})
		return []MarkLine{{Text: e[0].Text, HL: hlDiffError}}
	}
	key := diffKey(p, s)
	h.mu.Lock()
	cached, ok := h.diffs[key]
	h.mu.Unlock()
	if ok {
		return cached
	}
	out := h.diffMarkLines(p, s)
	h.mu.Lock()
	if h.diffs == nil || len(h.diffs) >= 64 {
		h.diffs = map[[sha256.Size]byte][]MarkLine{}
	}
	h.diffs[key] = out
	h.mu.Unlock()
	return out
}

// diffKey identifies a diff preview by what it is computed from: the
// contents on both sides and the window's width and ambiwidth.
func diffKey(p tools.Proposal, s *Snapshot) [sha256.Size]byte {
	hs := sha256.New()
	old, new := sha256.Sum256(p.Old), sha256.Sum256(p.New)
	hs.Write(old[:])
	hs.Write(new[:])
	fmt.Fprintf(hs, "%d %s %v", s.Width, s.Ambiwidth, p.Exists)
	var k [sha256.Size]byte
	copy(k[:], hs.Sum(nil))
	return k
}

func (h *Engine) diffMarkLines(p tools.Proposal, s *Snapshot) []MarkLine {
	d := preview.Diff(string(p.Old), string(p.New), 1)
	if len(d) == 0 {
		return []MarkLine{{Text: "(no change)", HL: hlPreview}}
	}
	out := []MarkLine{}
	for _, l := range preview.DiffPreview(d, s.Width, diffInlineMax, preview.Options{AmbiguousWide: s.Ambiwidth == "double"}) {
		hl := hlPreview
		switch l.Kind {
		case '+':
			hl = hlDiffAdd
		case '-':
			hl = hlDiffDelete
		}
		out = append(out, MarkLine{Text: l.Text, HL: hl})
	}
	return out
}

// DiffReply is the full diff of a pending write/edit (:Flemma tool:diff):
// the file as it is and the proposal, as lines, for a side-by-side view.
type DiffReply struct {
	Reply
	Bufnr  int    `msgpack:"bufnr"`
	ID     string `msgpack:"id"`
	Tool   string `msgpack:"tool"`
	Path   string `msgpack:"path"` // the path as the call gives it
	Exists bool   `msgpack:"exists"`
	// Reviewable: :w in the proposal makes the user's version the input
	// (false for a Lua tool without a review function: view only).
	Reviewable bool     `msgpack:"reviewable"`
	Old        []string `msgpack:"old"`
	New        []string `msgpack:"new"`
}

// onDiffAt answers :Flemma tool:diff (and <CR>) on a block: the proposal of
// the write/edit under the cursor, for a pending or approved call that has
// not run.
func (h *Engine) onDiffAt(bufnr, line int) (DiffReply, error) {
	sess := h.session(bufnr)
	s, err := sess.snapshot()
	if err != nil {
		return DiffReply{}, err
	}
	doc := parse(s.Lines)
	var tu *buffer.ToolUse
	switch u, r := doc.BlockAt(line); {
	case u != nil:
		tu = u
	case r != nil:
		tu = doc.Use(r.ToolUseID)
	}
	if tu == nil {
		return DiffReply{Reply: reply("none", "No tool block under the cursor.", levelWarn)}, nil
	}
	if !h.proposes(tu.Name) {
		return DiffReply{Reply: reply("none", fmt.Sprintf("%s has no diff: only write, edit and tools with the diff capability do.", tu.Name), levelInfo)}, nil
	}
	if r := doc.Result(tu.ID); r == nil || r.Status == "" || r.Content != "" || (r.Status != buffer.StatusPending && r.Status != buffer.StatusApproved) {
		return DiffReply{Reply: reply("none", fmt.Sprintf("%s (%s) is not waiting to run: nothing to review.", tu.Name, tu.ID), levelInfo)}, nil
	}
	p, err := sess.propose(tu, s)
	if err != nil {
		return DiffReply{Reply: reply("none", fmt.Sprintf("No diff for %s (%s): %v", tu.Name, tu.ID, err), levelWarn)}, nil
	}
	return DiffReply{Reply: reply("diff", "", 0), Bufnr: bufnr, ID: tu.ID, Tool: tu.Name, Path: p.Input, Exists: p.Exists,
		Reviewable: h.reviewable(tu.Name), Old: preview.SplitLines(string(p.Old)), New: preview.SplitLines(string(p.New))}, nil
}

// joinAs joins reviewed lines the way the proposal is written: its line
// break (CRLF when it has one) and its final line break.
func joinAs(lines []string, like []byte) string {
	sep := "\n"
	if bytes.Contains(like, []byte("\r\n")) {
		sep = "\r\n"
	}
	out := strings.Join(lines, sep)
	if len(lines) > 0 && (len(like) == 0 || bytes.HasSuffix(like, []byte("\n"))) {
		out += sep
	}
	return out
}

// reviewedEdit turns a reviewed full content into the smallest edit that
// makes it from old: the differing lines, widened by a line on each side
// until oldText is unique in old (edit's own rule). ok is false when no
// such edit exists (then the caller writes the whole content).
func reviewedEdit(old, reviewed string) (oldText, newText string, ok bool) {
	a, b := strings.SplitAfter(old, "\n"), strings.SplitAfter(reviewed, "\n")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	sfx := 0
	for sfx < len(a)-p && sfx < len(b)-p && a[len(a)-1-sfx] == b[len(b)-1-sfx] {
		sfx++
	}
	lo, hiA, hiB := p, len(a)-sfx, len(b)-sfx
	for {
		oldText, newText = strings.Join(a[lo:hiA], ""), strings.Join(b[lo:hiB], "")
		if oldText != "" && strings.Count(old, oldText) == 1 && countOverlapping(old, oldText) == 1 {
			return oldText, newText, true
		}
		if lo == 0 && hiA == len(a) {
			return "", "", false
		}
		if lo > 0 {
			lo--
		}
		if hiA < len(a) {
			hiA, hiB = hiA+1, hiB+1
		}
	}
}

func countOverlapping(s, sub string) int {
	n := 0
	for pos := 0; pos <= len(s); {
		i := strings.Index(s[pos:], sub)
		if i < 0 {
			break
		}
		n++
		pos += i + 1
	}
	return n
}

// onReview is :w in the proposal of a diff view: the user's reviewed version
// of a pending write/edit becomes the call's input (a write's content; an
// edit's oldText/newText narrowed to what differs) and the call is
// approved by the user, in one step. Its result will say the user
// modified the change. The same version as proposed is a plain approval.
func (h *Engine) onReview(bufnr int, id string, lines []string) (Reply, error) {
	sess := h.session(bufnr)
	return sess.withStep(true, func() (Reply, error) {
		modified := false
		err := sess.step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
			tu, r := doc.Use(id), doc.Result(id)
			if tu == nil || !h.proposes(tu.Name) {
				return nil, ApplyOpts{}, fmt.Errorf("the write/edit call %s is no longer in the buffer", id)
			}
			if r == nil || r.Content != "" || (r.Status != buffer.StatusPending && r.Status != buffer.StatusApproved) {
				return nil, ApplyOpts{}, fmt.Errorf("%s (%s) is no longer waiting to run", tu.Name, id)
			}
			p, err := sess.propose(tu, s)
			if err != nil {
				return nil, ApplyOpts{}, err
			}
			reviewed := joinAs(lines, p.New)
			if reviewed == string(p.Old) && p.Exists {
				return nil, ApplyOpts{}, errors.New("the reviewed version leaves the file as it is: reject the call instead")
			}
			var edits []buffer.Edit
			use := tu
			modified = reviewed != string(p.New)
			if modified {
				input := map[string]any{}
				for k, v := range tu.Input() {
					input[k] = v
				}
				if t, _ := h.Registry.Get(tu.Name); t != nil && isLua(t) {
					if input, err = sess.reviewLua(tu, s, p, reviewed); err != nil {
						return nil, ApplyOpts{}, err
					}
				} else if tu.Name == "write" {
					input["content"] = reviewed
				} else if oldText, newText, ok := reviewedEdit(string(p.Old), reviewed); ok {
					input["oldText"], input["newText"] = oldText, newText
				} else {
					return nil, ApplyOpts{}, errors.New("the reviewed version cannot be made an edit of a unique text of the file")
				}
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(input); err != nil {
					return nil, ApplyOpts{}, err
				}
				body := strings.TrimSuffix(b.String(), "\n")
				edits = append(edits, buffer.Edit{Start: tu.FenceLine, End: tu.EndLine - 1, Lines: []string{body}})
				u := *tu
				u.Args, u.RawInput = input, body
				use = &u
			}
			if r.Status != buffer.StatusApproved {
				e, err := buffer.SetStatus(doc, s.Lines, id, buffer.StatusApproved)
				if err != nil {
					return nil, ApplyOpts{}, err
				}
				edits = append(edits, e)
			}
			sess.mu.Lock()
			rec := decided(sess.trustOf().ledger, use, buffer.StatusApproved, trust.ByUser)
			sess.mu.Unlock()
			return edits, ApplyOpts{Records: []WireRecord{rec}}, nil
		})
		if err != nil {
			return reply("none", "Review not applied: "+err.Error(), levelWarn), nil
		}
		sess.mu.Lock()
		if sess.reviewed == nil {
			sess.reviewed = map[string]bool{}
		}
		sess.reviewed[id] = modified
		sess.mu.Unlock()
		if modified {
			return reply("status", "Your reviewed version is approved; it runs on the next <C-]>.", levelInfo), nil
		}
		return reply("status", "Approved as proposed; it runs on the next <C-]>.", levelInfo), nil
	})
}

// reviewLua asks a Lua tool's review function for the input that writes
// the user's version, and checks it does: its diff function, given that
// input, must name the same file and give that content.
func (sess *session) reviewLua(tu *buffer.ToolUse, s *Snapshot, p tools.Proposal, reviewed string) (map[string]any, error) {
	h := sess.h
	if !h.reviewable(tu.Name) {
		return nil, fmt.Errorf("%s takes no reviewed version (it has no review function): approve or reject it as proposed", tu.Name)
	}
	r, err := h.lua.ReviewInput(tu.Name, tu.Input(), reviewed)
	if err != nil {
		h.logf("review of %s (%s): %v", tu.Name, tu.ID, err)
		return nil, fmt.Errorf("the review function of %s could not be called", tu.Name)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("the review function of %s failed: %s", tu.Name, r.Error)
	}
	check := *tu
	check.Args = r.Input
	if check.Args == nil {
		check.Args = map[string]any{} // propose reads none as {}
	}
	q, err := sess.propose(&check, s)
	if err != nil {
		return nil, fmt.Errorf("the input from the review function of %s has no diff: %v", tu.Name, err)
	}
	if q.Path != p.Path || string(q.New) != reviewed {
		return nil, fmt.Errorf("the input from the review function of %s does not write your version of %s", tu.Name, p.Input)
	}
	return r.Input, nil
}

func isLua(t tools.Tool) bool {
	_, ok := t.(*luaTool)
	return ok
}

// reviewedNote is put before the result of a call the user modified in a
// diff view, so the model knows the file has the user's version.
const reviewedNote = "Note: the user reviewed this change and modified it before it ran; the file now has the user's version, which differs from what you proposed. Read the file before changing it again.\n\n"

// onSetStatusID is SetStatus for a call named by its id (from a diff view,
// away from the chat buffer's cursor).
func (h *Engine) onSetStatusID(bufnr int, id, status, msg string) (Reply, error) {
	sess := h.session(bufnr)
	return sess.withStep(true, func() (Reply, error) {
		if err := sess.setStatus(id, buffer.Status(status), msg); err != nil {
			return reply("none", err.Error(), levelError), nil
		}
		return reply("status", "", 0), nil
	})
}

// noProposer is the Proposer of an engine given none: no tool proposes,
// nothing can be undone.
type noProposer struct{}

func (noProposer) Proposes(string) bool { return false }
func (noProposer) Propose(tools.Call, string, json.RawMessage) (tools.Proposal, error) {
	return tools.Proposal{}, errors.New("no proposer")
}
func (noProposer) ProposeContent(*sandbox.Sandbox, string, string, []byte) (tools.Proposal, error) {
	return tools.Proposal{}, errors.New("no proposer")
}
func (noProposer) Undo(tools.Change, string) error {
	return errors.New("this host cannot undo changes (it has no built-in write and edit)")
}
