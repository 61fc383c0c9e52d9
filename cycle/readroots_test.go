package cycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Reads by policy stay in the project: the model's read of the project's
// file runs, its read of /etc/passwd asks (naming the path), and with
// sandbox.readable = { "/" } it runs as before (issue 28 item 6).
func TestReadsOutsideTheProjectAsk(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readable []any
		asks     bool
	}{
		{"default", nil, true},
		{"readable everywhere", []any{"/"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setup := script(t,
				turn{text: "Reading.", calls: []call{
					{"toolu_in", "read", map[string]any{"path": "notes.txt", "label": "notes"}},
					{"toolu_out", "read", map[string]any{"path": "/etc/passwd", "label": "users"}},
					{"toolu_ls", "ls", map[string]any{"path": "/etc", "label": "listing"}},
				}},
				turn{text: "Done."},
			)
			if tc.readable != nil {
				setup = with(setup, map[string]any{"sandbox": map[string]any{"readable": tc.readable}})
			}
			env := newEnv(t, setup)
			if err := os.WriteFile(filepath.Join(env.dir, "notes.txt"), []byte("hello\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nlook\n")
			env.press(1)
			if tc.asks {
				env.ed.waitText(t, 1, "status=pending")
				env.ed.waitIdle(t, env.h, 1)
				text := env.ed.String(1)
				if strings.Count(text, "status=pending") != 2 || strings.Count(text, "status=approved") != 1 {
					t.Fatalf("want notes.txt approved and the two reads of /etc pending:\n%s", text)
				}
				list := env.toolList()
				for _, want := range []string{"reads /etc/passwd, outside the project (readable roots: ", "reads /etc, outside the project"} {
					if !strings.Contains(list, want) {
						t.Errorf(":Flemma tool:list lacks %q:\n%s", want, list)
					}
				}
				return
			}
			env.ed.waitText(t, 1, "Done.")
			env.ed.waitIdle(t, env.h, 1)
			if text := env.ed.String(1); strings.Contains(text, "status=pending") || !strings.Contains(text, "root:") {
				t.Errorf("with readable = { \"/\" } every read runs:\n%s", text)
			}
		})
	}
}

// A symlink inside the project that points outside it is a read outside.
func TestReadThroughALinkOutsideAsks(t *testing.T) {
	env := newEnv(t, script(t,
		turn{text: "Reading.", calls: []call{{"toolu_l", "read", map[string]any{"path": "link", "label": "x"}}}},
		turn{text: "Done."},
	))
	if err := os.Symlink("/etc/passwd", filepath.Join(env.dir, "link")); err != nil {
		t.Fatal(err)
	}
	env.ed.load(1, filepath.Join(env.dir, "c.chat"), env.dir, "@You:\nlook\n")
	env.press(1)
	env.ed.waitText(t, 1, "status=pending")
	env.ed.waitIdle(t, env.h, 1)
	if list := env.toolList(); !strings.Contains(list, "reads /etc/passwd, outside the project") {
		t.Errorf(":Flemma tool:list:\n%s", list)
	}
}
