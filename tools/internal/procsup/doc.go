// Package procsup is the process supervisor of package tools on Linux: a
// copy of the host binary, started as /proc/self/exe, that runs one command
// and makes sure that no process the command starts outlives it (see
// tools/proc.go for why this mechanism).
//
// It is its own package, importing only the standard library, so that its
// init function — which recognises the supervisor's invocation, runs it and
// exits — runs early in the initialisation of the binary: before the
// initialisation of heavier packages (a JSON Schema compiler, …) that the
// supervisor does not need and that would slow the start of every command.
//
// The supervisor makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
// every process of the command's tree that loses its parent is re-parented
// to it, whatever it did to detach (setsid, double fork, nohup, disown); it
// reaps them all, and it kills its whole subtree (found through /proc) when
// the command's shell exits, when the host asks, and when its control socket
// with the host reaches EOF — which happens when the host dies, SIGKILL
// included. It exits only when no process of the tree is left.
//
// Invocation: argv[0] Arg0, the environment SupervisorEnv (with Env=1), the
// command's directory as working directory, stdin, stdout and stderr those
// of the command, fd 3 one end of a stream socket, fds 4, 5, … the
// command's extra descriptors (at most MaxFiles), which the command gets as
// 3, 4, … in the same order and nothing else (bubblewrap's --bind-fd
// names them). Over the socket:
//
//	host → supervisor: the command (EncodeCommand: the executable's path,
//	    argv, environment and the number of extra descriptors) — not on
//	    the supervisor's command line, where
//	    `pkill -f` could find it, nor in its environment; then single
//	    bytes: Terminate (SIGTERM the tree),
//	    Kill (SIGKILL the tree); EOF (the host is gone) means Kill.
//	supervisor → host: Running + the shell's pid once started, or
//	    StartFailed + errno; at the end Exited + the shell's wait status,
//	    once no process of the tree is left. Each reply is 5 bytes: the
//	    kind, then a little-endian uint32.
//
// SIGTERM, SIGINT and SIGHUP sent to the supervisor kill the tree too (they
// are caught, so a command cannot end its supervisor with them and leave
// its tree behind). Only SIGKILL of the supervisor itself releases the tree
// (to init); the shell then still dies (Pdeathsig).
package procsup
