package journal

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helper processes: the test binary re-executed with childEnv set to a mode.
// They talk to the parent over stdin/stdout, so no test waits on a timer.
const (
	childEnv  = "FLEMMA_JOURNAL_TEST_CHILD"
	childPath = "FLEMMA_JOURNAL_TEST_PATH"
	childN    = "FLEMMA_JOURNAL_TEST_N"
	childName = "FLEMMA_JOURNAL_TEST_NAME"
)

func runChild() int {
	path := os.Getenv(childPath)
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	switch os.Getenv(childEnv) {
	case "crash":
		// Start a call, finish another, then die without closing anything.
		j, err := Open(ctx, path, nil)
		if err != nil {
			return fail(err)
		}
		done, err := j.Start(ctx, call("/crash.chat", "toolu_done"))
		if err == nil {
			err = j.Finish(ctx, done, Outcome{Status: "ok", Result: "done before the crash"})
		}
		if err == nil {
			err = j.Record(ctx, Event{Buffer: "/crash.chat", CallID: "toolu_running", Tool: "bash", Decision: "approve", DecidedBy: "user"})
		}
		if err == nil {
			_, err = j.Start(ctx, call("/crash.chat", "toolu_running"))
		}
		if err != nil {
			return fail(err)
		}
		// The tool would run now; the host dies instead.
		p, _ := os.FindProcess(os.Getpid())
		p.Kill() // SIGKILL on Unix: no deferred code, no Close, no checkpoint
		select {}

	case "writer":
		// Open, say "ready", wait for "go", write N calls and events, report.
		j, err := Open(ctx, path, &Options{Timeout: time.Minute})
		if err != nil {
			return fail(err)
		}
		defer j.Close()
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return fail(err)
		}
		n, _ := strconv.Atoi(os.Getenv(childN))
		res := writeCalls(ctx, j, os.Getenv(childName), n)
		json.NewEncoder(os.Stdout).Encode(res)
		return 0

	case "locker":
		// Hold the write lock until stdin closes.
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			return fail(err)
		}
		conn, err := db.Conn(ctx)
		if err == nil {
			_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		}
		if err != nil {
			return fail(err)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		conn.ExecContext(ctx, "ROLLBACK")
		return 0

	case "open":
		// Report what Open makes of the file (run as another user).
		j, err := Open(ctx, path, nil)
		fmt.Println(describeOpen(j, err))
		if j != nil {
			j.Close()
		}
		return 0
	}
	return fail(errors.New("unknown mode " + os.Getenv(childEnv)))
}

// describeOpen sums up an Open outcome in one line.
func describeOpen(j *Journal, err error) string {
	switch {
	case err == nil && j.Recovered() != nil:
		return "recovered: " + j.Recovered().String()
	case err == nil:
		return "ok"
	}
	for _, s := range []error{ErrReadOnly, ErrCorrupt, ErrBusy, ErrNewerSchema} {
		if errors.Is(err, s) {
			return "error " + s.Error() + ": " + err.Error()
		}
	}
	return "error: " + err.Error()
}

// writeResult is what a writer reports.
type writeResult struct {
	OK   int      // calls started and finished
	Errs []string // errors, if any
}

// writeCalls starts, finishes and records n calls of buffer name.
func writeCalls(ctx context.Context, j *Journal, name string, n int) writeResult {
	var r writeResult
	for i := range n {
		c := call("/"+name+".chat", fmt.Sprintf("toolu_%d", i))
		id, err := j.Start(ctx, c)
		if err == nil {
			err = j.Finish(ctx, id, Outcome{Status: "ok", Result: strings.Repeat("x", i%300)})
		}
		if err == nil {
			err = j.Record(ctx, Event{Buffer: c.Buffer, CallID: c.CallID, Tool: c.Tool, Decision: "approve", DecidedBy: name})
		}
		if err != nil {
			r.Errs = append(r.Errs, err.Error())
			continue
		}
		r.OK++
	}
	return r
}

// child starts a helper process in mode with extra environment.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr strings.Builder
}

func startChild(t *testing.T, mode, path string, env ...string) *child {
	t.Helper()
	return startChildCmd(t, exec.Command(os.Args[0], "-test.run=^$"), mode, path, env...)
}

func startChildCmd(t *testing.T, cmd *exec.Cmd, mode, path string, env ...string) *child {
	t.Helper()
	c := &child{cmd: cmd}
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode, childPath+"="+path), env...)
	cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.stdin.Close()
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// line reads one line the child printed.
func (c *child) line(t *testing.T) string {
	t.Helper()
	s, err := c.stdout.ReadString('\n')
	if err != nil {
		c.cmd.Wait()
		t.Fatalf("child %v: %v; stderr:\n%s", c.cmd.Args, err, c.stderr.String())
	}
	return strings.TrimSuffix(s, "\n")
}

// TestDurableAcrossCrash: a process that calls Start and is then killed with
// SIGKILL leaves the call on disk, unfinished; the call it finished before is
// finished with its result.
func TestDurableAcrossCrash(t *testing.T) {
	path := dbPath(t)
	c := startChild(t, "crash", path)
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 { // -1: killed by a signal
		t.Fatalf("child ended with %v, want killed by a signal; stderr:\n%s", err, c.stderr.String())
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no WAL left behind (%v): the commits were checkpointed", err)
	}

	j := openAt(t, path, nil)
	ctx := context.Background()
	if j.Recovered() != nil {
		t.Errorf("Recovered() = %v after a crash, want nil", j.Recovered())
	}
	un, err := j.Unfinished(ctx, "/crash.chat")
	if err != nil || len(un) != 1 || un[0].CallID != "toolu_running" || un[0].PID != c.cmd.Process.Pid {
		t.Fatalf("Unfinished after the crash = %+v, %v; want toolu_running started by pid %d", un, err, c.cmd.Process.Pid)
	}
	if ok, err := j.Started(ctx, "/crash.chat", "toolu_running", "sha256:toolu_running"); !ok || err != nil {
		t.Errorf("Started(toolu_running) = %v, %v, want true", ok, err)
	}
	done, ok, err := j.Latest(ctx, "/crash.chat", "toolu_done")
	if !ok || err != nil || !done.Finished() || done.Result != "done before the crash" {
		t.Errorf("Latest(toolu_done) = %+v, %v, %v; want finished with its result", done, ok, err)
	}
	var buf strings.Builder
	j.Export(ctx, &buf, Filter{})
	if !strings.Contains(buf.String(), `"kind":"event"`) {
		t.Errorf("the event recorded before the crash is lost:\n%s", buf.String())
	}
}

// TestConcurrentGoroutines: many goroutines of one process share a journal.
func TestConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, &Options{Timeout: time.Minute})
	const workers, each = 16, 20
	var wg sync.WaitGroup
	results := make([]writeResult, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = writeCalls(ctx, j, fmt.Sprintf("g%d", w), each)
			// Reads run beside the writers.
			if _, err := j.Unfinished(ctx, fmt.Sprintf("/g%d.chat", w)); err != nil {
				results[w].Errs = append(results[w].Errs, err.Error())
			}
		}()
	}
	wg.Wait()
	for w, r := range results {
		if r.OK != each || len(r.Errs) > 0 {
			t.Errorf("worker %d: %d ok, errors %v", w, r.OK, r.Errs)
		}
	}
	assertCounts(t, j, workers*each, workers*each)
}

// TestConcurrentProcesses: two processes and this one write the same file at
// once.
func TestConcurrentProcesses(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	j := openAt(t, path, &Options{Timeout: time.Minute})
	const each = 40
	var children []*child
	for i := range 2 {
		c := startChild(t, "writer", path, childN+"="+strconv.Itoa(each), childName+"=p"+strconv.Itoa(i))
		if got := c.line(t); got != "ready" {
			t.Fatalf("child said %q, want ready", got)
		}
		children = append(children, c)
	}
	for _, c := range children {
		io.WriteString(c.stdin, "go\n")
	}
	mine := writeCalls(ctx, j, "parent", each)
	if mine.OK != each {
		t.Errorf("parent: %d ok, errors %v", mine.OK, mine.Errs)
	}
	for i, c := range children {
		var r writeResult
		if err := json.Unmarshal([]byte(c.line(t)), &r); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, c.stderr.String())
		}
		if r.OK != each || len(r.Errs) > 0 {
			t.Errorf("child %d: %d ok, errors %v", i, r.OK, r.Errs)
		}
	}
	assertCounts(t, j, 3*each, 3*each)
}

func assertCounts(t *testing.T, j *Journal, calls, events int) {
	t.Helper()
	var gotCalls, gotEvents, unfinished, ids int
	ctx := context.Background()
	j.r.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT id), sum(finished_at IS NULL) FROM calls").Scan(&gotCalls, &ids, &unfinished)
	j.r.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&gotEvents)
	if gotCalls != calls || ids != calls || unfinished != 0 || gotEvents != events {
		t.Errorf("%d calls (%d ids, %d unfinished), %d events; want %d calls, all finished, %d events",
			gotCalls, ids, unfinished, gotEvents, calls, events)
	}
	var check string
	if err := j.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}

// TestBusyIsBounded: while another process holds the write lock, or another
// goroutine holds this process's writer, writes fail with ErrBusy after the
// timeout instead of blocking, nothing is recorded, and reads still work.
func TestBusyIsBounded(t *testing.T) {
	ctx := context.Background()
	for _, holder := range []string{"another process", "another connection", "this process's writer"} {
		t.Run(holder, func(t *testing.T) {
			path := dbPath(t)
			j := openAt(t, path, &Options{Timeout: 100 * time.Millisecond})
			before := mustStart(t, j, call("/a", "before"))
			release := holdLock(t, holder, j, path)

			// A generous watchdog, not a timed assertion: the outcome is
			// what is checked.
			type result struct {
				err     error
				elapsed time.Duration
			}
			ops := map[string]func() error{
				"Start":   func() error { _, err := j.Start(ctx, call("/a", "during")); return err },
				"Finish":  func() error { return j.Finish(ctx, before, Outcome{Status: "ok"}) },
				"Record":  func() error { return j.Record(ctx, Event{Buffer: "/a", CallID: "during", Decision: "deny"}) },
				"Resolve": func() error { return j.Resolve(ctx, before, Discarded, "user") },
			}
			for name, op := range ops {
				ch := make(chan result, 1)
				go func() {
					start := time.Now()
					err := op()
					ch <- result{err, time.Since(start)}
				}()
				select {
				case r := <-ch:
					if !errors.Is(r.err, ErrBusy) {
						t.Errorf("%s while %s holds the lock = %v, want ErrBusy", name, holder, r.err)
					}
					t.Logf("%s: %v after %v", name, r.err, r.elapsed)
				case <-time.After(30 * time.Second):
					t.Fatalf("%s blocked while %s holds the lock", name, holder)
				}
			}
			if holder != "this process's writer" {
				if un, err := j.Unfinished(ctx, "/a"); err != nil || len(un) != 1 {
					t.Errorf("Unfinished while locked = %v, %v, want the one call", un, err)
				}
			}
			release()
			if ok, _ := j.Started(ctx, "/a", "during", "sha256:during"); ok {
				t.Error("a Start that returned ErrBusy was recorded")
			}
			mustStart(t, j, call("/a", "after"))
			if err := j.Finish(ctx, before, Outcome{Status: "ok"}); err != nil {
				t.Errorf("Finish after the lock was released = %v", err)
			}
		})
	}
}

// holdLock takes the write lock on path as holder and returns its release.
func holdLock(t *testing.T, holder string, j *Journal, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	switch holder {
	case "another process":
		c := startChild(t, "locker", path)
		if got := c.line(t); got != "locked" {
			t.Fatalf("locker said %q", got)
		}
		return func() {
			c.stdin.Close()
			if err := c.cmd.Wait(); err != nil {
				t.Errorf("locker: %v\n%s", err, c.stderr.String())
			}
		}
	case "another connection":
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err == nil {
			_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		}
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
			db.Close()
		}
	default:
		conn, err := j.w.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return func() { conn.Close() }
	}
}
