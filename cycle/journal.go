package cycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/journal"
	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
	"github.com/flemma-dev/flemma/trust"
)

// The crash-recovery journal in the cycle (SPEC §11, issue 12). Every call
// is recorded, durably, before it starts and again when it finishes; every
// decision goes to its audit log. On a press, a call the journal knows
// changes what happens:
//
//   - it finished but its result is not in the buffer (Neovim or flemma
//     stopped before the result was written or saved): the recorded result
//     is written, the call is not run again;
//   - it started and never finished (interrupted): it is never approved by
//     a policy; it waits, with a diagnostic, for :Flemma tool:resume (run it
//     again) or :Flemma tool:discard (an error result says it was
//     interrupted);
//   - it is running in another flemma right now: it waits too.
//
// A journal that cannot be opened or written never stops a tool: the host
// warns once, says so in :checkhealth, and goes on without it.

// journalOpenTimeout bounds opening the journal at setup.
const journalOpenTimeout = 2 * time.Second

// openJournal opens (or reopens, when the state folder changed) the
// journal in dir. Call without h.mu held. What went wrong — a journal
// that cannot be opened, a damaged one moved aside, a damaged WAL — is
// told to the user once, with what it costs, and stays in :checkhealth.
func (h *Engine) openJournal(dir string) {
	path := filepath.Join(dir, "journal.db")
	h.mu.Lock()
	same := h.jpath == path
	old := h.jr
	h.mu.Unlock()
	if same || dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalOpenTimeout)
	defer cancel()
	j, err := journal.Open(ctx, path, nil)
	h.mu.Lock()
	h.jr, h.jpath, h.jerr = j, path, err
	h.jwarned, h.jlast, h.jreports = false, "", nil
	h.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if err != nil {
		h.logf("journal %s: %v; tools run without crash recovery", path, err)
		h.notify(fmt.Sprintf("The crash-recovery journal cannot be opened (%v): tools run without it, so a call interrupted by a crash will not be recognized as such and could run again. Fix it (free space, permissions), then :Flemma host:restart. See :checkhealth flemma.", err), levelWarn)
		return
	}
	h.logf("journal: %s", path)
	// What Open found, or an earlier host found and died before telling:
	// told now, and acknowledged once Neovim took the message.
	var told []journal.Report
	for _, r := range j.Reports() {
		h.logf("%s", r.Text)
		h.mu.Lock()
		h.jreports = append(h.jreports, r.Text)
		h.mu.Unlock()
		msg := "The crash-recovery journal was damaged: " + strings.TrimPrefix(r.Text, "journal: ") + ". See :checkhealth flemma."
		if r.Kind == "wal" {
			msg = "The crash-recovery journal lost records: " + strings.TrimPrefix(r.Text, "journal: ") + ". A call they recorded as started may not be recognized as interrupted. See :checkhealth flemma."
		}
		if err := h.ed.Notify(msg, levelWarn); err != nil {
			h.logf("notify: %v", err)
			continue
		}
		told = append(told, r)
	}
	if err := j.Acknowledge(told); err != nil {
		h.logf("journal: %v", err)
	}
}

// journal returns the open journal, or nil.
func (h *Engine) journal() *journal.Journal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.jr
}

// journalFailed notes a failed journal operation: logged every time, told
// to the user once per journal (the first failure, with what it means),
// and kept for :checkhealth. The call goes on.
func (h *Engine) journalFailed(op string, err error) {
	h.logf("journal: %s: %v", op, err)
	h.mu.Lock()
	first := !h.jwarned && !h.closing // at shutdown the journal is closed on purpose
	h.jwarned = true
	h.jlast = fmt.Sprintf("%s at %s: %v", op, time.Now().Format("15:04:05"), err)
	h.mu.Unlock()
	if first {
		h.notify(fmt.Sprintf("The crash-recovery journal could not be written (%v): what it missed would not be recognized after a crash. Tools run on; later failures are only logged. See :checkhealth flemma.", err), levelWarn)
	}
}

// journalKey is a buffer's key in the journal: its file, or for an unnamed
// buffer this Neovim's buffer number.
func journalKey(bufnr int, name string) string {
	if name == "" {
		return fmt.Sprintf("unnamed:%d:%d", os.Getppid(), bufnr)
	}
	return journal.BufferKey(name)
}

// past is what the journal knows of a call.
type past int

const (
	pastNone        past = iota
	pastFinished         // it ran to the end: the result is recorded
	pastInterrupted      // it started and never finished
	pastElsewhere        // it is running now, in another flemma (or this one)
)

// history looks up the latest run of u in the buffer key.
func (sess *session) history(key string, u *buffer.ToolUse) (journal.Call, past) {
	h := sess.h
	j := h.journal()
	if j == nil {
		return journal.Call{}, pastNone
	}
	c, ok, err := j.Latest(context.Background(), key, u.ID)
	if err != nil {
		h.journalFailed("look up "+u.ID, err)
		return journal.Call{}, pastNone
	}
	return sess.pastOf(u, c, ok)
}

// pastOf is history for a call whose latest journaled run is c (ok false:
// none).
func (sess *session) pastOf(u *buffer.ToolUse, c journal.Call, ok bool) (journal.Call, past) {
	if !ok || c.InputHash != trust.CallHash(u) || c.Resolution != "" {
		return c, pastNone
	}
	if c.Finished() {
		return c, pastFinished
	}
	sess.mu.Lock()
	runningHere := sess.running[u.ID] != nil
	sess.mu.Unlock()
	if c.PID == os.Getpid() {
		if runningHere {
			return c, pastElsewhere
		}
		return c, pastInterrupted
	}
	if pidAliveSince(c.PID, c.StartedAt) {
		return c, pastElsewhere
	}
	return c, pastInterrupted
}

// pidAlive reports whether a process with this pid exists (it may have
// been reused by another program: then a call waits for the user, which is
// the safe side).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// interruptedRule is the reason an interrupted call waits.
func interruptedRule(c journal.Call, p past) string {
	when := c.StartedAt.Local().Format("2006-01-02 15:04:05")
	if p == pastElsewhere {
		return fmt.Sprintf("it is running in another flemma (pid %d) since %s", c.PID, when)
	}
	return fmt.Sprintf("interrupted: it started %s and never finished (flemma or Neovim stopped), so it may have partly run: :Flemma tool:resume runs it again, :Flemma tool:discard records it as interrupted", when)
}

// recordDecisions appends the decisions of a step to the audit log in one
// commit, each with the call's arguments and, for a rejection, its reason
// as the block says it in doc (the text the step leaves), redacted.
func (sess *session) recordDecisions(key string, doc *buffer.Document, recs []WireRecord) {
	h := sess.h
	j := h.journal()
	if j == nil || len(recs) == 0 {
		return
	}
	redact := h.auditRedactor()
	now := time.Now()
	evs := make([]journal.Event, 0, len(recs))
	for _, r := range recs {
		ev := journal.Event{Time: now, Buffer: key, CallID: r.ID, InputHash: r.Hash, Decision: r.Status, DecidedBy: r.By}
		if u := doc.Use(r.ID); u != nil {
			ev.Tool, ev.Input = u.Name, redact(u.RawInput)
		}
		if res := doc.Result(r.ID); res != nil && r.Status == string(buffer.StatusRejected) {
			if why := strings.TrimSpace(res.Content); why != rejectedByUser {
				ev.Detail = redact(why)
			}
		}
		evs = append(evs, ev)
	}
	// The audit log is written after the step, off the path of the press
	// (its synced commit was a third of a categorize on screen, issue 23),
	// one step after the other in order; Shutdown waits for them. Nothing
	// reads the log to decide: a call's own row (journalStart) is what
	// keeps a call from running twice, and it stays durable before the call
	// starts.
	h.mu.Lock()
	prev := h.decisions
	done := make(chan struct{})
	h.decisions = done
	h.mu.Unlock()
	sess.spawn(func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		// The journal bounds its own waits (a writer that makes no progress).
		if err := j.RecordAll(context.Background(), evs); err != nil {
			h.journalFailed("record decisions", err)
		}
	})
}

// journalStart records that a call starts; the row is durable when it
// returns. A journal that fails is noted and the call runs on.
func (sess *session) journalStart(name string, j job) journal.ID {
	h, bufnr := sess.h, sess.bufnr
	jr := h.journal()
	if jr == nil {
		return 0
	}
	key := journalKey(bufnr, name)
	ctx := context.Background() // the journal bounds its own waits
	// A resumed call: its interrupted run is resolved first.
	if c, ok, err := jr.Latest(ctx, key, j.id); err == nil && ok && !c.Finished() && c.Resolution == "" && c.InputHash == j.hash {
		if err := jr.Resolve(ctx, c.ID, journal.Resumed, "user"); err != nil {
			h.journalFailed("resolve "+j.id, err)
		}
	}
	id, err := jr.Start(ctx, journal.Call{Buffer: key, CallID: j.id, Tool: j.name, InputHash: j.hash, Decision: "approve", DecidedBy: j.by,
		Input: h.auditRedactor()(string(j.input))})
	if err != nil {
		h.journalFailed("start "+j.id, err)
		return 0
	}
	return id
}

// auditRedactor redacts what the audit log keeps of arguments and reasons
// like tool output and attached files are: secret values of the
// environment (sandbox.env_deny) and text shaped like a credential
// (tools.RedactShapes). A result is kept as the buffer got it (already
// redacted: tools.Finish), since it may be put back from the journal.
func (h *Engine) auditRedactor() func(string) string {
	deny := h.sandboxConfig(nil).EnvDeny
	if deny == nil {
		deny = sandbox.DefaultEnvDeny // as sandbox.New fills it in
	}
	secrets := tools.Redactor(nil, deny)
	return func(text string) string {
		if text == "" {
			return ""
		}
		return tools.RedactShapes(secrets(text))
	}
}

// auditUser records in the audit log what the user did to call id
// without a status of its own (a result given with :Flemma tool:result or
// tool:error), with the call's arguments and detail, redacted.
func (sess *session) auditUser(id, decision, detail string) {
	h, bufnr := sess.h, sess.bufnr
	j := h.journal()
	if j == nil {
		return
	}
	s, err := sess.snapshot()
	if err != nil {
		h.logf("audit %s of %s: %v", decision, id, err)
		return
	}
	redact := h.auditRedactor()
	ev := journal.Event{Buffer: journalKey(bufnr, s.Name), CallID: id, Decision: decision, DecidedBy: trust.ByUser, Detail: redact(detail)}
	if tu := parse(s.Lines).Use(id); tu != nil {
		ev.Tool, ev.InputHash, ev.Input = tu.Name, trust.CallHash(tu), redact(tu.RawInput)
	}
	ctx, cancel := context.WithTimeout(context.Background(), journal.DefaultTimeout)
	defer cancel()
	if err := j.Record(ctx, ev); err != nil {
		h.journalFailed("record "+decision, err)
	}
}

// waitDecisions waits, until ctx ends, for the decisions of the latest
// step: they are written after it (recordDecisions).
func (h *Engine) waitDecisions(ctx context.Context) {
	h.mu.Lock()
	pending := h.decisions
	h.mu.Unlock()
	if pending != nil {
		select {
		case <-pending:
		case <-ctx.Done():
		}
	}
}

// recordTrust notes in the audit log that the user trusted or untrusted
// the buffer (:Flemma trust, :Flemma untrust), as the host learns it.
func (h *Engine) recordTrust(key string, trusted bool, vouched int) {
	j := h.journal()
	if j == nil {
		return
	}
	ev := journal.Event{Buffer: key, Decision: "untrusted", DecidedBy: trust.ByUser}
	if trusted {
		ev.Decision, ev.Detail = "trusted", fmt.Sprintf("its frontmatter may approve; %d call(s) in it vouched for", vouched)
	}
	ctx, cancel := context.WithTimeout(context.Background(), journal.DefaultTimeout)
	defer cancel()
	if err := j.Record(ctx, ev); err != nil {
		h.journalFailed("record "+ev.Decision, err)
	}
}

// journalFinish records how a call ended, its result and the files it
// changed, before the result is written to the buffer (so a crash in
// between loses nothing).
func (h *Engine) journalFinish(id journal.ID, status string, res tools.Result) {
	jr := h.journal()
	if jr == nil || id == 0 {
		return
	}
	changes := ""
	if len(res.Changes) > 0 {
		if b, err := json.Marshal(res.Changes); err == nil {
			changes = string(b)
		}
	}
	ctx := context.Background() // the journal bounds its own waits
	kind := ""
	if res.IsError {
		kind = res.Kind
	}
	if err := jr.Finish(ctx, id, journal.Outcome{Status: status, IsError: res.IsError, ErrorKind: kind, Duration: res.Duration,
		OutputBytes: int64(len(res.Content)), Result: res.Content, Changes: changes}); err != nil {
		h.journalFailed("finish", err)
	}
}

// onJournalLog is :Flemma tool:log: this buffer's calls and decisions from
// the journal in the readable form (newest last), with arguments and
// results; `flemma-host journal --buffer FILE` gives the same as JSON
// lines.
func (h *Engine) onJournalLog(bufnr int, asJSON bool) (Reply, error) {
	jr := h.journal()
	if jr == nil {
		h.mu.Lock()
		why := h.jerr
		h.mu.Unlock()
		return text(fmt.Sprintf("no journal (%v)", why)), nil
	}
	s, err := h.session(bufnr).snapshot()
	if err != nil {
		return Reply{}, err
	}
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.waitDecisions(ctx) // the log shows the latest step's
	if err := jr.Export(ctx, &b, journal.Filter{Buffer: journalKey(bufnr, s.Name), Limit: 500, Results: true, Text: !asJSON}); err != nil {
		return Reply{}, fmt.Errorf("tool:log: %w", err)
	}
	if b.Len() == 0 {
		return text("the journal has nothing for this buffer yet"), nil
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

// journalHealth is the journal's part of :checkhealth: whether it is
// usable, what it lost at Open (a damaged file moved aside, a damaged WAL)
// and the last write that failed.
func (h *Engine) journalHealth() []HealthLine {
	h.mu.Lock()
	jr, path, jerr, last, reports := h.jr, h.jpath, h.jerr, h.jlast, h.jreports
	h.mu.Unlock()
	switch {
	case path == "":
		return []HealthLine{{"warn", "crash-recovery journal: not opened yet (the plugin sends its state folder with setup)"}}
	case jr == nil:
		return []HealthLine{{"error", fmt.Sprintf("crash-recovery journal %s cannot be opened (%v): tools run without crash recovery, so a call interrupted by a crash will not be recognized. Fix it, then :Flemma host:restart", path, jerr)}}
	}
	var out []HealthLine
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := jr.Check(ctx); err != nil {
		out = append(out, HealthLine{"warn", fmt.Sprintf("crash-recovery journal %s: %v", path, err)})
	} else {
		out = append(out, HealthLine{"ok", "crash-recovery journal: " + path})
	}
	for _, r := range reports {
		out = append(out, HealthLine{"warn", "crash-recovery journal: " + strings.TrimPrefix(r, "journal: ")})
	}
	if last != "" {
		out = append(out, HealthLine{"warn", "crash-recovery journal: a write failed (" + last + "); see the host log"})
	}
	return out
}
