package cycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/flemma-dev/flemma/mcp"
)

// ensureMCP starts setup's MCP servers that have not been started and waits
// for their tools (each start is bounded by mcp.StartTimeout).
func (h *Engine) ensureMCP() {
	h.mcp.Ensure(context.Background())
}

// onMCP is :Flemma mcp: the servers of setup's mcp_servers, their status and
// their tools. It starts the servers that have not been started.
func (h *Engine) onMCP() (Reply, error) {
	h.ensureMCP()
	st := h.mcp.Status()
	if len(st) == 0 {
		return text("no MCP servers (setup's mcp_servers is empty)"), nil
	}
	var b strings.Builder
	for _, s := range st {
		fmt.Fprintf(&b, "%s  [%s]  %s", s.Name, s.Transport, s.Status)
		switch {
		case s.Reason != "" && s.Status == mcp.StatusStarting:
			fmt.Fprintf(&b, " again, after: %s", s.Reason)
		case s.Reason != "":
			fmt.Fprintf(&b, ": %s", s.Reason)
		}
		if s.Restarts > 0 {
			fmt.Fprintf(&b, "  (restarts: %d of %d)", s.Restarts, mcp.MaxRestarts)
		}
		b.WriteString("\n")
		if len(s.Tools) == 0 {
			b.WriteString("  no tools\n")
		}
		for _, name := range s.Tools {
			desc := ""
			if t, ok := h.Registry.Get(name); ok {
				desc = firstLine(t.Spec().Description)
			}
			fmt.Fprintf(&b, "  %s  %s\n", name, desc)
		}
	}
	return text(strings.TrimRight(b.String(), "\n")), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
