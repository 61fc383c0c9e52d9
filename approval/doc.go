// Package approval decides whether a tool call may run: a chain of named
// resolvers ordered by priority, presets, and command rules for bash, each
// decision recording the resolver and rule that made it.
//
// It is pure: resolvers that live in Neovim (Lua functions, module paths,
// resolvers registered from Lua) reach the chain as FuncResolvers that the
// rpc package builds; the frontmatter's auto_approve function arrives the
// same way through Env.FrontmatterFunc.
//
// # The chain
//
// Chain.Decide evaluates resolvers by priority (highest first, ties by name);
// the first valid non-Pass decision wins; if none decides, the outcome is
// require_approval. A resolver that errors, panics or returns an invalid
// decision is logged and skipped. The built-ins (see Builtins):
//
//	100  urn:flemma:approval:config       tools.auto_approve (list or function)
//	100  <module.path>                    module-path resolvers (FuncResolver)
//	 90  urn:flemma:approval:frontmatter  the buffer's flemma.opt.tools.auto_approve
//	 50  (default for Lua-registered resolvers)
//	 25  urn:flemma:approval:sandbox      CapSandboxed tools when sandboxed
//	  0  urn:flemma:approval:catch-all    only when tools.require_approval = false
//
// The config and module-path resolvers stand down for a buffer whose
// frontmatter set auto_approve (Env.FrontmatterSet): the buffer's policy is
// then authoritative, and a Pass from it falls to the lower resolvers, never
// back to the global config. This is what makes the seed's frontmatter
// examples ("start from $default but remove write") gate write although the
// global config approves it.
//
// # Presets and policies
//
// Presets.Expand turns a list of tool names, "$presets" and command rules
// into a Policy: approve and deny sets are unions over the list, unknown
// presets are ignored, deny wins, and exclusions remove approvals only.
//
// # Command rules
//
// "bash(<glob>)" entries match the bash tool's command; see MatchCommand for
// the exact semantics. Approve rules match only a single plain command (a
// conservative byte whitelist); anything with shell syntax falls through.
// Deny rules match the whole command or any simple command inside it, through
// wrappers; a command they cannot analyse makes the policy return
// require_approval, so that no lower resolver approves it.
package approval
