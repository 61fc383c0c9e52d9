// Package headless runs flemma's cycle on a .chat file without Neovim
// (`flemma-host run`): the same engine (package cycle) with its parser,
// approval chain and gates, trust rules, sandbox, tools, providers and
// journal, driven through an editor that is a file on disk.
//
// File implements cycle.Editor: the buffer is the file's text in memory,
// every applied step is written back atomically (a temp file in the same
// folder, fsync, rename), and a write is refused when the file changed on
// disk since flemma last read or wrote it, so the user's text is never
// overwritten or lost. NoLua implements cycle.Lua for a process that has
// no Lua: no Lua tools, no Lua resolvers, no custom previews.
//
// Run is one run: load the file, press <C-]> once as the user would, let
// autopilot chain the phases, and report how the run stopped (done, a call
// that needs approval, an error, a cut response, the turn limit) with an
// exit code and, optionally, events as JSON lines.
//
// Trust is the plugin's (docs/security.md): the file as loaded is
// untrusted unless the caller says otherwise (Options.Trust), so the calls
// already in it ask, an "approved" written in it does not count, and its
// frontmatter only narrows the configuration.
package headless
