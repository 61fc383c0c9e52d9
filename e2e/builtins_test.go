package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// These files carry their bash and edit calls already written, so the test
// setup lets the policy approve calls found in a file.
const builtinSetup = `{ tools = { auto_approve = { "$default", "bash" }, auto_approve_file_calls = true } }`

func bashChat(id, command string, extra string) string {
	return toolChat("bash", id, `{"command": "`+command+`", "label": "test", "timeout": `+extra+`}`)
}

func TestBashTruncatedWithFullOutput(t *testing.T) {
	eachNvim(t, builtinSetup, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "b.chat", bashChat("t1", "seq 1 5000", "null"))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		if isErr {
			t.Fatalf("bash failed: %s", body)
		}
		if !strings.HasSuffix(strings.TrimSpace(strings.Split(body, "\n\n[")[0]), "5000") {
			t.Errorf("the tail was not kept: ...%s", body[max(0, len(body)-200):])
		}
		m := regexp.MustCompile(`Full output: (\S+?)\]`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no full-output notice in:\n...%s", body[max(0, len(body)-300):])
		}
		full, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatalf("full output file: %v", err)
		}
		if lines := len(strings.Split(strings.TrimSpace(string(full)), "\n")); lines != 5000 || !strings.HasPrefix(string(full), "1\n2\n") {
			t.Errorf("full output has %d lines, starts %q", lines, string(full)[:10])
		}
	})
}

func TestBashTimeout(t *testing.T) {
	eachNvim(t, builtinSetup, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "to.chat", bashChat("t1", "echo start; sleep 30", "1"))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "t1")
		if !isErr || !strings.Contains(body, "timed out after 1 second") || !strings.Contains(body, "start") {
			t.Errorf("timeout result = %q (error %v)", body, isErr)
		}
	})
}

func TestBashSecrets(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-test-0123456789abcdef"}
	eachNvimEnv(t, builtinSetup, env, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "sec.chat", bashChat("t1", `echo key=[$OPENAI_API_KEY]; echo sk-test-0123456789abcdef`, "null"))
		press(t, s, "<C-]>")
		body, _ := waitResult(t, s, "t1")
		if strings.Contains(body, "0123456789abcdef") {
			t.Errorf("the secret reached the result:\n%s", body)
		}
		if !strings.Contains(body, "key=[]") || !strings.Contains(body, "[redacted]") {
			t.Errorf("bash output = %q; want an empty variable and the literal redacted", body)
		}
	})
}

func TestEditRefusedAfterExternalChange(t *testing.T) {
	eachNvim(t, builtinSetup, func(t *testing.T, s *nvimtest.Session) {
		file := filepath.Join(s.Dir, "notes.txt")
		if err := os.WriteFile(file, []byte("alpha\nbeta\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		read := toolChat("read", "r1", `{"path": "notes.txt", "offset": null, "limit": null, "label": "reading"}`)
		mustOpen(t, s, "edit.chat", read)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "r1"); isErr || !strings.Contains(body, "alpha") {
			t.Fatalf("read = %q (error %v)", body, isErr)
		}
		waitUnlocked(t, s) // the result is written a moment before the step unlocks
		// The file changes behind the model's back.
		if err := os.WriteFile(file, []byte("alpha\nBETA changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		edit := "\n@Assistant:\nNow the edit.\n\n**Tool Use:** `edit` (`e1`)\n\n```json\n{\"path\": \"notes.txt\", \"oldText\": \"alpha\", \"newText\": \"ALPHA\", \"label\": \"editing\"}\n```\n"
		if err := s.Lua(nil, `vim.api.nvim_buf_set_lines(0, -1, -1, false, vim.split(..., "\n", { plain = true }))`, strings.TrimSuffix(edit, "\n")); err != nil {
			t.Fatal(err)
		}
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "e1")
		if !isErr || !strings.Contains(strings.ToLower(body), "changed") {
			t.Errorf("edit after an external change = %q (error %v), want a refusal", body, isErr)
		}
		if got, _ := os.ReadFile(file); string(got) != "alpha\nBETA changed\n" {
			t.Errorf("the file was modified: %q", got)
		}
	})
}

func TestGrepRespectsGitignore(t *testing.T) {
	eachNvim(t, builtinSetup, func(t *testing.T, s *nvimtest.Session) {
		for name, content := range map[string]string{
			".gitignore":       "generated/\n*.log\n",
			"src/main.go":      "package main // needle\n",
			"generated/out.go": "needle in generated code\n",
			"debug.log":        "needle in a log\n",
		} {
			p := filepath.Join(s.Dir, "repo", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustOpen(t, s, "repo/g.chat", toolChat("grep", "g1", `{"pattern": "needle", "path": null, "glob": null, "limit": null, "label": "searching"}`))
		press(t, s, "<C-]>")
		body, isErr := waitResult(t, s, "g1")
		if isErr || !strings.Contains(body, "src/main.go") || strings.Contains(body, "generated") || strings.Contains(body, "debug.log") {
			t.Errorf("grep = %q (error %v)", body, isErr)
		}
	})
}

// TestBashPreview: a pending bash call shows exactly one preview line with
// the command, its label and its time limit (tools.timeouts.bash).
func TestBashPreview(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default" }, auto_approve_sandboxed = false } }`, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "pv.chat", toolChat("bash", "t1", `{"command": "make test", "label": "running tests", "timeout": null}`))
		press(t, s, "<C-]>")
		if _, err := s.Wait(5*time.Second, func(x string) bool { return strings.Contains(x, "status=pending") }); err != nil {
			t.Fatalf("bash not pending: %s", text(t, s))
		}
		m := marks(t, s)
		if len(m) != 1 || m[0].Text != "bash: $ make test  # running tests  (timeout 300s)" {
			t.Errorf("marks = %+v", m)
		}
	})
}

// TestFileCallsAskFirst: a bash call that was already in the file is not
// auto-approved, whatever the policy; the decision says why.
func TestFileCallsAskFirst(t *testing.T) {
	eachNvim(t, `{ tools = { auto_approve = { "$default", "bash" } } }`, func(t *testing.T, s *nvimtest.Session) {
		fm := "```lua\nflemma.opt.tools.auto_approve = { \"bash\", \"write\" }\n```\n"
		chat := fm + toolChat("bash", "t1", `{"command": "id", "label": "who am i", "timeout": null}`)
		buf := mustOpenForeign(t, s, "f.chat", chat)
		press(t, s, "<C-]>")
		waitText(t, s, withResults(chat, placeholder("t1", "pending", "")))
		if out := hostText(t, s, "flemma.tool_list", buf); !strings.Contains(out, "urn:flemma:approval:origin") {
			t.Errorf("tool:list does not say why:\n%s", out)
		}
	})
}
