package tools

import (
	"fmt"
	"time"
)

// Timeouts are the time limits of calls by class (tools.timeouts, issue 28
// item 2; seed 001's default_seconds and shell_commands_seconds): a key is
// a tool's name, one of its tags (a class of tools: "filesystem", "shell",
// "mcp", or a tag of the user's own tools) or "default".
type Timeouts struct {
	// Default is the "default" class: tools.timeouts.default, else
	// tools.default_timeout (its older name), else DefaultToolTimeout.
	Default time.Duration
	// Classes are the other keys of tools.timeouts: tool names and tags.
	Classes map[string]time.Duration
}

// For is the time limit of a call of the tool s, and where it comes from
// (for previews and :Flemma tools): the entry of tools.timeouts naming the
// tool; else the largest of its tags' entries; else the tool's own timeout
// (its definition's, or a built-in's own bound, such as calculator's);
// else the default class. A tool that times itself (SelfTimed: bash) takes
// it as its default and as the cap of the timeout the model asks for.
func (t Timeouts) For(s Spec) (d time.Duration, from string) {
	if d, ok := t.Classes[s.Name]; ok && d > 0 {
		return d, "tools.timeouts." + s.Name
	}
	var tag string
	for _, g := range s.Tags {
		if c, ok := t.Classes[g]; ok && c > d {
			d, tag = c, g
		}
	}
	if d > 0 {
		return d, "tools.timeouts." + tag
	}
	if s.Timeout > 0 && !s.SelfTimed {
		return s.Timeout, "the tool's own"
	}
	if t.Default > 0 {
		return t.Default, "tools.timeouts.default"
	}
	return DefaultToolTimeout, "tools.timeouts.default"
}

// Asked is what a call of a self-timed tool runs with when the model asks
// for asked seconds (bash's timeout input; <= 0: not asked) under the
// limit: the model may lower it, never raise it.
func Asked(limit time.Duration, asked float64) time.Duration {
	if asked <= 0 {
		return limit
	}
	return min(limit, time.Duration(asked*float64(time.Second)))
}

// FormatTimeout writes a time limit for the user: "300s", "1.5s".
func FormatTimeout(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%gs", d.Seconds())
}
