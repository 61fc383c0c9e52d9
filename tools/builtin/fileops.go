package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// checkedWrite resolves a write/edit target and asks the sandbox; with
// Env.Protect a protected path is refused too. The error is model-facing
// and names the rule that refused the path. root is the writable root
// holding the path, for the identity re-check just before the write.
func checkedWrite(call tools.Call, verb, input string) (resolved string, root sandbox.RootRef, err error) {
	sb, err := call.Env.SandboxFor(call)
	if err != nil {
		return "", sandbox.RootRef{}, tools.Failf("Sandbox error: %v", err)
	}
	abs := sandbox.ResolvePath(input, call.Env.WorkDir(call))
	resolved, err = sb.CheckWrite(abs)
	if err != nil {
		return "", sandbox.RootRef{}, pathError(err, verb, input, sb)
	}
	if sb.Protecting() {
		if rule, ok := sb.Protected(abs); ok {
			return "", sandbox.RootRef{}, tools.Failf("Sandbox: %s denied – %s is a protected path (rule %q): a change there can make code run later, so only the user may approve it; ask the user to approve this call", verb, input, rule)
		}
	}
	root, _ = sb.WriteRoot(resolved)
	return resolved, root, nil
}

// checkedRead resolves a path to read or list and asks the sandbox.
func checkedRead(call tools.Call, input string) (string, error) {
	sb, err := call.Env.SandboxFor(call)
	if err != nil {
		return "", tools.Failf("Sandbox error: %v", err)
	}
	abs := sandbox.ResolvePath(input, call.Env.WorkDir(call))
	resolved, err := sb.CheckRead(abs)
	if err != nil {
		return "", pathError(err, "read", input, sb)
	}
	return resolved, nil
}

// pathError words a refusal or resolution failure of the sandbox check.
func pathError(err error, verb, input string, sb *sandbox.Sandbox) error {
	var de *sandbox.DenyError
	if errors.As(err, &de) {
		msg := fmt.Sprintf("Sandbox: %s denied – %s: %s", verb, de.Rule, input)
		if strings.HasPrefix(de.Rule, "path is outside") {
			if roots := sb.Roots(); len(roots) > 0 {
				msg += ". Writable directories: " + strings.Join(roots, ", ")
			} else {
				msg += ". No directory is writable in this buffer"
			}
			if refused := sb.Refused(); len(refused) > 0 {
				msg += ". Refused as writable: " + strings.Join(refused, "; ")
			}
		}
		return errors.New(msg)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return tools.Failf("File not found: %s", input)
	}
	if r := sandbox.FSReason(err); r != "" {
		return tools.Failf("Cannot resolve path %s: %s", input, r)
	}
	return &tools.Internal{Err: err}
}

// ioError words a failure to read or write a file whose path passed the
// sandbox: "Cannot <what> file: <reason>".
func ioError(what string, err error) error {
	if r := sandbox.FSReason(err); r != "" {
		return tools.Failf("Cannot %s file: %s", what, r)
	}
	return &tools.Internal{Err: err}
}

// withAfterWrite adds to a write's or an edit's result what Env.AfterWrite
// says about the changed file (the editor's diagnostics of its new text).
func withAfterWrite(ctx context.Context, call tools.Call, resolved, text string) string {
	if call.Env == nil || call.Env.AfterWrite == nil {
		return text
	}
	if note := call.Env.AfterWrite(ctx, call, resolved); note != "" {
		return text + "\n\n" + note
	}
	return text
}
