package cycle

import (
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
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

// hadAttachDiags reports whether the buffer's last send published
// diagnostics of its attachments (to be cleared once fixed).
func (st *session) hadAttachDiags() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attachDiags
}

// attach loads the files and templates of a send (loadAttachments) and
// publishes their diagnostics with the buffer's others. stop reports that
// the send is refused; the reply says why.
func (sess *session) attach(doc *buffer.Document, fm *frontmatter.Result, s *Snapshot, msgs []provider.Message, work bool) (Reply, bool) {
	h, bufnr := sess.h, sess.bufnr
	var p attachPlan
	if work {
		sb, err := h.attachSandbox(fm, s.Cwd, s.Name)
		if err != nil {
			return reply("send", "Cannot send: the sandbox that checks attached files: "+err.Error(), levelError), true
		}
		var vars map[string]any
		if fm != nil {
			vars = fm.Vars
		}
		sess.mu.Lock()
		trusted := sess.trustOf().trusted
		allowed := maps.Clone(sess.attachAllowed)
		sess.mu.Unlock()
		rules := attachRules{Budget: h.sendBudget(), Allowed: allowed,
			Templates: func(include frontmatter.IncludeFunc, maxBytes int) (*frontmatter.Renderer, error) {
				return h.fm.NewRenderer(vars, include, maxBytes)
			}}
		deny := h.sandboxConfig(fm).EnvDeny
		if len(deny) == 0 {
			deny = sandbox.DefaultEnvDeny // as sandbox.New fills it in (flemma-host run without --config)
		}
		rules.Redact = func(text string) string { return tools.RedactShapes(tools.Redact(text, nil, deny)) }
		if !trusted {
			rules.Project = projectOf(s)
		}
		p = loadAttachments(sb, rules, msgs)
	}
	sess.mu.Lock()
	sess.attachDiags = len(p.Diags) > 0
	sess.attachAsk = p.Ask
	sess.mu.Unlock()
	all := append(diagnostics(doc, fm, sess.notesCopy()), p.Diags...)
	if err := h.ed.SetDiagnostics(bufnr, all); err != nil {
		h.logf("publish diagnostics: %v", err)
	}
	if len(p.Ask) > 0 {
		return reply("send", "Cannot send yet: "+p.Stop+". Nothing was sent.", levelWarn), true
	}
	if p.Stop != "" {
		return reply("send", "Cannot send: "+p.Stop+". Nothing was sent; fix it, or escape it (\\@./path, \\{{).", levelError), true
	}
	return Reply{}, false
}

// projectOf is the project of a buffer: its folder and Neovim's cwd, links
// resolved.
func projectOf(s *Snapshot) []string {
	var out []string
	for _, d := range []string{filepath.Dir(s.Name), s.Cwd} {
		if d == "" || d == "." || !filepath.IsAbs(d) {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		out = append(out, filepath.Clean(d))
	}
	return out
}

// sendBudget is setup's send.budget, defaults filled in.
func (h *Engine) sendBudget() sendBudget {
	h.mu.Lock()
	c := h.cfg.Send.Budget
	h.mu.Unlock()
	b := sendBudget{TemplateTime: DefaultTemplateTime, TemplateBytes: DefaultTemplateBytes, References: DefaultReferences, AttachmentBytes: DefaultAttachmentBytes}
	if c.TemplateMS != nil && *c.TemplateMS > 0 {
		b.TemplateTime = time.Duration(*c.TemplateMS * float64(time.Millisecond))
	}
	if c.TemplateBytes != nil && *c.TemplateBytes > 0 {
		b.TemplateBytes = *c.TemplateBytes
	}
	if c.References != nil && *c.References > 0 {
		b.References = *c.References
	}
	if c.AttachmentBytes != nil && *c.AttachmentBytes > 0 {
		b.AttachmentBytes = int64(*c.AttachmentBytes)
	}
	return b
}

// onAttachAllow is :Flemma attach:allow: the user allows the files outside
// the project that the buffer's last send asked about, for this buffer
// until Neovim exits (the host keeps them; a restarted host asks again),
// and the send is tried again.
func (h *Engine) onAttachAllow(bufnr int) (Reply, error) {
	st := h.session(bufnr)
	st.mu.Lock()
	ask := st.attachAsk
	if len(ask) > 0 {
		if st.attachAllowed == nil {
			st.attachAllowed = map[string]bool{}
		}
		for _, a := range ask {
			st.attachAllowed[a.Path] = true
		}
		st.attachAsk = nil
	}
	st.mu.Unlock()
	if len(ask) == 0 {
		return reply("none", "No attachment waits for your word in this buffer (a send that needs it says so).", levelInfo), nil
	}
	names := make([]string, 0, len(ask))
	for _, a := range ask {
		names = append(names, a.Path)
	}
	h.logf("attach: the user allows %s in buffer %d", strings.Join(names, ", "), bufnr)
	st.mu.Lock()
	compact := st.attachCompact
	st.mu.Unlock()
	if compact {
		return h.onCompact(bufnr) // the action that asked
	}
	return h.Cycle(bufnr)
}
