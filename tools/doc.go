// Package tools holds the tool runtime: the registry of Go built-ins and
// Lua-registered tools under one namespace, the typed declaration of built-ins
// (the input struct is the source of the JSON Schema), the executor (schema
// validation, timeouts, cancellation, panic containment, error scrubbing) and
// the built-in tools themselves.
//
// Lifecycle of a tool, in order:
//
//  1. declared: a built-in with Typed (panics at start-up if misdefined), or a
//     Lua definition received from Neovim;
//  2. registered: Registry.Add checks the name and duplicates;
//  3. selected: Registry.Lookup hides tools whose requirements are missing
//     (requires.go: "exe:<name>", "feature:sandbox", "feature:bwrap",
//     "feature:network", features the host declares; Features);
//  4. run: Executor.Run validates the input, enforces the timeout, recovers
//     panics, validates structured output against output_schema, and turns
//     every failure into a Result the model can read; after calls that
//     allocated much (a large output), the last one to end returns the
//     memory to the system (Executor.ReleaseAfter).
//
// The built-ins (Builtins: bash, read, write, edit, grep, find, ls,
// calculator, calculator_async) follow reference §7 for their schemas and
// messages. They are configured per call through Call.Env (sandbox,
// truncation limits, the read log of stale-file protection, the backup
// directory, shell, …), so a change of setup applies to the next call; a
// nil Env means SPEC §12's defaults.
//
// What the host wires once: reg.Have = HaveRequirement (and
// DefaultFeatures.Configure on every setup), NewOutputDir at start (its
// cleanup and KillAll at shutdown), Env.BackupDir on every call, and Undo
// for :Flemma tool:undo with the Changes a Result carries.
//
// Security, in the order a call meets it:
//
//   - paths: every path is resolved (`~`, relative to the chat file's
//     directory, `..`, symlinks) before Sandbox.CheckRead / CheckWrite judge
//     it; writes must land inside a writable root; deny_read globs (matched
//     case- and Unicode-insensitively) refuse reads and writes; per-process
//     files under /proc are never read, /proc, /sys and /dev never written;
//   - files: reads and writes open the resolved path component by component
//     without following symlinks (openat + O_NOFOLLOW on Linux), writes go
//     to a temporary file in the verified directory and are renamed into
//     place after the directory is verified again;
//   - write and edit: refused when the file's content hash differs from
//     what the model last read (or wrote) in this conversation (ReadLog); a
//     file the model never read may be written or edited (unless
//     Env.RequireRead). Just before the rename, the file must still be the
//     one that was read (or still absent): a change made meanwhile by
//     another program is never overwritten;
//   - backups: before write or edit changes a file, its previous content is
//     kept in Env.BackupDir (content-addressed, 0600 in a 0700 folder, no
//     link ever followed, bounded by size and age: backup.go); a change
//     whose backup cannot be kept is refused. Undo puts a file back only
//     while it holds exactly what the tool wrote;
//   - commands: bash runs as `<shell> -c` under a supervisor (Linux; see
//     proc.go) that kills every process the command started — detached
//     ones included — when it ends, times out or is cancelled, or when the
//     host dies (KillAll at shutdown), with env_deny variables removed
//     (ScrubEnv), under bubblewrap when the sandbox is enabled and works
//     (DetectBackend, Sandbox.WrapCommandFiles: the writable roots are
//     bound by the descriptor of the directory that was verified, passed
//     through the supervisor, so a root swapped before bubblewrap mounts
//     it cannot redirect the bind); a command inherits no descriptor but
//     stdin, stdout, stderr and those;
//   - output: Finish strips terminal control sequences (buffer.Sanitize) and
//     replaces the values of secret variables by [redacted] (Redact) before
//     any text enters the buffer.
//
// It is the only package (with provider) that touches the filesystem or starts
// processes.
package tools
