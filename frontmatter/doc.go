// Package frontmatter evaluates a buffer's frontmatter (Lua in an isolated
// gopher-lua VM, or JSON) into per-buffer options and template variables.
//
// It is pure: the VM has no io, os, require or load*, runs under a deadline and
// a memory bound, and nothing it evaluates can reach Neovim or the machine.
package frontmatter
