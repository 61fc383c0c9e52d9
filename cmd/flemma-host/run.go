package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/flemma-dev/flemma/headless"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

const runUsage = `usage: flemma-host run [flags] FILE.chat

Run flemma's cycle on a .chat file without Neovim, for CI and scripts: the
calls without a result are categorized by the approval policy, approved
calls run (in the sandbox), the conversation is sent and the response is
appended to the file (atomically), and autopilot repeats until the model
answers without calls, up to --max-turns requests. The run stops at the
first call that needs approval.

The file is not trusted unless --trust is given: calls already in it when
the run starts ask, a status=approved written in it does not count, and
its frontmatter can only narrow the configuration.

Flags:
`

const runUsageTail = `
Exit codes:
  0  done: the model answered without calls (or there was nothing to send)
  1  error (provider, file, configuration file, the file changed on disk),
     or the model's answer was empty
  2  usage error (flags, --config)
  3  a call needs approval: stderr names it (tool, id, line) and says how
     to approve it (--approve-call ID, or its fence set to approved and --trust)
  4  the response was cut short (output limit, content filter) or interrupted
  5  the turn limit stopped the run with work left (run again to go on)

Credentials come from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY,
VERTEX_AI_ACCESS_TOKEN, GEMINI_API_KEY), never from flags or files. The journal and
backups go to the state folder ($XDG_STATE_HOME/nvim/flemma or
~/.local/state/nvim/flemma, as the plugin's).
`

// listFlag is a repeatable flag; each value may also list several items
// separated by commas outside parentheses ("$readonly,bash(git status*)").
type listFlag struct {
	items []string
	set   bool
}

func (l *listFlag) String() string { return strings.Join(l.items, ",") }

func (l *listFlag) Set(v string) error {
	l.set = true
	depth, start := 0, 0
	for i, r := range v {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if s := strings.TrimSpace(v[start:i]); s != "" {
					l.items = append(l.items, s)
				}
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		l.items = append(l.items, s)
	}
	return nil
}

// runMain runs `flemma-host run ARGS` and returns the exit status.
func runMain(args []string, stdout, stderr io.Writer) int {
	_ = sandbox.HardenProcess()
	flags := flag.NewFlagSet("flemma-host run", flag.ContinueOnError)
	flags.SetOutput(stderr)
	provider := flags.String("provider", "", "the `PROVIDER` (anthropic, openai, vertex, gemini, replay, or a named one of --config; default: the configuration's, else anthropic)")
	model := flags.String("model", "", "the `MODEL` (default: the configuration's, else the provider's default)")
	var approve, approveCalls listFlag
	flags.Var(&approve, "approve", "auto-approve these tools, `RULES`: names, presets ($readonly, $files, $commands) and bash(<glob>) rules; repeat or separate with commas; replaces tools.auto_approve (default $default)")
	flags.Var(&approveCalls, "approve-call", "approve the tool call with this `ID` already in the file, as :Flemma tool:approve does (repeatable)")
	maxTurns := flags.Int("max-turns", 0, "send at most `N` requests in this run (default: tools.autopilot.max_turns + 1, 101)")
	jsonOut := flags.Bool("json", false, "print the run's events as JSON lines on stdout")
	trustFile := flags.Bool("trust", false, "trust the file as your own: its calls are decided by the policy, its approved statuses count, its frontmatter may approve")
	configFile := flags.String("config", "", "read the setup from this JSON `FILE` (the shape the plugin sends the host: provider, model, parameters, providers, tools, sandbox)")
	stateDir := flags.String("state-dir", "", "flemma's state `DIR` for the journal and backups (default: the plugin's, see below)")
	logFile := flags.String("log-file", "", "write the host log to this `FILE`")
	verbose := flags.Bool("v", false, "print flemma's messages on stderr as they come")
	flags.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		flags.PrintDefaults()
		fmt.Fprint(stderr, runUsageTail)
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return headless.ExitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "flemma-host run: "+format+"\n", a...)
		return headless.ExitUsage
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return usage("want exactly one .chat file, got %d arguments", flags.NArg())
	}
	if *maxTurns < 0 {
		return usage("--max-turns %d: want 1 or more", *maxTurns)
	}
	o := headless.Options{Path: flags.Arg(0), Provider: *provider, Model: *model, MaxTurns: *maxTurns,
		Trust: *trustFile, ApproveCalls: approveCalls.items, StateDir: *stateDir, Version: version}
	if approve.set {
		o.Approve = append([]string{}, approve.items...)
	}
	if *configFile != "" {
		b, err := os.ReadFile(*configFile)
		if err != nil {
			return usage("--config: %v", err)
		}
		o.Config = string(b)
	}
	if *logFile != "" {
		l, err := openLog(*logFile, maxLogBytes)
		if err != nil {
			return usage("--log-file: %v", err)
		}
		defer l.Close()
		o.Log = log.New(l, "", log.LstdFlags|log.Lmicroseconds)
		o.Log.Printf("flemma-host %s run %s (pid %d)", version, o.Path, os.Getpid())
	}
	var mu sync.Mutex // events come from the engine's goroutines
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	o.Events = func(e headless.Event) {
		mu.Lock()
		defer mu.Unlock()
		if *jsonOut {
			_ = enc.Encode(e)
		}
		if *verbose && e.Event == "message" {
			fmt.Fprintf(stderr, "flemma: %s: %s\n", e.Level, e.Text)
		}
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	res := headless.Run(ctx, o, deps(nil))
	sandbox.KillAll() // whatever still runs (a cancelled command's tree) ends with the run
	switch {
	case res.Message != "":
		fmt.Fprintf(stderr, "flemma-host run: %s\n", res.Message)
	case res.Requests > 0:
		fmt.Fprintf(stderr, "flemma-host run: done: %d request(s), %d input · %d output tokens\n", res.Requests, res.Usage.InputTokens, res.Usage.OutputTokens)
	}
	return res.Code
}
