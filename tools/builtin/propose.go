package builtin

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// MaxProposeBytes bounds the file a proposal reads: a bigger one is not
// previewed (the call itself is not affected).
const MaxProposeBytes = 8 << 20

// Proposal is tools.Proposal: what a pending write or edit would leave in
// its file.
type Proposal = tools.Proposal

// Proposer is the built-in write and edit as the engine asks them for
// proposals and undo (tools.Proposer).
var Proposer tools.Proposer = proposer{}

type proposer struct{}

func (proposer) Proposes(name string) bool { return Proposes(name) }
func (proposer) Propose(call tools.Call, name string, input json.RawMessage) (Proposal, error) {
	return Propose(call, name, input)
}
func (proposer) ProposeContent(sb *sandbox.Sandbox, path, input string, content []byte) (Proposal, error) {
	return ProposeContent(sb, path, input, content)
}
func (proposer) Undo(rec tools.Change, backupDir string) error { return Undo(rec, backupDir) }

// Proposes reports whether Propose knows the tool.
func Proposes(name string) bool { return name == "write" || name == "edit" }

// Propose computes the Proposal of a write or edit call. Its error is the
// one the call would report if it ran now (a refusal of the sandbox, a
// stale file, edit's text not found or ambiguous, …).
func Propose(call tools.Call, name string, input json.RawMessage) (Proposal, error) {
	var p Proposal
	var path string
	var edit EditInput
	var write WriteInput
	switch name {
	case "write":
		if err := json.Unmarshal(input, &write); err != nil {
			return p, tools.Failf("Invalid input: %v", err)
		}
		path = write.Path
	case "edit":
		if err := json.Unmarshal(input, &edit); err != nil {
			return p, tools.Failf("Invalid input: %v", err)
		}
		if edit.Path != "" && edit.OldText == "" {
			return p, tools.Failf("No oldText provided")
		}
		path = edit.Path
	default:
		return p, fmt.Errorf("%s has no diff preview", name)
	}
	if path == "" {
		return p, tools.Failf("No path provided")
	}
	resolved, root, err := checkedWrite(call, name, path)
	if err != nil {
		return p, err
	}
	p.Path, p.Input = resolved, path
	f, err := sandbox.OpenNoFollowIn(resolved, root)
	switch {
	case err == nil:
	case name == "write" && errors.Is(err, os.ErrNotExist):
		p.New = []byte(write.Content)
		return p, nil
	case name == "edit" && (errors.Is(err, os.ErrNotExist) || errors.Is(err, sandbox.ErrNotRegular) || errors.Is(err, sandbox.ErrIsDir)):
		return p, tools.Failf("File not found: %s", path)
	default:
		return p, ioError(name, err)
	}
	defer f.Close()
	sum, err := readProposed(f, path, &p)
	if err != nil {
		return p, err
	}
	gerund := map[string]string{"write": "overwriting", "edit": "editing"}[name]
	if err := staleRefusal(call, call.Env.ReadsOrDefault(), resolved, sum, path, name, gerund); err != nil {
		return p, err
	}
	if name == "write" {
		p.New = []byte(write.Content)
		return p, nil
	}
	p.New, err = editContent(p.Old, edit)
	return p, err
}

// readProposed reads an open file into p.Old (bounded by MaxProposeBytes)
// and returns its digest.
func readProposed(f *os.File, path string, p *Proposal) ([sha256.Size]byte, error) {
	if st, err := f.Stat(); err == nil && st.Size() > MaxProposeBytes {
		return [sha256.Size]byte{}, fmt.Errorf("%s is too large to preview (%d bytes)", path, st.Size())
	}
	var buf bytes.Buffer
	_, sum, _, err := readStamped(f, &buf)
	if err != nil {
		return sum, ioError("read", err)
	}
	p.Exists, p.Old = true, buf.Bytes()
	return sum, nil
}

// ProposeContent is the Proposal of a tool that would leave content in
// the file at path, an absolute path (a Lua tool with the "diff"
// capability, which writes on its own; input is the path as the tool
// names it): the file as it is now is read after sb's read check
// (deny_read, per-process files), without following a symbolic link. The
// tool's write itself is not checked: flemma does not do it.
func ProposeContent(sb *sandbox.Sandbox, path, input string, content []byte) (Proposal, error) {
	p := Proposal{Input: input, New: content}
	if len(content) > MaxProposeBytes {
		return p, fmt.Errorf("the proposed content of %s is too large to preview (%d bytes)", input, len(content))
	}
	resolved, err := sb.CheckRead(path)
	if err != nil {
		return p, pathError(err, "read", input, sb)
	}
	p.Path = resolved
	f, err := sandbox.OpenNoFollow(resolved)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
		return p, nil
	default:
		return p, ioError("read", err)
	}
	defer f.Close()
	_, err = readProposed(f, input, &p)
	return p, err
}
