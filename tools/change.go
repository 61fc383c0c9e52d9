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
	// After is the SHA-256 (hex) of the content the tool wrote.
	After string `json:"after"`
}

// BackupAbsent is Change.Before for a file the tool created.
const BackupAbsent = "absent"
