package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// WriteInput is the input of write (reference §7.3).
type WriteInput struct {
	Content string `json:"content" desc:"The complete content to write to the file"`
	Label   string `json:"label" desc:"A short human-readable label for this operation"`
	Path    string `json:"path" desc:"Path to the file, absolute or relative to the chat file's directory; missing parent directories are created"`
}

// EditInput is the input of edit (reference §7.4).
type EditInput struct {
	Label   string `json:"label" desc:"A short human-readable label for this operation"`
	NewText string `json:"newText" desc:"The text to replace oldText with (empty to delete it)"`
	OldText string `json:"oldText" desc:"The exact text to replace; it must occur exactly once in the file, including all whitespace and newlines"`
	Path    string `json:"path" desc:"Path to the file, absolute or relative to the chat file's directory"`
}

// Write is the write built-in: it creates or overwrites a file inside the
// sandbox's writable roots, atomically (temporary file + rename), creating
// parent directories. A file the model read in this conversation that
// changed on disk since is refused, as by edit; a file it never read is
// replaced (unless Env.RequireRead). The previous content is backed up
// first (see backup.go) and the result carries the Change.
func Write() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:         "write",
		Capabilities: []string{tools.CapSideEffects},
		Description: "Write content to a file, creating it (and its parent directories) or replacing it entirely. " +
			"Only paths inside the sandbox's writable directories can be written. Prefer edit for changes to an existing file. " +
			"A file that changed since you last read it is refused: read it again first.",
		Tags:    []string{"filesystem", "writes"}, // writes: in $files (approval.TagWrites)
		Enabled: true,
	}, runWrite)
}

func runWrite(ctx context.Context, call tools.Call, in WriteInput) (tools.Output, error) {
	if in.Path == "" {
		return tools.Output{}, tools.Failf("No path provided")
	}
	resolved, root, err := checkedWrite(call, "write", in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	if testHookAfterCheck != nil {
		testHookAfterCheck(resolved)
	}
	reads := call.Env.ReadsOrDefault()
	cfg := backupsOf(call.Env)
	want := sandbox.Prior{Check: true, Absent: true}
	before := tools.BackupAbsent
	cur, err := sandbox.OpenNoFollowIn(resolved, root)
	switch {
	case err == nil:
		st, staged, err := stageCurrent(cfg, cur)
		cur.Close()
		if err != nil {
			if isBackupFailure(err) {
				return tools.Output{}, backupRefusal(in.Path, err)
			}
			return tools.Output{}, ioError("read", err)
		}
		if err := staleRefusal(call, reads, resolved, staged.sum, in.Path, "write", "overwriting"); err != nil {
			staged.discard()
			return tools.Output{}, err
		}
		if before, err = staged.commit(); err != nil {
			return tools.Output{}, backupRefusal(in.Path, err)
		}
		want = sandbox.Prior{Check: true, Stamp: st}
	case errors.Is(err, os.ErrNotExist):
		// A new file (or a new folder): nothing to back up.
	default:
		return tools.Output{}, ioError("write", err)
	}
	data := []byte(in.Content)
	if err := sandbox.WriteFileAtomic(resolved, data, true, root, want); err != nil {
		return tools.Output{}, ioError("write", err)
	}
	after := sha256.Sum256(data)
	reads.Record(call.Bufnr, resolved, after)
	return tools.Output{
		Text:    withAfterWrite(ctx, call, resolved, fmt.Sprintf("Successfully wrote %d bytes to %s", len(in.Content), in.Path)),
		Changes: []tools.Change{{Path: resolved, Before: before, After: hex.EncodeToString(after[:])}},
	}, nil
}

// stageCurrent stages a backup of the open file f, the one a tool is about
// to replace, and returns its stamp (the same before and after the read,
// else errChangedMeanwhile).
func stageCurrent(cfg backupConfig, f *os.File) (sandbox.FileStamp, *stagedBackup, error) {
	before, err := sandbox.StampFile(f)
	if err != nil {
		return sandbox.FileStamp{}, nil, err
	}
	st, err := stageBackup(cfg, f)
	if err != nil {
		return sandbox.FileStamp{}, nil, err
	}
	after, err := sandbox.StampFile(f)
	if err == nil && after != before {
		err = sandbox.ErrChangedMeanwhile
	}
	if err != nil {
		st.discard()
		return sandbox.FileStamp{}, nil, err
	}
	return after, st, nil
}

func isBackupFailure(err error) bool {
	var eb *errBackup
	var big *errBackupTooLarge
	return errors.As(err, &eb) || errors.As(err, &big)
}

// staleRefusal is the stale-file protection of write and edit: a file the
// model read in this conversation whose content (sum) is no longer what it
// saw is refused; with RequireRead, so is a file it never read.
func staleRefusal(call tools.Call, reads *tools.ReadLog, resolved string, sum [sha256.Size]byte, input, verb, gerund string) error {
	seen, ok := reads.Lookup(call.Bufnr, resolved)
	switch {
	case ok && seen != sum:
		return tools.Failf("File changed since you last read it: %s. It was modified after your last read (outside this conversation, or by a command). Read it again, then retry the %s.", input, verb)
	case !ok && call.Env != nil && call.Env.RequireRead:
		return tools.Failf("Read %s before %s it: %s only changes files read in this conversation.", input, gerund, verb)
	}
	return nil
}

// Edit is the edit built-in: it replaces one exact, unique occurrence of
// oldText, refusing a file that changed since the model last read it, and
// writes atomically keeping the file's permissions. The previous content
// is backed up first (see backup.go) and the result carries the Change.
func Edit() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:         "edit",
		Capabilities: []string{tools.CapSideEffects},
		Description: "Edit a file by replacing exact text. oldText must match exactly one place in the file, " +
			"including whitespace and newlines; add surrounding lines to make it unique. " +
			"A file that changed since you last read it is refused: read it again first.",
		Tags:    []string{"filesystem", "writes"}, // writes: in $files (approval.TagWrites)
		Enabled: true,
	}, runEdit)
}

func runEdit(ctx context.Context, call tools.Call, in EditInput) (tools.Output, error) {
	if in.Path == "" {
		return tools.Output{}, tools.Failf("No path provided")
	}
	if in.OldText == "" {
		return tools.Output{}, tools.Failf("No oldText provided")
	}
	resolved, root, err := checkedWrite(call, "edit", in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	f, err := sandbox.OpenNoFollowIn(resolved, root)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, sandbox.ErrNotRegular), errors.Is(err, sandbox.ErrIsDir):
			return tools.Output{}, tools.Failf("File not found: %s", in.Path)
		}
		return tools.Output{}, ioError("read", err)
	}
	var buf bytes.Buffer
	stamp, sum, _, err := readStamped(f, &buf)
	f.Close()
	if err != nil {
		return tools.Output{}, ioError("read", err)
	}
	data := buf.Bytes()
	reads := call.Env.ReadsOrDefault()
	if err := staleRefusal(call, reads, resolved, sum, in.Path, "edit", "editing"); err != nil {
		return tools.Output{}, err
	}

	out, err := editContent(data, in)
	if err != nil {
		return tools.Output{}, err
	}
	if testHookAfterCheck != nil {
		testHookAfterCheck(resolved)
	}
	before, err := storeBackup(backupsOf(call.Env), data)
	if err != nil {
		return tools.Output{}, backupRefusal(in.Path, err)
	}
	if err := sandbox.WriteFileAtomic(resolved, out, false, root, sandbox.Prior{Check: true, Stamp: stamp}); err != nil {
		return tools.Output{}, ioError("write", err)
	}
	after := sha256.Sum256(out)
	reads.Record(call.Bufnr, resolved, after)
	return tools.Output{
		Text:    withAfterWrite(ctx, call, resolved, fmt.Sprintf("Successfully replaced text in %s.", in.Path)),
		Changes: []tools.Change{{Path: resolved, Before: before, After: hex.EncodeToString(after[:])}},
	}, nil
}

// editContent is edit's pure step: data with the one exact occurrence of
// in.OldText replaced by in.NewText (CRLF files matched as read shows
// them), or the error edit reports (not found, ambiguous, no change).
func editContent(data []byte, in EditInput) ([]byte, error) {
	oldText, newText := []byte(in.OldText), []byte(in.NewText)
	n := countOverlapping(data, oldText)
	if n == 0 && bytes.Contains(data, []byte("\r\n")) && bytes.Contains(oldText, []byte("\n")) && !bytes.Contains(oldText, []byte("\r\n")) {
		// read shows CRLF files without their CRs; match the way the model saw it.
		crlf := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }
		if m := countOverlapping(data, crlf(oldText)); m > 0 {
			oldText, newText, n = crlf(oldText), crlf(newText), m
		}
	}
	switch {
	case n == 0:
		return nil, tools.Failf("Could not find the exact text in %s. The old text must match exactly including all whitespace and newlines.", in.Path)
	case n > 1:
		return nil, tools.Failf("Found %d occurrences of the text in %s. The text must be unique. Please provide more context to make it unique.", n, in.Path)
	}
	i := bytes.Index(data, oldText)
	out := make([]byte, 0, len(data)-len(oldText)+len(newText))
	out = append(append(append(out, data[:i]...), newText...), data[i+len(oldText):]...)
	if bytes.Equal(out, data) {
		return nil, tools.Failf("No changes made to %s. The replacement produced identical content.", in.Path)
	}
	return out, nil
}

// countOverlapping counts occurrences of sub in b, advancing one byte after
// each hit (so overlapping occurrences count, as in the reference).
func countOverlapping(b, sub []byte) int {
	n := 0
	for pos := 0; pos <= len(b); {
		i := bytes.Index(b[pos:], sub)
		if i < 0 {
			break
		}
		n++
		pos += i + 1
	}
	return n
}

// testHookAfterCheck is called between the sandbox check and the write.
var testHookAfterCheck func(resolved string)
