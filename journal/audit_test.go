package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The audit log keeps a call's arguments (bounded, with their whole size)
// and a decision's detail, and exports them as JSON lines and as text
// (issue 28 item 3).
func TestAuditArgumentsAndDetails(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	j := openTest(t, &Options{Now: clock.Now, PID: 7})
	const buf = "/p/a.chat"
	big := `{"content": "` + strings.Repeat("é", MaxInputBytes) + `"}`
	id := mustStart(t, j, Call{Buffer: buf, CallID: "w1", Tool: "write", InputHash: "h1", Input: big, Decision: "approve", DecidedBy: "user"})
	if err := j.Finish(ctx, id, Outcome{Status: "ok", Result: "wrote 1 file"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Record(ctx, Event{Buffer: buf, CallID: "b1", Tool: "bash", InputHash: "h2", Input: `{"command": "rm -rf build"}`,
		Decision: "rejected", DecidedBy: "user (status edit)", Detail: "not the build folder"}); err != nil {
		t.Fatal(err)
	}
	c, ok, err := j.Latest(ctx, buf, "w1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(c.Input) > MaxInputBytes || c.InputBytes != int64(len(big)) || !strings.HasPrefix(big, c.Input) {
		t.Errorf("input kept %d bytes of %d (recorded size %d)", len(c.Input), len(big), c.InputBytes)
	}
	var out bytes.Buffer
	if err := j.Export(ctx, &out, Filter{Buffer: buf, Results: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("export:\n%s", out.String())
	}
	var call, ev map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &call)
	_ = json.Unmarshal([]byte(lines[1]), &ev)
	if call["input_bytes"] != float64(len(big)) || call["result"] != "wrote 1 file" {
		t.Errorf("call line: %s", lines[0][:200])
	}
	if ev["detail"] != "not the build folder" || ev["input"] != `{"command": "rm -rf build"}` || ev["decision"] != "rejected" {
		t.Errorf("event line: %s", lines[1])
	}
	out.Reset()
	if err := j.Export(ctx, &out, Filter{Buffer: buf, Results: true, Text: true}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"  w1  write  ran: ok in ",
		"(approve, by user)",
		"(input cut: 16383 of 32783 bytes kept)",
		"  result: wrote 1 file\n",
		"  b1  bash  rejected, by user (status edit)\n  detail: not the build folder\n  input: {\"command\": \"rm -rf build\"}\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text[len(text)-400:])
		}
	}
}
