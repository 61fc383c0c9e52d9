package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// step is one scripted answer of stepServer: an HTTP error (status, with
// headers) or, for status 200, an SSE stream sent event by event — pausing
// pause between events, or, with hold, stopping after the first `hold`
// events until the client hangs up.
type step struct {
	status int
	header map[string]string
	body   string
	pause  time.Duration
	hold   int
}

// stepServer answers its n-th request with steps[n] (the last repeats) and
// records the request bodies.
type stepServer struct {
	mu     sync.Mutex
	steps  []step
	bodies []map[string]any
}

func (f *stepServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	st := f.steps[min(len(f.bodies), len(f.steps)-1)]
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	for k, v := range st.header {
		w.Header().Set(k, v)
	}
	if st.status != http.StatusOK {
		w.WriteHeader(st.status)
		fmt.Fprint(w, st.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, chunk := range strings.SplitAfter(st.body, "\n\n") {
		if st.hold > 0 && i == st.hold {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, chunk)
		w.(http.Flusher).Flush()
		if st.pause > 0 {
			select {
			case <-time.After(st.pause):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func (f *stepServer) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

func eachNvimSteps(t *testing.T, f *stepServer, extra string, fn func(t *testing.T, s *nvimtest.Session)) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	eachNvimEnv(t, sendSetup(srv.URL, extra), []string{"ANTHROPIC_API_KEY=test-key"}, func(t *testing.T, s *nvimtest.Session) {
		f.mu.Lock()
		f.bodies = nil // one server serves every Neovim version in turn
		f.mu.Unlock()
		fn(t, s)
	})
}

// TestRetryAfterOverload: Anthropic answers 529 (asking for 300 ms with
// retry-after-ms), then streams: the user sees the retry notice with the
// wait and the attempt, then the answer, written once.
func TestRetryAfterOverload(t *testing.T) {
	f := &stepServer{steps: []step{
		{status: 529, header: map[string]string{"Content-Type": "application/json", "Retry-After-Ms": "300"},
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{status: http.StatusOK, body: sse("It is 42.")},
	}}
	eachNvimSteps(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "retry.chat", question)
		press(t, s, "<C-]>")
		waitText(t, s, "@You:\nWhat is 6*7?\n\n@Assistant:\nIt is 42.\n\n@You:\n")
		notice := "anthropic: 529 Overloaded — retrying in 300 ms (attempt 2/5); <C-c> cancels"
		waitMessage(t, s, notice)
		if n := len(f.requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// TestSendAgainAfterCancel: <C-c> in the middle of an answer, then <C-]> on
// the empty prompt: the second request ends with the user's question (the
// partial answer, which stays in the buffer, is not sent as an assistant
// prefill), and its answer arrives.
func TestSendAgainAfterCancel(t *testing.T) {
	f := &stepServer{steps: []step{
		{status: http.StatusOK, body: sse("Once upon a time there was"), hold: 4}, // start, block start, two words
		{status: http.StatusOK, body: sse("It is 42.")},
	}}
	eachNvimSteps(t, f, "", func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "again.chat", question)
		press(t, s, "<C-]>")
		if got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "Once upon") }); err != nil {
			t.Fatalf("nothing streamed:\n%s", got)
		}
		press(t, s, "<C-c>")
		partial, err := s.Wait(10*time.Second, func(x string) bool {
			return strings.Contains(x, "<!-- flemma:aborted: Response interrupted by the user. -->") && strings.HasSuffix(x, "@You:\n")
		})
		if err != nil {
			t.Fatalf("no abort marker:\n%s", partial)
		}
		press(t, s, "<C-]>")
		got, err := s.Wait(10*time.Second, func(x string) bool { return strings.Contains(x, "It is 42.") && strings.HasSuffix(x, "@You:\n") })
		if err != nil {
			t.Fatalf("no second answer:\n%s\nmessages:\n%s", got, s.Messages())
		}
		if !strings.HasPrefix(got, partial) {
			t.Errorf("the partial answer was not kept:\n%s", got)
		}
		reqs := f.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		msgs, _ := reqs[1]["messages"].([]any)
		b, _ := json.Marshal(msgs)
		if len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" || strings.Contains(string(b), "Once upon") {
			t.Errorf("second request's messages: %s", b)
		}
	})
}
