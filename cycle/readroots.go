package cycle

import (
	"slices"
	"strings"

	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Reads are confined by policy (issue 28 item 6; seeds 000 and 001: root
// containment). A call of a tool that reads where its input says (the
// reads_path capability: read, grep, find, ls, and Lua tools that declare
// it) is approved by a policy only when the path, resolved like the tool
// resolves it (the buffer's folder, `~`, `..`, symlinks), lies inside a
// readable root: the writable roots (the project: Neovim's cwd, the
// buffer's folder, the temp folder), the roots of sandbox.readable, and
// flemma's folder of full outputs (the notices of truncated results name
// files there). Elsewhere it asks, naming the path; the user's own approval
// reads anywhere deny_read allows. deny_read is still refused everywhere,
// approval or not. With the sandbox disabled reads are not confined, as
// writes are not.

// pathRules are the buffer's path gates, built with its sandbox on first
// use: what a write may not touch by policy (protected paths), and where a
// read by policy may not go.
type pathRules struct {
	h         *Engine
	bufnr     int
	fm        *frontmatter.Result
	cwd, name string

	built bool
	sb    *sandbox.Sandbox
	err   error
	roots []string // the readable roots, canonical; nil with "/" among them
	all   bool     // every path is readable by policy ("/", or the sandbox is off)
	desc  string   // the roots, for the user
}

func (sess *session) pathRules(fm *frontmatter.Result, cwd, name string) *pathRules {
	h, bufnr := sess.h, sess.bufnr
	return &pathRules{h: h, bufnr: bufnr, fm: fm, cwd: cwd, name: name}
}

func (r *pathRules) build() {
	if r.built {
		return
	}
	r.built = true
	if r.sb, r.err = r.h.session(r.bufnr).sandbox(r.fm, r.cwd, r.name); r.err != nil {
		return
	}
	if !r.sb.Enabled() {
		r.all = true
		return
	}
	r.h.mu.Lock()
	extra := r.h.cfg.Sandbox.Readable
	out := r.h.outputDir
	r.h.mu.Unlock()
	more, _ := sandbox.ExpandRoots(extra, r.cwd, r.name)
	r.roots = append(r.sb.Roots(), more...)
	if out != "" {
		r.roots = append(r.roots, sandbox.CanonicalOr(out))
	}
	if slices.Contains(r.roots, "/") {
		r.all = true
	}
	shown := append(r.sb.Roots(), more...)
	if len(shown) == 0 {
		r.desc = "no readable root"
	} else {
		r.desc = "readable roots: " + strings.Join(shown, ", ")
	}
}

// protected says whether a write to path is protected, and by which rule.
func (r *pathRules) protected(path string) (string, bool) {
	if r.build(); r.err != nil {
		return "the sandbox could not be built: " + r.err.Error(), true
	}
	return r.sb.Protected(path)
}

// outside resolves a path a reads_path tool was given and says whether it
// lies outside the readable roots (and which those are).
func (r *pathRules) outside(raw string) (resolved, roots string, out bool) {
	if r.build(); r.err != nil {
		return raw, "the sandbox could not be built: " + r.err.Error(), true
	}
	resolved = sandbox.CanonicalOr(r.sb.Resolve(raw))
	if r.all {
		return resolved, "", false
	}
	for _, root := range r.roots {
		if sandbox.Within(resolved, root) {
			return resolved, "", false
		}
	}
	return resolved, r.desc, true
}

// readsOf is the path a call reads when its tool has the reads_path
// capability ("." — the buffer's folder — when its input names none).
func (h *Engine) readsOf(tu *buffer.ToolUse) (string, bool) {
	t, ok := h.Registry.Get(tu.Name)
	if !ok || !slices.Contains(t.Spec().Capabilities, tools.CapReadsPath) {
		return "", false
	}
	if p, _ := tu.Input()["path"].(string); p != "" {
		return p, true
	}
	return ".", true
}

// pathGates gives the path gates' answers to a call the chain approved,
// when the other gates let it through: whether what it writes is
// protected, whether what it reads is outside the readable roots.
func (h *Engine) pathGates(c *chainCall, tu *buffer.ToolUse, rules *pathRules) {
	if c.Gate.Writes != "" && approval.Gate(c.Chain, c.Gate) == c.Chain {
		c.ProtectedRule, c.Protected = rules.protected(c.Gate.Writes)
	}
	if raw, ok := h.readsOf(tu); ok && approval.Gate(c.Chain, c.Gate) == c.Chain {
		c.Gate.Reads, c.OutsideRoots, c.Outside = rules.outside(raw)
	}
}
