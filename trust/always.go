package trust

import "slices"

// Grants are the user's "always allow" in one buffer for this session
// (:Flemma tool:allow-always on a call that waits): tool names, and for
// bash the command rules the approval analyser named
// (approval.GrantRules: "bash(git status *)"). Only the user's own action adds one: nothing in
// the buffer's text — a file, its frontmatter, a model's answer, a tool's
// output — is ever read as a grant, and grants are never written into it.
// A grant is a policy for later calls: they are decided by it as by a
// rule of the user's config, and the gates (a call planted in a file, one
// that already ran, a protected path) still apply.
//
// A Grants value is never changed in place (With… return a new one), so a
// ledger's Clone may share it.
type Grants struct {
	tools    []string // sorted
	commands []string // command rules, sorted
}

// WithTool returns g with the tool name granted.
func (g *Grants) WithTool(name string) *Grants {
	n := g.copy()
	if !slices.Contains(n.tools, name) {
		n.tools = append(n.tools, name)
		slices.Sort(n.tools)
	}
	return n
}

// WithCommands returns g with the command rules granted.
func (g *Grants) WithCommands(patterns ...string) *Grants {
	n := g.copy()
	for _, p := range patterns {
		if !slices.Contains(n.commands, p) {
			n.commands = append(n.commands, p)
		}
	}
	slices.Sort(n.commands)
	return n
}

func (g *Grants) copy() *Grants {
	if g == nil {
		return &Grants{}
	}
	return &Grants{tools: slices.Clone(g.tools), commands: slices.Clone(g.commands)}
}

// Tool reports whether the tool name is granted.
func (g *Grants) Tool(name string) bool { return g != nil && slices.Contains(g.tools, name) }

// Tools are the granted tool names, sorted.
func (g *Grants) Tools() []string {
	if g == nil {
		return nil
	}
	return slices.Clone(g.tools)
}

// Commands are the granted command rules, sorted.
func (g *Grants) Commands() []string {
	if g == nil {
		return nil
	}
	return slices.Clone(g.commands)
}

// Empty reports whether nothing is granted.
func (g *Grants) Empty() bool { return g == nil || len(g.tools) == 0 && len(g.commands) == 0 }
