package tools

import (
	"encoding/json"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Proposal is what a pending write or edit would leave in its file,
// computed in memory by the same steps as the call (sandbox check, stale
// file check, edit's exact-match rules) without writing anything.
type Proposal struct {
	Path   string // the resolved path
	Input  string // the path as the call gave it
	Exists bool   // the file exists (Old is its content)
	Old    []byte
	New    []byte
}

// Proposer is what the engine asks of the tools that change files, for
// the diff review of a pending call and for :Flemma undo: the built-in
// write and edit (tools/builtin.Proposer) in the host; a test may give
// another. The engine never imports the built-ins themselves.
type Proposer interface {
	// Proposes reports whether Propose knows the tool.
	Proposes(name string) bool
	// Propose computes the Proposal of a call of the tool name. Its error
	// is the one the call would report if it ran now.
	Propose(call Call, name string, input json.RawMessage) (Proposal, error)
	// ProposeContent is the Proposal of a tool that would leave content in
	// the file at path (absolute; input is the path as the tool names it),
	// read after sb's read check.
	ProposeContent(sb *sandbox.Sandbox, path, input string, content []byte) (Proposal, error)
	// Undo takes back a change a tool made, from the backups in
	// backupDir, only if the file still holds what the tool wrote.
	Undo(rec Change, backupDir string) error
}
