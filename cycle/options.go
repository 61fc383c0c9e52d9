package cycle

import (
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/options"
)

// effective is the buffer's options now (package options: setup, then this
// session's :Flemma switch/autopilot, then the buffer's frontmatter, which
// can only narrow unless the user trusts the buffer). fm nil: the latest
// evaluated frontmatter of the buffer. Call without h.mu held: the
// registry's answer (which may look for programs) is taken first.
func (sess *session) effective(fm *frontmatter.Result) options.Effective {
	h := sess.h
	usable := h.usableTools()
	sess.mu.Lock()
	if fm == nil {
		fm = sess.fm
	}
	b := options.Buffer{Trusted: sess.trustOf().trusted, Usable: usable}
	sess.mu.Unlock()
	if fm != nil {
		b.FM = &fm.Opts
	}
	h.mu.Lock()
	cfg, rt := h.cfg, h.rt
	h.mu.Unlock()
	return options.Resolve(cfg, rt, b)
}

// logRefused notes, where the selection is acted on (execute, send), the
// tools an untrusted frontmatter selected and setup leaves disabled.
func (sess *session) logRefused(e options.Effective) {
	h, bufnr := sess.h, sess.bufnr
	for _, n := range e.Refused {
		h.logf("buffer %d: flemma.opt.tools selects %s, which setup leaves disabled; an untrusted file cannot enable it", bufnr, n)
	}
}

// usableTools are the registry's tools enabled by default and usable here.
func (h *Engine) usableTools() []string {
	h.refreshEditorCaps() // lsp is usable while a language server runs
	h.mu.Lock()
	fetch := h.cfg.Tools.Fetch.Enabled // setup turns the fetch tool on
	h.mu.Unlock()
	var out []string
	for _, t := range h.Registry.All() {
		on := t.Spec().Enabled || (fetch && t.Spec().Name == "fetch" && t.Spec().Source == "built-in")
		if on && len(h.Registry.Missing(t)) == 0 {
			out = append(out, t.Spec().Name)
		}
	}
	return out
}
