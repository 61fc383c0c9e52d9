package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
	"github.com/flemma-dev/flemma/internal/ssetest"
)

// sse is an Anthropic stream with text and tool calls ({id, name, input}).
func sse(text string, calls ...[3]string) string {
	t := ssetest.Turn{Text: text, InputTokens: 12, OutputTokens: 34}
	for _, c := range calls {
		t.Calls = append(t.Calls, ssetest.Call{ID: c[0], Name: c[1], Input: c[2]})
	}
	return t.String()
}

// fakeAnthropic serves turns[i] to the request that carries i assistant
// messages; it records the request bodies.
type fakeAnthropic struct {
	mu     sync.Mutex
	turns  []string
	bodies []map[string]any
	times  []time.Time   // when each request arrived
	slow   time.Duration // pause between events
	status int           // answer this HTTP status with a JSON error instead
	hold   chan struct{} // when set, the response waits until it is closed
	// mid, when set, stops the response after its first midAt events until
	// it is closed (midReached is closed when it gets there).
	mid        chan struct{}
	midAt      int
	midReached chan struct{}
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	if r.Header.Get("x-api-key") != "test-key" {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		return
	}
	n := 0
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			n++
		}
	}
	if n >= len(f.turns) {
		http.Error(w, "no more turns", 500)
		return
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f.mu.Lock()
	mid, midAt, midReached := f.mid, f.midAt, f.midReached
	f.mu.Unlock()
	for i, chunk := range strings.SplitAfter(f.turns[n], "\n\n") {
		if mid != nil && i == midAt {
			if midReached != nil {
				close(midReached)
			}
			select {
			case <-mid:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprint(w, chunk)
		w.(http.Flusher).Flush()
		if f.slow > 0 {
			select {
			case <-time.After(f.slow):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func sendSetup(url, extra string) string {
	return `{ providers = { anthropic = { base_url = "` + url + `" } }, model = "test-model"` + extra + ` }`
}

func eachNvimSend(t *testing.T, f *fakeAnthropic, extra string, fn func(t *testing.T, s *nvimtest.Session), env ...string) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	eachNvimEnv(t, sendSetup(srv.URL, extra), append([]string{"ANTHROPIC_API_KEY=test-key"}, env...), func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.bodies, f.times = nil, nil // one server serves every Neovim version in turn
		f.mu.Unlock()
		fn(t, s)
	})
}

const question = "@You:\nWhat is 6*7?\n"

func TestSendStreamsResponse(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("It is 42.")}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "q.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, "@You:\nWhat is 6*7?\n\n@Assistant:\nIt is 42.\n\n@You:\n")
		if got := cursorLine(t, s); got != 8 {
			t.Errorf("cursor on line %d, want 8 (under the new @You:)", got)
		}
		f.mu.Lock()
		body := f.bodies[len(f.bodies)-1]
		f.mu.Unlock()
		if body["model"] != "test-model" || body["stream"] != true {
			t.Errorf("request = %v", body)
		}
		tools, _ := body["tools"].([]any)
		if len(tools) == 0 {
			t.Errorf("the request carried no tools: %v", body)
		}
	})
}

// TestAutopilotTwoTurns: a response with an auto-approved call runs it and
// sends again by itself, to the final answer.
func TestAutopilotTwoTurns(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("Let me compute.", [3]string{"toolu_a1", "calculator", `{"expression": "6*7", "label": null}`}),
		sse("6*7 is 42."),
	}}
	eachNvimSend(t, f, `, tools = { auto_approve = { "calculator" } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "auto.chat", question)
		press(t, s, "<C-]>")
		want := "@You:\nWhat is 6*7?\n\n@Assistant:\nLet me compute.\n\n**Tool Use:** `calculator` (`toolu_a1`)\n\n```json\n{\"expression\": \"6*7\", \"label\": null}\n```\n\n@You:\n\n**Tool Result:** `toolu_a1`\n\n```\n42\n```\n\n@Assistant:\n6*7 is 42.\n\n@You:\n"
		got, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "6*7 is 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil || got != want {
			t.Fatalf("buffer:\n%s\n\nwant:\n%s", got, want)
		}
		f.mu.Lock()
		second := f.bodies[1]
		f.mu.Unlock()
		b, _ := json.Marshal(second["messages"])
		if !strings.Contains(string(b), `"tool_result"`) || !strings.Contains(string(b), `"42"`) {
			t.Errorf("second request lacks the tool result: %s", b)
		}
	})
}

// TestAutopilotPausesOnPending: a call that needs approval stops the loop.
func TestAutopilotPausesOnPending(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("", [3]string{"toolu_p1", "calculator", `{"expression": "1+1", "label": null}`}),
	}}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "pause.chat", question)
		if err := s.Lua(nil, `
			_G.pending_events = {}
			vim.api.nvim_create_autocmd("User", { pattern = "FlemmaApprovalPending", callback = function(ev)
				local d = ev.data or require("flemma.buf").last_event
				table.insert(_G.pending_events, string.format("%d %s %s", d.pending, d.first, tostring(d.auto)))
			end })`); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") })
		if err != nil {
			t.Fatalf("no pending placeholder:\n%s\nmessages: %s", got, s.Messages())
		}
		waitIdle(t, s)
		f.mu.Lock()
		n := len(f.bodies)
		f.mu.Unlock()
		if n != 1 {
			t.Errorf("%d requests; autopilot should have paused on the pending call", n)
		}
		// It says so, once.
		if m := s.Messages(); strings.Count(m, "Autopilot paused: calculator waits for your approval.") != 1 {
			t.Errorf("messages after the pause:\n%s", m)
		}
		var events []string
		if err := s.Lua(&events, `return _G.pending_events`); err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0] != "1 toolu_p1 true" {
			t.Errorf("FlemmaApprovalPending: %q", events)
		}
	})
}

// TestAutopilotMaxTurns: max_turns = 1 stops the loop with a message.
func TestAutopilotMaxTurns(t *testing.T) {
	call := func(id string) string {
		return sse("again", [3]string{id, "calculator", `{"expression": "1+1", "label": null}`})
	}
	f := &fakeAnthropic{turns: []string{call("t1"), call("t2"), call("t3"), call("t4")}}
	eachNvimSend(t, f, `, tools = { auto_approve = { "calculator" }, autopilot = { enabled = true, max_turns = 1 } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "max.chat", question)
		press(t, s, "<C-]>")
		if _, err := s.Wait(15*time.Second, func(string) bool {
			return strings.Contains(s.Messages(), "Autopilot stopped after 1 consecutive turns")
		}); err != nil {
			t.Fatalf("no max_turns message; messages:\n%s\nbuffer:\n%s", s.Messages(), text(t, s))
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.mu.Unlock()
		if n != 2 {
			t.Errorf("%d requests, want 2 (the user's send and one autopilot turn)", n)
		}
	})
}

// TestSendAbort: <C-c> mid-stream keeps the partial text, marked.
func TestSendAbort(t *testing.T) {
	long := strings.Repeat("word ", 200)
	f := &fakeAnthropic{turns: []string{sse(long)}, slow: 10 * time.Millisecond}
	eachNvimSend(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "abort.chat", question)
		press(t, s, "<C-]>")
		if _, err := s.Wait(5*time.Second, func(x string) bool { return strings.Contains(x, "word word") }); err != nil {
			t.Fatalf("nothing streamed: %s", text(t, s))
		}
		var modifiable bool
		if err := s.Lua(&modifiable, "return vim.bo.modifiable"); err != nil || modifiable {
			t.Errorf("buffer modifiable while streaming = %v, %v", modifiable, err)
		}
		press(t, s, "<C-c>")
		got, err := s.Wait(5*time.Second, func(x string) bool {
			return strings.Contains(x, "<!-- flemma:aborted: Response interrupted by the user. -->") && strings.HasSuffix(x, "@You:\n")
		})
		if err != nil {
			t.Fatalf("no abort marker:\n%s", got)
		}
		if !strings.HasPrefix(got, question+"\n@Assistant:\nword word") {
			t.Errorf("partial response not kept:\n%s", got)
		}
		if err := s.Lua(&modifiable, "return vim.bo.modifiable"); err != nil || !modifiable {
			t.Errorf("buffer not modifiable after the abort")
		}
	})
}

// TestSendErrors: an HTTP error is one readable notification and the buffer
// is left exactly as it was (retries off: send.retries = 0 sends once).
func TestSendErrors(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("never")}, status: 529}
	eachNvimSend(t, f, ", send = { retries = 0 }", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "err.chat", question)
		press(t, s, "<C-]>")
		if _, err := s.Wait(5*time.Second, func(string) bool { return strings.Contains(s.Messages(), "Overloaded") }); err != nil {
			t.Fatalf("no error notification; messages:\n%s", s.Messages())
		}
		if got := text(t, s); got != strings.TrimSuffix(question, "\n") {
			t.Errorf("buffer changed by a failed send:\n%q", got)
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.mu.Unlock()
		if n != 1 {
			t.Errorf("%d requests with send.retries = 0", n)
		}
	})
}

// TestStreamedBashIsApproved: a bash call the model makes in this session is
// approved by the policy (unlike one found in a file).
func TestStreamedBashIsApproved(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("", [3]string{"toolu_b1", "bash", `{"command": "echo streamed", "label": "echo", "timeout": null}`}),
		sse("Done."),
	}}
	eachNvimSend(t, f, `, tools = { auto_approve = { "$default", "bash" } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "sb.chat", question)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "toolu_b1"); isErr || body != "streamed" {
			t.Errorf("bash = %q (error %v)", body, isErr)
		}
	})
}

// TestNoDoubleExecution: presses that land while autopilot works never run
// a call twice.
func TestNoDoubleExecution(t *testing.T) {
	f := &fakeAnthropic{turns: []string{
		sse("", [3]string{"toolu_d1", "bash", `{"command": "echo run >> count.txt", "label": "count", "timeout": null}`}),
		sse("Done."),
	}}
	eachNvimSend(t, f, `, tools = { auto_approve = { "$default", "bash" } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "dx/d.chat", question)
		for i := 0; i < 15; i++ {
			press(t, s, "<C-]>")
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Done.") }); err != nil {
			t.Fatalf("loop did not finish:\n%s", text(t, s))
		}
		b, err := os.ReadFile(filepath.Join(s.Dir, "dx", "count.txt"))
		if err != nil || string(b) != "run\n" {
			t.Errorf("count.txt = %q, %v; the call ran more than once", b, err)
		}
	})
}

// A response cut at max_tokens inside a tool call: the buffer says so, the
// user is told, autopilot stops, and none of its calls runs — not even the
// complete one the policy approves. The next press answers them with the
// reason, and the model gets it.
func TestCutResponseRunsNothing(t *testing.T) {
	cut := strings.Replace(sse("Let me compute.",
		[3]string{"toolu_c1", "calculator", `{"expression": "6*7", "label": null}`},
		[3]string{"toolu_c2", "calculator", `{"expression": "1+`}),
		`"stop_reason":"tool_use"`, `"stop_reason":"max_tokens"`, 1)
	f := &fakeAnthropic{turns: []string{cut, sse("Understood.")}}
	eachNvimSend(t, f, `, tools = { auto_approve = { "calculator" } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "cut.chat", question)
		press(t, s, "<C-]>")
		marker := "<!-- flemma:aborted: Response cut at the output limit (max_tokens): none of its tool calls was run. The input of calculator (toolu_c2) is incomplete. -->"
		if got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, marker) }); err != nil {
			t.Fatalf("no marker:\n%s", got)
		}
		if _, err := s.Wait(10*time.Second, func(string) bool { return strings.Contains(s.Messages(), "Autopilot stops here") }); err != nil {
			t.Fatalf("no warning:\n%s", s.Messages())
		}
		if strings.Contains(text(t, s), "**Tool Result:**") {
			t.Fatalf("autopilot went on:\n%s", text(t, s))
		}
		press(t, s, "<C-]>")
		got, err := s.Wait(15*time.Second, func(x string) bool { return strings.Contains(x, "Understood.") })
		if err != nil {
			t.Fatalf("buffer:\n%s", got)
		}
		if strings.Contains(got, "```\n42\n```") || strings.Count(got, "(error)") != 2 {
			t.Errorf("a call of the cut response ran, or lacks its error result:\n%s", got)
		}
		f.mu.Lock()
		second := f.bodies[len(f.bodies)-1]
		f.mu.Unlock()
		b, _ := json.Marshal(second["messages"])
		if !strings.Contains(string(b), "max_tokens") {
			t.Errorf("the model is not told why: %s", b)
		}
	})
}

// TestModelAwareRequests: the request is built for the model: adaptive
// thinking for a Claude that rejects budgets, max_tokens cut to a model's
// limit (said once), and a model flemma does not know sent without
// thinking, said once.
func TestModelAwareRequests(t *testing.T) {
	f := &fakeAnthropic{turns: []string{sse("Hi.")}}
	eachNvimSend(t, f, `, parameters = { max_tokens = 50000 }`, func(t *testing.T, s *nvimtest.Session) {
		send := func(name, model string) map[string]any {
			t.Helper()
			fm := ""
			if model != "" {
				fm = "```lua\nflemma.opt.model = \"" + model + "\"\n```\n"
			}
			mustOpen(t, s, name, fm+question)
			press(t, s, "<C-]>")
			if got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Hi.\n\n@You:") }); err != nil {
				t.Fatalf("no answer:\n%s", got)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.bodies[len(f.bodies)-1]
		}
		notes := func(sub string) int { return strings.Count(s.Messages(), sub) }

		for _, name := range []string{"a.chat", "b.chat"} {
			body := send(name, "")
			if body["max_tokens"] != float64(50000) || body["thinking"] != nil {
				t.Errorf("unknown model: max_tokens %v thinking %v, want the set 50000 and none", body["max_tokens"], body["thinking"])
			}
		}
		if n := notes("flemma does not know the model test-model (anthropic): it sends max_tokens 50,000 and no thinking parameter"); n != 1 {
			t.Errorf("%d notes on the unknown model, want 1:\n%s", n, s.Messages())
		}

		body := send("c.chat", "claude-3-5-haiku-20241022")
		if body["max_tokens"] != float64(8192) || body["thinking"] != nil {
			t.Errorf("claude-3-5-haiku: max_tokens %v thinking %v", body["max_tokens"], body["thinking"])
		}
		if n := notes("max_tokens 50,000 is above the output limit of claude-3-5-haiku-20241022 (8,192): 8,192 is sent."); n != 1 {
			t.Errorf("%d limit notes, want 1:\n%s", n, s.Messages())
		}

		body = send("d.chat", "claude-opus-4-8")
		th, _ := json.Marshal(body["thinking"])
		oc, _ := json.Marshal(body["output_config"])
		if string(th) != `{"display":"summarized","type":"adaptive"}` || string(oc) != `{"effort":"high"}` || body["max_tokens"] != float64(50000) {
			t.Errorf("claude-opus-4-8: thinking %s output_config %s max_tokens %v", th, oc, body["max_tokens"])
		}
	})
}
