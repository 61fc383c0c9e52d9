// Package builtin holds the built-in tools (All: bash, read, write, edit,
// grep, find, ls, calculator, calculator_async), declared with tools.Typed.
// Their schemas and messages follow reference §7. Each is configured per
// call through tools.Call.Env (sandbox, truncation limits, the read log of
// stale-file protection, the backup directory, shell, …), so a change of
// setup applies to the next call; a nil Env means SPEC §12's defaults.
//
//   - write and edit are refused when the file's content hash differs from
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
//   - bash runs `<shell> -c` through sandbox.StartTreeLimited, wrapped by
//     bubblewrap when the sandbox is enabled and works;
//   - grep, find and ls walk with sandbox's descriptor-based directory
//     access, honour .gitignore/.ignore, and never descend into
//     Env.Exclude.
//
// The host wires: Env.BackupDir on every call, and Undo for
// :Flemma tool:undo with the Changes a Result carries.
package builtin
