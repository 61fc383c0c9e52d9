package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
)

// BufferKey returns the journal key of a .chat file: its absolute path with
// symbolic links resolved, so the same file opened through a link or a
// relative name has one key. If the path cannot be resolved (the file was
// deleted), the cleaned absolute path is used.
func BufferKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// HashInput returns "sha256:<hex>" of the canonical JSON encoding of a tool
// input as decoded from the buffer (encoding/json sorts object keys), so the
// same input hashes alike whatever its spacing or key order in the buffer.
// Decode numbers the same way every time (float64, or json.Number
// everywhere) for hashes to compare equal.
func HashInput(input any) (string, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
