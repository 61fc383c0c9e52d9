// Package sandbox confines what a tool call may touch: the path policy
// (writable roots, deny_read, protected paths), file access that never
// follows a symlink, the process supervisor of commands, and bubblewrap.
// It imports nothing of the tool runtime: package tools (Env.Sandbox) and
// tools/builtin use it.
//
// Security, in the order a call meets it:
//
//   - paths: every path is resolved (`~`, relative to the chat file's
//     directory, `..`, symlinks) before Sandbox.CheckRead / CheckWrite judge
//     it; writes must land inside a writable root; deny_read globs (matched
//     case- and Unicode-insensitively) refuse reads and writes; per-process
//     files under /proc are never read, /proc, /sys and /dev never written;
//     `/`, $HOME and their ancestors are never roots, and roots are pinned
//     by device and inode (RootPins);
//   - files: OpenNoFollow, OpenDirNoFollow and WriteFileAtomic open the
//     resolved path component by component without following symlinks
//     (openat + O_NOFOLLOW on Linux); a write goes to a temporary file in
//     the verified directory and is renamed into place after the directory
//     is verified again, and only while the file is still the one expected
//     (Prior);
//   - commands: StartTreeLimited runs a command under a supervisor (Linux) that
//     kills every process it started — detached ones included — when it
//     ends, times out or is cancelled, or when the host dies (KillAll at
//     shutdown); ScrubEnv removes env_deny variables and SocketEnv the
//     user's sockets; under bubblewrap (DetectBackend,
//     Sandbox.WrapCommandFiles) the writable roots are bound by the
//     descriptor of the directory that was verified, the network is cut
//     unless allowed, sockets, deny_read and protected paths are masked;
//     a command inherits no descriptor but stdin, stdout, stderr and those;
//   - the host: HardenProcess keeps other processes of the user from
//     reading its environment; NewOutputDir is its private folder.
package sandbox
