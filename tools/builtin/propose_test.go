package builtin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/tools"
)

// TestPropose is the table of a pending write/edit's proposal: what the
// call would leave in its file, or the error it would report. Each case
// then runs the real call and checks that it does exactly what was
// proposed (same content, or the same refusal), so the preview can never
// promise something else than the call.
func TestPropose(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *fixture)
		tool   string
		input  map[string]any
		exists bool
		old    string
		new    string
		err    string // a fragment of the error, "" for none
	}{
		{name: "write new file", tool: "write", input: map[string]any{"path": "new/a.txt", "content": "hello\n"}, new: "hello\n"},
		{name: "write overwrite", setup: func(f *fixture) { f.write("o.txt", "old\n") }, tool: "write",
			input: map[string]any{"path": "o.txt", "content": "new\n"}, exists: true, old: "old\n", new: "new\n"},
		{name: "edit single", setup: func(f *fixture) { f.write("e.txt", "a\nb\nc\n") }, tool: "edit",
			input: map[string]any{"path": "e.txt", "oldText": "b", "newText": "B"}, exists: true, old: "a\nb\nc\n", new: "a\nB\nc\n"},
		{name: "edit multiple lines", setup: func(f *fixture) { f.write("m.txt", "one\ntwo\nthree\nfour\n") }, tool: "edit",
			input: map[string]any{"path": "m.txt", "oldText": "two\nthree\n", "newText": "2\n3\n3.5\n"}, exists: true,
			old: "one\ntwo\nthree\nfour\n", new: "one\n2\n3\n3.5\nfour\n"},
		{name: "edit CRLF as read shows it", setup: func(f *fixture) { f.write("w.txt", "a\r\nb\r\n") }, tool: "edit",
			input: map[string]any{"path": "w.txt", "oldText": "a\nb", "newText": "a\nc"}, exists: true, old: "a\r\nb\r\n", new: "a\r\nc\r\n"},
		{name: "edit ambiguous", setup: func(f *fixture) { f.write("amb.txt", "x = 1\nx = 1\n") }, tool: "edit",
			input: map[string]any{"path": "amb.txt", "oldText": "x = 1", "newText": "x = 2"}, err: "Found 2 occurrences of the text in amb.txt"},
		{name: "edit not found", setup: func(f *fixture) { f.write("nf.txt", "abc\n") }, tool: "edit",
			input: map[string]any{"path": "nf.txt", "oldText": "zzz", "newText": "y"}, err: "Could not find the exact text in nf.txt"},
		{name: "edit identical", setup: func(f *fixture) { f.write("id.txt", "abc\n") }, tool: "edit",
			input: map[string]any{"path": "id.txt", "oldText": "abc", "newText": "abc"}, err: "No changes made to id.txt"},
		{name: "edit missing file", tool: "edit", input: map[string]any{"path": "none.txt", "oldText": "a", "newText": "b"}, err: "File not found: none.txt"},
		{name: "stale file", setup: func(f *fixture) {
			f.write("s.txt", "one\n")
			want(f.t, "read", f.run("read", map[string]any{"path": "s.txt"}), true)
			f.write("s.txt", "one\ntwo\n")
		}, tool: "edit", input: map[string]any{"path": "s.txt", "oldText": "one", "newText": "1"}, err: "File changed since you last read it: s.txt"},
		{name: "stale file, write", setup: func(f *fixture) {
			f.write("sw.txt", "one\n")
			want(f.t, "read", f.run("read", map[string]any{"path": "sw.txt"}), true)
			f.write("sw.txt", "one\ntwo\n")
		}, tool: "write", input: map[string]any{"path": "sw.txt", "content": "x"}, err: "File changed since you last read it: sw.txt"},
		{name: "deny_read", setup: func(f *fixture) { f.write(".ssh/id_ed25519", "SECRET\n") }, tool: "edit",
			input: map[string]any{"path": ".ssh/id_ed25519", "oldText": "SECRET", "newText": "x"}, err: "deny_read"},
		{name: "outside the roots", tool: "write", input: map[string]any{"path": "/etc/flemma-propose-test", "content": "x"}, err: "Sandbox: write denied"},
		{name: "no path", tool: "write", input: map[string]any{"path": "", "content": "x"}, err: "No path provided"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.setup != nil {
				c.setup(f)
			}
			raw, _ := json.Marshal(c.input)
			call := f.call
			call.Tool = c.tool
			p, err := Propose(call, c.tool, raw)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error = %v, want %q", err, c.err)
				}
				if strings.Contains(string(p.Old), "SECRET") {
					t.Errorf("the proposal read a deny_read file")
				}
				res := f.run(c.tool, c.input)
				want(t, "the call itself", res, false, c.err)
				return
			}
			if err != nil {
				t.Fatalf("Propose: %v", err)
			}
			if p.Exists != c.exists || string(p.Old) != c.old || string(p.New) != c.new {
				t.Fatalf("proposal = exists %v old %q new %q, want %v %q %q", p.Exists, p.Old, p.New, c.exists, c.old, c.new)
			}
			want(t, "the call itself", f.run(c.tool, c.input), true)
			if got := f.read(c.input["path"].(string)); got != c.new {
				t.Errorf("the call wrote %q, the proposal said %q", got, c.new)
			}
		})
	}
}

// TestProposeWritesNothing: a proposal never creates, changes or backs up
// anything, and does not count as a read.
func TestProposeWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "a\n")
	for _, in := range []struct {
		tool  string
		input map[string]any
	}{
		{"write", map[string]any{"path": "dir/new.txt", "content": "x"}},
		{"write", map[string]any{"path": "a.txt", "content": "b\n"}},
		{"edit", map[string]any{"path": "a.txt", "oldText": "a", "newText": "b"}},
	} {
		raw, _ := json.Marshal(in.input)
		if _, err := Propose(tools.Call{ID: "x", Tool: in.tool, Bufnr: 1, Cwd: f.call.Cwd, Buffer: f.call.Buffer, Env: f.env}, in.tool, raw); err != nil {
			t.Fatalf("%s: %v", in.tool, err)
		}
	}
	if exists(f.dir+"/dir") || f.read("a.txt") != "a\n" || exists(f.env.BackupDir) {
		t.Errorf("a proposal changed something on disk")
	}
	if _, ok := f.env.Reads.Lookup(1, f.dir+"/a.txt"); ok {
		t.Errorf("a proposal counted as a read")
	}
}
