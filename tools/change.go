package tools

// Change is what a tool did to one file, with what Undo needs to take it
// back. The host keeps it (e.g. in its journal) with the call.
type Change struct {
	// Path is the file, absolute with symlinks resolved.
	Path string `json:"path"`
	// Before is the SHA-256 (hex) of the content before the change, the
	// name of its backup; BackupAbsent when the file did not exist; ""
	// when no backup was kept (backups turned off).
	Before string `json:"before"`
	// After is the SHA-256 (hex) of the content the tool wrote;
	// BackupAbsent when the tool deleted the file.
	After string `json:"after"`
	// Mode is the permission bits of a file the tool deleted, given back
	// when Undo recreates it (0: the default permissions).
	Mode uint32 `json:"mode,omitempty"`
}

// BackupAbsent is Change.Before for a file the tool created, and
// Change.After for one it deleted.
const BackupAbsent = "absent"
