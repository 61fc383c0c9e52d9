package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/buffer"
)

const demoScript = "../testdata/replay/demo.sse"

// The demo script: turn 1 calls ls, read and bash in one response; once the
// results are in the buffer, turn 2 answers.
func TestReplayDemo(t *testing.T) {
	p, err := New("replay", Config{ReplayFile: demoScript})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "replay" {
		t.Errorf("Name() = %q", p.Name())
	}
	lines := []string{"@You:", "Have a look around the project."}
	send := func() []Event {
		t.Helper()
		sys, msgs, err := FromDocument(buffer.Parse(lines), p.Name())
		if err != nil {
			t.Fatal(err)
		}
		evs, err := collect(context.Background(), p, Request{System: sys, Messages: msgs, Tools: testTools()})
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(lines)
		for _, e := range evs {
			w.Add(e)
		}
		lines = append(lines, w.Finish(false)...)
		return evs
	}
	var calls []string
	for _, e := range send() {
		if e.Kind == EventToolUse {
			calls = append(calls, e.ToolUse.ID+" "+e.ToolUse.Name+" "+string(e.ToolUse.Input))
		}
	}
	want := []string{
		`toolu_demo_ls ls {"path":".","label":"listing the project","limit":null,"max_depth":null}`,
		`toolu_demo_read read {"path":"README.md","label":"reading the readme","offset":null,"limit":null}`,
		`toolu_demo_bash bash {"command":"echo hello from bash","label":"saying hello","timeout":null}`,
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("turn 1 calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	golden(t, "writer/replay_demo_turn1.chat", []byte(strings.Join(lines, "\n")+"\n"))
	// Sending now is refused by FromDocument: the calls have no results.
	if _, _, err := FromDocument(buffer.Parse(lines), "replay"); err == nil {
		t.Error("sending with unanswered calls must fail")
	}
	lines = lines[:len(lines)-1] // drop the empty line after @You:
	for _, r := range []struct{ id, out string }{
		{"toolu_demo_ls", "README.md\ngo.mod"}, {"toolu_demo_read", "# demo"}, {"toolu_demo_bash", "hello from bash"},
	} {
		lines = append(lines, "**Tool Result:** `"+r.id+"`", "", "```")
		lines = append(lines, strings.Split(r.out, "\n")...)
		lines = append(lines, "```", "")
	}
	lines = lines[:len(lines)-1]
	send()
	golden(t, "writer/replay_demo_turn2.chat", []byte(strings.Join(lines, "\n")+"\n"))
	parseOK(t, strings.Join(lines, "\n"))
	// A third send has no turn left.
	lines = append(lines[:len(lines)-1], "Thanks!")
	sys, msgs, _ := FromDocument(buffer.Parse(lines), "replay")
	_, err = collect(context.Background(), p, Request{System: sys, Messages: msgs})
	var pe *Error
	if !errors.As(err, &pe) || pe.Error() != "replay: demo.sse has no turn 3 (it has 2): the conversation went past the script" {
		t.Errorf("turn 3: err = %v", err)
	}
}

func TestParseReplay(t *testing.T) {
	cases := []struct{ in, want string }{
		{"=== turn ===\nA\n=== turn ===\nB\n", "turns=2 delay=0s [A\n|B\n]"},
		{"# comment\n\ndelay: 5ms\n=== turn ===  \r\nA\n", "turns=1 delay=5ms [A\n]"},
		{"delay: soon\n=== turn ===\n", "error: line 1: bad delay \"soon\" (want a duration such as 20ms)"},
		{"speed: 3\n=== turn ===\n", "error: line 1: unknown setting \"speed\""},
		{"data: {}\n", "error: line 1: unknown setting \"data\""},
		{"hello\n", "error: line 1: expected \"=== turn ===\" or a setting (delay: 20ms) before the first turn"},
		{"# only a comment\n", "error: no turns (each turn starts with a line \"=== turn ===\")"},
	}
	for _, tc := range cases {
		s, err := parseReplay([]byte(tc.in))
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var turns []string
			for _, turn := range s.turns {
				turns = append(turns, string(turn))
			}
			got = "turns=" + strconv.Itoa(len(s.turns)) + " delay=" + s.delay.String() + " [" + strings.Join(turns, "|") + "]"
		}
		if got != tc.want {
			t.Errorf("parseReplay(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// With a delay the replay streams slowly, and a cancel stops it.
func TestReplayDelayAndCancel(t *testing.T) {
	script := "delay: 30ms\n=== turn ===\n" + new(sse).aStart("msg_slow", 1).aText(0, "a", "b", "c", "d", "e", "f", "g", "h").aStop("end_turn", 2).String()
	path := filepath.Join(t.TempDir(), "slow.sse")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := New("replay", Config{ReplayFile: path})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	texts := 0
	err := p.Stream(ctx, hello(), func(e Event) {
		if e.Kind == EventText {
			texts++
			if texts == 2 {
				cancel()
			}
		}
	})
	if err != context.Canceled || texts != 2 {
		t.Errorf("err = %v after %d text events, want context.Canceled after 2", err, texts)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("replay did not pause between events (%v)", d)
	}
	_, err = collect(context.Background(), p, hello())
	if err != nil {
		t.Errorf("full replay: %v", err)
	}
}

func TestReplayMissingFile(t *testing.T) {
	p, _ := New("replay", Config{ReplayFile: filepath.Join(t.TempDir(), "none.sse")})
	_, err := collect(context.Background(), p, hello())
	var pe *Error
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Error(), "replay: cannot read the replay file: ") {
		t.Errorf("err = %v", err)
	}
}
