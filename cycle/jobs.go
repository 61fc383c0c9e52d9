package cycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/frontmatter"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/trust"
)

// runningCount is how many calls of the buffer run.
func (st *session) runningCount() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.running)
}

type job struct {
	id, name string
	input    json.RawMessage
	byUser   bool   // the user approved it (a policy approval gets the protected-path rules)
	hash     string // trust.CallHash of the call
	by       string // who approved it, for the journal
}

// execute is phase 2: every placeholder is handled by its status. only, when
// set, restricts it to one tool id (<M-CR>).
func (sess *session) execute(only string) (Reply, error) {
	return sess.executeFrom(only, nil, nil, false, false)
}

// wrote: the step before (categorize) already wrote results.
func (sess *session) executeFrom(only string, s0 *Snapshot, doc0 *buffer.Document, auto, wrote bool) (Reply, error) {
	h := sess.h
	var p executePlan
	var diags []Diag
	err := sess.stepFrom(s0, doc0, func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		fm := sess.evalFrontmatter(doc)
		diags = diagnostics(doc, fm, sess.notesCopy())
		opts := ApplyOpts{Diagnostics: diags, UndoBreak: true, fm: fm}
		if fm.Blocking() {
			return nil, opts, errBlocked
		}
		p = planExecute(doc, s.Lines, sess.executeFacts(s, doc, fm, only), only)
		h.logAll(p.Log)
		for id, n := range p.Notes {
			sess.note(id, n) // before the write: its diagnostics show them
		}
		opts.Records = p.Records
		if len(p.Jobs) > 0 {
			locked := false
			opts.Modifiable = &locked
		} else {
			opts.CursorID = p.FirstPending
			if sess.runningCount() == 0 {
				// Nothing runs: the buffer is the user's again (categorize
				// may have locked it for calls that did not start).
				unlocked := true
				opts.Modifiable = &unlocked
			}
		}
		return p.Edits, opts, nil
	})
	if errors.Is(err, errBlocked) {
		return sess.blocked(diags)
	}
	if err != nil {
		return Reply{}, err
	}
	if len(p.Jobs) > 0 {
		// One call run by the user (<M-CR>, tool:resume) goes on like a press:
		// with autopilot on, the cycle continues once it is done (issue 27
		// item 8; the Lua Flemma re-arms a paused autopilot the same way).
		sess.startJobs(p.Jobs, true)
	}
	if r, final := p.reply(only); final {
		return r, nil
	}
	if (len(p.Edits) > 0 || wrote) && !auto && !sess.effective(nil).Autopilot {
		// The results are in: the user may want to add a word before the
		// conversation goes on (phase 3 is the next press).
		return reply("resolved", "All tool calls have results. Press <C-]> again to send.", levelInfo), nil
	}
	return sess.startSend(auto)
}

// executeFacts gathers what planExecute needs: the buffer's options, the
// calls running now, the ledger, and what the journal knows of each
// approved placeholder still empty.
func (sess *session) executeFacts(s *Snapshot, doc *buffer.Document, fm *frontmatter.Result, only string) executeFacts {
	h, bufnr := sess.h, sess.bufnr
	f := executeFacts{Mode: h.mode(), Running: map[string]bool{}, Off: map[string]bool{}, Held: map[string]journalHold{}}
	eff := sess.effective(fm)
	sess.logRefused(eff)
	for _, tu := range doc.ToolUses() {
		if _, known := h.Registry.Get(tu.Name); known && !eff.HasTool(tu.Name) {
			f.Off[tu.Name] = true
		}
	}
	sess.mu.Lock()
	for id := range sess.running {
		f.Running[id] = true
	}
	f.Ledger = cloneLedger(sess.trustOf().ledger)
	sess.mu.Unlock()
	f.Descends = h.descends(bufnr, s.Tick, doc, f.Ledger)
	key := journalKey(bufnr, s.Name)
	for _, tu := range doc.ToolUses() {
		r := doc.Result(tu.ID)
		if r == nil || r.Status != buffer.StatusApproved || r.Content != "" || only != "" && tu.ID != only || f.Running[tu.ID] {
			continue
		}
		if c, p := sess.history(key, tu); p == pastInterrupted || p == pastElsewhere {
			f.Held[tu.ID] = journalHold{Elsewhere: p == pastElsewhere, Rule: interruptedRule(c, p)}
		}
	}
	return f
}

// startJobs runs approved tools in the background, at most max_concurrent
// at a time, with the buffer locked until the last one finishes.
func (sess *session) startJobs(jobs []job, continueCycle bool) {
	h, bufnr := sess.h, sess.bufnr
	eff := sess.effective(nil)
	limit, cursorMode := eff.MaxConcurrent, eff.CursorAfterResult
	sess.mu.Lock()
	ctxs := make([]context.Context, len(jobs))
	for i, j := range jobs {
		ctx, cancel := context.WithCancel(sess.ctx)
		ctxs[i] = ctx
		sess.running[j.id] = cancel
	}
	sess.jobsPending++ // until the jobs' goroutine decided whether autopilot goes on
	sess.mu.Unlock()
	if limit <= 0 {
		limit = len(jobs)
	}
	if n := len(jobs); n > limit {
		// The calls max_concurrent holds back are not stuck: say so.
		// One short line: it fits 80 columns and never asks for Enter.
		h.notify(fmt.Sprintf("%d calls, %d at a time (tools.max_concurrent): %d queued.", n, limit, n-limit), levelInfo)
	}

	sess.spawn(func() {
		sem := make(chan struct{}, limit)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		go func() { // keep the running indicators ticking
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					sess.refreshMarks()
				case <-stop:
					return
				}
			}
		}()
		for i, j := range jobs {
			// Taken here, in buffer order, before the worker starts: with
			// max_concurrent = 1 the calls run first to last.
			sem <- struct{}{}
			wg.Add(1)
			go func(ctx context.Context, j job) {
				defer wg.Done()
				defer func() { <-sem }()
				h.runOne(ctx, bufnr, j, cursorMode, toolTimeouts(eff))
			}(ctxs[i], j)
		}
		wg.Wait()
		close(stop)
		sess.mu.Lock()
		remaining := len(sess.running)
		sess.mu.Unlock()
		if remaining == 0 {
			sess.setModifiable(true)
		}
		// Decided now, not at the start: <C-c> or :Flemma autopilot may have
		// changed it while the tools ran.
		autopilot := sess.effective(nil).Autopilot
		sess.mu.Lock()
		disarmed := sess.disarmed
		sess.jobsPending--
		sess.cond.Broadcast()
		sess.mu.Unlock()
		if continueCycle && autopilot && !disarmed {
			h.autoCycle(bufnr)
		}
	})
}

func (h *Engine) runOne(ctx context.Context, bufnr int, j job, cursorMode string, timeouts tools.Timeouts) {
	st := h.session(bufnr)
	defer func() {
		st.mu.Lock()
		if cancel := st.running[j.id]; cancel != nil {
			cancel()
		}
		delete(st.running, j.id)
		delete(st.started, j.id)
		delete(st.ended, j.id)
		st.cond.Broadcast() // a take may wait for the last call to end
		st.mu.Unlock()
	}()
	st.mu.Lock()
	st.started[j.id] = time.Now()
	st.mu.Unlock()
	// The event first: whenever Neovim shows a call as running, it knows
	// the call runs (a host that goes then leaves it shown interrupted).
	info := ToolEvent{Bufnr: bufnr, ToolName: j.name, ToolID: j.id, Status: "executing"}
	h.event("FlemmaToolExecuting", info)
	h.session(bufnr).refreshMarks()
	s, err := h.session(bufnr).snapshot()
	call := tools.Call{ID: j.id, Tool: j.name, Bufnr: bufnr}
	if err != nil {
		// Without the buffer there is no sandbox to build: do not run.
		h.logf("tool %s (%s): %v", j.name, j.id, err)
		h.session(bufnr).writeFailure(j.id, "The call could not start: the buffer could not be read.")
		return
	}
	{
		call.Cwd, call.Buffer = s.Cwd, s.Name
		var fm *frontmatter.Result
		st.mu.Lock()
		fm = st.fm
		st.mu.Unlock()
		if env, err := h.session(bufnr).callEnv(fm, s.Cwd, s.Name, !j.byUser); err == nil {
			call.Env = env
		} else {
			// A sandbox that cannot be built must not mean "no sandbox".
			h.logf("tool %s (%s): sandbox: %v", j.name, j.id, err)
			h.session(bufnr).writeFailure(j.id, "The sandbox could not be set up: "+err.Error())
			return
		}
	}
	h.limitCall(&call, timeouts)
	st.mu.Lock()
	ran := st.trustOf().ledger.Get(j.id)
	st.mu.Unlock()
	// Known to have started before it starts: a restarted host or a
	// reloaded buffer must not run it again silently.
	ran.Ran = true
	if err := h.session(bufnr).record(ran); err != nil {
		h.logf("tool %s (%s): %v; not started", j.name, j.id, err)
		h.session(bufnr).writeFailure(j.id, "The call could not start: flemma could not record it.")
		return
	}
	jid := h.session(bufnr).journalStart(s.Name, j)
	// A tool chain's steps need to know whether the user approved it.
	res := h.exec.Run(context.WithValue(ctx, chainRunKey{}, chainRunInfo{byUser: j.byUser}), call, j.input)
	st.mu.Lock()
	if st.reviewed[j.id] {
		res.Content = reviewedNote + res.Content
	}
	st.mu.Unlock()
	h.session(bufnr).markEnded(j.id)
	h.logf("tool %s (%s) finished in %s, error=%v kind=%s", j.name, j.id, res.Duration, res.IsError, res.Kind)
	if h.closingNow() {
		h.logf("tool %s (%s) stopped by the host's shutdown: left unfinished (interrupted) in the journal", j.name, j.id)
		return
	}
	h.journalFinish(jid, outcomeStatus(ctx, res), res)
	// How the run ended is kept before the result is written, so that
	// whoever sees the result (:Flemma tool:list right after) sees it too.
	st.mu.Lock()
	if st.ran == nil {
		st.ran = map[string]ranCall{}
	}
	st.ran[j.id] = ranCall{duration: res.Duration, isError: res.IsError, kind: res.Kind}
	st.mu.Unlock()
	err = h.session(bufnr).writeResult(j.id, res, cursorMode)
	status := "success"
	if res.IsError {
		status = "error"
	}
	if err != nil {
		h.logf("write result %s: %v (content: %q)", j.id, err, res.Content)
		h.notify(fmt.Sprintf("The result of %s was not written: %v. It is kept: <M-CR> on the call writes it.", j.id, err), levelWarn)
		status = "error"
	}
	info.Status = status
	st.mu.Lock()
	st.lastResult = time.Now()
	st.mu.Unlock()
	h.event("FlemmaToolFinished", info)
}

// userApproved reports whether a record is the user's own approval.
func userApproved(r trust.Record) bool {
	return r.Status == buffer.StatusApproved && (r.By == trust.ByUser || r.By == trust.ByUserEdit)
}

// outcomeStatus names how a call ended, for the journal.
func outcomeStatus(ctx context.Context, res tools.Result) string {
	switch {
	case ctx.Err() != nil:
		return "canceled"
	case !res.IsError:
		return "ok"
	case res.Kind != "":
		return "error: " + string(res.Kind)
	}
	return "error"
}

// errBlockChanged: the block a result was going to replace is not the
// empty approved placeholder the call started from.
var errBlockChanged = errors.New("its block was changed while it ran")

// writeResult writes a finished call's result into its placeholder. Writes
// of one buffer go one at a time (concurrent calls would otherwise make
// each other's changedtick stale until one gave up), and a result is
// never dropped: when its block was removed or changed while the call ran
// (a status edit, text typed in), the result is kept for <M-CR> instead of
// overwriting the user's text, and the call is not run again.
func (sess *session) writeResult(id string, res tools.Result, cursorMode string) error {
	mu := sess.writeLock()
	mu.Lock()
	defer mu.Unlock()
	err := sess.step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		r := doc.Result(id)
		switch {
		case r == nil:
			return nil, ApplyOpts{}, errors.New("its block was removed while it ran")
		case r.Status != buffer.StatusApproved || strings.TrimSpace(r.Content) != "":
			return nil, ApplyOpts{}, errBlockChanged
		}
		e, err := buffer.ReplaceResult(doc, s.Lines, id, res.Content, res.IsError, res.Lang)
		if err != nil {
			return nil, ApplyOpts{}, err
		}
		// The buffer stays locked while other calls run; the last result
		// unlocks it in the same write, so text the user sees appear can
		// be typed after at once (the step's own unlock comes a moment
		// later, after its bookkeeping).
		modifiable := sess.runningCount() <= 1
		opts := ApplyOpts{Join: true, Modifiable: &modifiable}
		if cursorMode != "stay" {
			opts.CursorID = id
			opts.CursorAtEnd = cursorMode == "next"
		}
		sess.mu.Lock()
		wrote := sess.trustOf().ledger.Get(id)
		sess.mu.Unlock()
		wrote.Wrote = true
		opts.Records = []WireRecord{toWire(wrote)}
		return []buffer.Edit{e}, opts, nil
	})
	if err != nil {
		sess.mu.Lock()
		if sess.kept == nil {
			sess.kept = map[string]tools.Result{}
		}
		sess.kept[id] = res
		sess.mu.Unlock()
	}
	return err
}

// markEnded notes that a running call ended: only its result is left to
// write (an exclusive action waits for that instead of refusing).
func (st *session) markEnded(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.running[id] != nil {
		if st.ended == nil {
			st.ended = map[string]bool{}
		}
		st.ended[id] = true
	}
}

// writeLock is the buffer's result-write mutex.
func (st *session) writeLock() *sync.Mutex {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.writeMu == nil {
		st.writeMu = &sync.Mutex{}
	}
	return st.writeMu
}

// writeFailure writes an error result for a call that could not start.
func (sess *session) writeFailure(id, msg string) {
	h := sess.h
	sess.markEnded(id)
	err := sess.step(func(s *Snapshot, doc *buffer.Document) ([]buffer.Edit, ApplyOpts, error) {
		if doc.Result(id) == nil {
			return nil, ApplyOpts{}, fmt.Errorf("result block of %s not found", id)
		}
		e, err := buffer.ReplaceResult(doc, s.Lines, id, msg, true, "")
		return []buffer.Edit{e}, ApplyOpts{Join: true}, err
	})
	if err != nil {
		h.logf("write failure of %s: %v", id, err)
	}
}
