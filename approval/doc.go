// Package approval decides whether a tool call may run: a chain of named
// resolvers ordered by priority, presets, and command rules for bash, each
// decision recording the resolver and rule that made it.
//
// It is pure: resolvers that live in Neovim (Lua functions, module paths,
// resolvers registered from Lua) reach the chain as FuncResolvers that the
// cycle package builds; the frontmatter's auto_approve function arrives the
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
// A buffer's frontmatter may only narrow (SPEC §5a): the user's resolvers
// never stand down for it. An approval by any other resolver is turned into
// require_approval or deny when the frontmatter's policy denies the call,
// requires approval for it, removed the tool (:remove), or assigned its own
// list without approving the call — which is what makes the seed's
// frontmatter examples ("start from $default but remove write") gate write
// although the global config approves it. The frontmatter resolver's own
// approval counts only in a buffer the user trusts (Env.FrontmatterTrusted).
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
// conservative byte whitelist) whose words the rule's '*' stands for are
// known to be free of writes and execution; anything with shell syntax, and
// any option nobody described, falls through: when the analyser cannot
// prove that a command matches an approve rule, the rule does not match.
//
// Deny rules are checked by a shell analyser (package approval/shell) that
// finds every command a shell text may run — through
// operators, substitutions, redirections placed anywhere, quotes and
// escapes, wrappers with their options parsed (sudo -Eu root, env -iS
// '...', flock -c, xargs -I{}, ...), sh -c and eval strings, git's global
// options and aliases — and the policy denies when a rule matches one.
// When it cannot be sure
// that no deny rule matches, the policy answers require_approval, so that
// no lower resolver approves the call: for an unverifiable command (a
// command word built at run time, a script file or stdin given to a shell,
// inline code in another language, ...) with rule RuleUnverifiable, and for
// a command that may run what a rule names (an unknown command followed by
// the rule's first word, the same program with options before its
// subcommand, ...) with rule RuleMayMatch plus the rule. Asking for
// something harmless ("foo rm" when rm is denied) is accepted; letting a
// denied command through is not. Policy.Decide lists the cases and the
// limits.
package approval
