package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/flemma-dev/flemma/internal/nvimtest"
)

// mcpechoDir holds the server mcpecho built (TestMain removes it).
var mcpechoDir string

// mcpecho builds testdata/mcpecho once for the tests of the package.
var mcpecho = func() func(t *testing.T) string {
	var once sync.Once
	var bin string
	var err error
	var out []byte
	return func(t *testing.T) string {
		t.Helper()
		once.Do(func() {
			dir, derr := os.MkdirTemp("", "mcpecho")
			if derr != nil {
				err = derr
				return
			}
			mcpechoDir = dir
			bin = filepath.Join(dir, "mcpecho")
			out, err = exec.Command("go", "build", "-o", bin, "./testdata/mcpecho").CombinedOutput()
		})
		if err != nil {
			t.Fatalf("building the MCP server: %v\n%s", err, out)
		}
		return bin
	}
}()

// TestMCPToolCall: the model calls mcp__test__echo, a tool of an MCP server
// setup configures (a stdio server built with the official SDK,
// testdata/mcpecho); auto_approve's mcp__test__* pattern approves it, the
// host starts the server at the first send and the server's answer lands in
// the buffer. :Flemma mcp lists the server and its tool.
func TestMCPToolCall(t *testing.T) {
	bin := mcpecho(t)
	f := &fakeAnthropic{turns: []string{
		sse("Asking the server.", [3]string{"toolu_m1", "mcp__test__echo", `{"text": "hello MCP"}`}),
		sse("The server answered."),
	}}
	extra := `, mcp_servers = { test = { command = "` + bin + `" } }, tools = { auto_approve = { "mcp__test__*" } }`
	eachNvimSend(t, f, extra, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "mcp.chat", question)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "toolu_m1"); isErr || body != "mcpecho says: hello MCP" {
			t.Errorf("mcp__test__echo = %q (error %v)", body, isErr)
		}
		f.mu.Lock()
		first := f.bodies[0]
		f.mu.Unlock()
		var schema map[string]any
		list, _ := first["tools"].([]any)
		for _, x := range list {
			if d, _ := x.(map[string]any); d["name"] == "mcp__test__echo" {
				schema, _ = d["input_schema"].(map[string]any)
			}
		}
		if props, _ := schema["properties"].(map[string]any); props["text"] == nil {
			t.Errorf("the request's mcp__test__echo lacks its schema: %v", list)
		}
		if err := s.Nv.Command("Flemma mcp"); err != nil {
			t.Fatal(err)
		}
		if m := listingWindow(t, s, "mcp"); !strings.Contains(m, "test  [stdio: "+bin+"]  ready") || !strings.Contains(m, "mcp:test:echo  Echoes text back.") {
			t.Errorf(":Flemma mcp:\n%s", m)
		}
	})
}

// A wrong mcp_servers entry is reported and left out; the valid ones stay
// (:Flemma mcp lists them).
func TestMCPSetupChecked(t *testing.T) {
	setup := `{ mcp_servers = {
		["Bad-Name"] = { command = "x" },
		both = { command = "x", url = "http://127.0.0.1:1/mcp" },
		argv = { command = "x", args = "--flag" },
		typo = { comand = "x" },
		ok = { command = "/nonexistent/mcp-server", env = { TOKEN = "t" } },
	} }`
	eachNvim(t, setup, func(t *testing.T, s *nvimtest.Session) {
		m := s.Messages()
		for _, want := range []string{
			"mcp_servers.Bad-Name: a server name is lower-case letters and digits",
			"mcp_servers.both: set command (a stdio server) or url (a streamable HTTP server), one of the two",
			`mcp_servers.argv: args: expected a list of strings, got "--flag"`,
			"unknown option mcp_servers.typo.comand: it is ignored",
		} {
			if !strings.Contains(m, want) {
				t.Errorf("no %q in the messages:\n%s", want, m)
			}
		}
		mustOpen(t, s, "m.chat", "@You:\nhi\n")
		if err := s.Nv.Command("Flemma mcp"); err != nil {
			t.Fatal(err)
		}
		list := listingWindow(t, s, "mcp")
		if !strings.Contains(list, "ok  [stdio: /nonexistent/mcp-server]  failed") || strings.Contains(list, "both") || strings.Contains(list, "argv") {
			t.Errorf(":Flemma mcp:\n%s", list)
		}
	})
}

// Issue 24, class 8: an MCP server whose tool's schema refers to a local
// FIFO (`{"$ref": "file:///…/fifo"}`) used to make the host open it under
// the executor's lock at the first call: that call hung past <C-c>, and
// every other call with it. The schema is refused when the server's tools
// register (the log says why), nothing is opened, and the server's other
// tools and the built-ins keep working.
func TestMCPSchemaCannotOpenFiles(t *testing.T) {
	bin := mcpecho(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeAnthropic{turns: []string{
		sse("Peeking.", [3]string{"toolu_p1", "mcp__test__peek", `{"x": "a"}`}, [3]string{"toolu_e1", "mcp__test__echo", `{"text": "still here"}`},
			[3]string{"toolu_l1", "ls", `{"path": ".", "label": "list", "limit": null}`}),
		sse("Done."),
	}}
	extra := `, mcp_servers = { test = { command = "` + bin + `", env = { MCPECHO_SCHEMA_REF = "file://` + fifo + `" } } }, tools = { auto_approve = { "$default", "mcp__test__*" } }`
	eachNvimSend(t, f, extra, func(t *testing.T, s *nvimtest.Session) {
		mustOpen(t, s, "mcp.chat", question)
		press(t, s, "<C-]>")
		if body, isErr := waitResult(t, s, "toolu_e1"); isErr || body != "mcpecho says: still here" {
			t.Errorf("mcp__test__echo = %q (error %v)", body, isErr)
		}
		if _, isErr := waitResult(t, s, "toolu_l1"); isErr {
			t.Errorf("ls failed")
		}
		if body, isErr := waitResult(t, s, "toolu_p1"); !isErr || strings.Contains(body, "peeked") {
			t.Errorf("mcp__test__peek = %q (error %v), want an error", body, isErr)
		}
		if log := s.HostLog(); !strings.Contains(log, `tool "peek" skipped: input schema: `) {
			t.Errorf("no word in the log on the refused schema")
		}
	})
}
