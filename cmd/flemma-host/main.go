// Command flemma-host is the engine of the flemma Neovim plugin. Neovim
// starts it with jobstart({rpc = true}); it speaks msgpack-RPC on
// stdin/stdout, so nothing else may ever be written to stdout, and it logs to
// a file.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/neovim/go-client/nvim"

	"github.com/flemma-dev/flemma"
	"github.com/flemma-dev/flemma/approval"
	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/mcp"
	"github.com/flemma-dev/flemma/provider"
	"github.com/flemma-dev/flemma/rpc"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/builtin"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// version is the host's version, lua/flemma/VERSION: the Lua side reads the
// same file and checks it in the handshake.
var version = flemma.Version

func main() {
	// No heap profile is ever taken of the host: without sampling, the
	// runtime does not fill its 1.4 MB table of allocation stacks, whose
	// touched pages stayed resident (~0.25 MB after a categorize).
	runtime.MemProfileRate = 0
	if len(os.Args) > 1 && os.Args[1] == "journal" { // `flemma-host journal -h`: print the journal
		os.Exit(journalMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "run" { // `flemma-host run file.chat`: the cycle without Neovim
		os.Exit(runMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run())
}

// deps are the engine's dependencies: the built-in tools, the providers
// and the built-in approval resolvers (the same for Neovim and headless).
func deps(logf func(string, ...any)) cycle.Deps {
	reg := tools.NewRegistry()
	reg.Have = sandbox.HaveRequirement
	for _, t := range builtin.All() {
		reg.MustAdd(t)
	}
	// setup's mcp_servers: started at the first request that needs the
	// tool list, stopped (their processes killed) at Shutdown.
	servers := mcp.New(reg, logf)
	return cycle.Deps{Registry: reg, Providers: provider.New, Resolvers: approval.Builtins, MCP: servers, Proposer: builtin.Proposer}
}

func run() int {
	// Commands the host starts must not read its environment (API keys) from /proc/<pid>/environ.
	_ = sandbox.HardenProcess()
	// stdout is the RPC stream: keep it, and send everything else that might
	// print (gopher-lua's print included) to stderr.
	stdout := os.Stdout
	os.Stdout = os.Stderr

	showVersion := flag.Bool("version", false, "print the version and exit")
	logFile := flag.String("log-file", "", "write the log to this file (default: stderr)")
	flag.Parse()
	if *showVersion {
		fmt.Fprintln(stdout, "flemma-host", version)
		return 0
	}

	var logw io.Writer = os.Stderr
	if *logFile != "" {
		if l, err := openLog(*logFile, maxLogBytes); err == nil {
			defer l.Close()
			logw = l
		}
	}
	logger := log.New(logw, "", log.LstdFlags|log.Lmicroseconds)
	logger.Printf("flemma-host %s starting (pid %d)", version, os.Getpid())

	host := rpc.NewHost(version, logger, deps(logger.Printf))
	host.Started = func() {
		before := vmRSS()
		debug.FreeOSMemory() // the start's garbage (the schemas' compilers, the config's)
		n := dropStartPages()
		logger.Printf("start over: %d mappings of the executable let go, VmRSS %d kB -> %d kB", n, before, vmRSS())
	}

	v, err := nvim.New(os.Stdin, stdout, stdout, logger.Printf)
	if err != nil {
		logger.Printf("connect: %v", err)
		return 1
	}
	if err := host.Attach(v); err != nil {
		logger.Printf("attach: %v", err)
		return 1
	}
	// Whatever ends the host — Neovim closing the channel, :qa, a signal —
	// the commands it started end with it (a SIGKILL of the host is handled
	// by each command's supervisor).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		logger.Printf("%v: stopping every running command", sig)
		host.Shutdown()
		os.Exit(1)
	}()
	err = v.Serve()
	host.Shutdown()
	if err != nil && err != io.EOF {
		logger.Printf("serve: %v", err)
		return 1
	}
	logger.Printf("channel closed; exiting")
	return 0
}
