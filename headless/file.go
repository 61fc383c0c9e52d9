package headless

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flemma-dev/flemma/buffer"
	"github.com/flemma-dev/flemma/cycle"
	"github.com/flemma-dev/flemma/trust"
)

// Bufnr is the buffer number of the file in the engine: a run has one.
const Bufnr = 1

// ErrChanged wraps the error of a write refused because the file changed
// on disk under the run.
var ErrChanged = errors.New("the file changed on disk")

// File is a cycle.Editor whose only buffer (Bufnr) is a .chat file. The
// text lives in memory with a changedtick, as in Neovim; each Apply that
// changes it writes the whole file atomically — a temp file in the same
// folder, fsync, rename over the file, fsync of the folder — after
// checking that the file on disk still holds exactly what flemma last read
// or wrote. When it does not (the user, an editor or a script changed it),
// the write is refused: the file is left as it is, the run's own text is
// saved next to it (Conflict says where), and every later write is refused
// too. It is safe for concurrent use.
//
// Trust follows lua/flemma/trust.lua for a file opened in Neovim: the text
// as loaded is the origin (its calls are the file's, its "approved"
// statuses nobody in this run set), and the file is trusted only when it
// is blank or the caller trusts it (Open's trusted). A trusted file's
// calls are decided by the policy, its frontmatter may approve, and the
// "approved" statuses it holds count as the user's own edits: the caller
// vouched for its text.
type File struct {
	path string // absolute, links resolved: the file that is replaced
	cwd  string
	crlf bool // the file's lines end in \r\n (written back the same way)

	// OnNotify, OnEvent and OnProgress receive the engine's messages,
	// User autocommands (cycle.ToolEvent, cycle.RequestEvent) and request
	// progress. Set them before the engine is connected.
	OnNotify   func(msg string, level int)
	OnEvent    func(pattern string, data any)
	OnProgress func(p cycle.Progress)

	mu         sync.Mutex
	lines      []string
	tick       int
	modifiable bool
	trusted    bool
	digest     cycle.Digest
	vouched    []cycle.DigestCall // the calls --trust vouches for (those of the file as opened)
	tombs      string             // the engine's compacted records (trust.EncodeTombs)
	records    map[string]cycle.WireRecord
	diags      []cycle.Diag
	disk       [sha256.Size]byte // sha256 of the bytes flemma last read or wrote
	mode       fs.FileMode
	writes     int
	conflict   error         // the first refused write (sticky)
	saved      string        // where the run's own text went when a write was refused
	changed    chan struct{} // closed at the first refused write
}

// Open reads a .chat file. cwd is the working directory of the run (the
// tools' cwd, as Neovim's is in the plugin); trusted is the user's word
// that the file is theirs (flemma-host run --trust).
func Open(path, cwd string, trusted bool) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real // a link to a conversation: replace the file it points at
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, fmt.Errorf("%s holds NUL bytes: not a .chat file", path)
	}
	lines, crlf := splitLines(string(b))
	f := &File{path: abs, cwd: cwd, crlf: crlf, lines: lines, tick: 1, modifiable: true,
		records: map[string]cycle.WireRecord{}, disk: sha256.Sum256(b), mode: fi.Mode().Perm(), changed: make(chan struct{})}
	f.trusted = trusted || blank(lines)
	origin := trust.OriginOf(buffer.Parse(lines))
	f.digest = cycle.Digest{Calls: []cycle.DigestCall{}, Approved: []string{}}
	for id, hash := range origin.Calls {
		f.digest.Calls = append(f.digest.Calls, cycle.DigestCall{ID: id, Hash: hash})
	}
	f.vouched = []cycle.DigestCall{}
	if !trusted {
		for id := range origin.Approved {
			f.digest.Approved = append(f.digest.Approved, id)
		}
	} else {
		// --trust is the user's word for the file's calls as they are (as
		// :Flemma trust is in Neovim); a blank file trusts only its
		// frontmatter, and has no calls anyway.
		f.vouched = append(f.vouched, f.digest.Calls...)
	}
	return f, nil
}

// splitLines is the text as Neovim's buffer lines: one per line, the final
// newline not making an empty last line, \r\n line ends when every line
// has one.
func splitLines(s string) ([]string, bool) {
	body := strings.TrimSuffix(s, "\n")
	lines := strings.Split(body, "\n")
	crlf := s != "" && strings.HasSuffix(s, "\r\n")
	for _, l := range lines {
		crlf = crlf && strings.HasSuffix(l, "\r")
	}
	if crlf {
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return lines, crlf
}

// render is the file's bytes for lines: every line ends with a newline (as
// Neovim writes with 'fixendofline').
func (f *File) render(lines []string) []byte {
	eol := "\n"
	if f.crlf {
		eol = "\r\n"
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString(eol)
	}
	return b.Bytes()
}

func blank(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

// Path is the file's absolute path.
func (f *File) Path() string { return f.path }

// Lines returns a copy of the text as it is now.
func (f *File) Lines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// Trusted reports whether the file is trusted.
func (f *File) Trusted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.trusted
}

// Diagnostics returns flemma's diagnostics of the text as it is now.
func (f *File) Diagnostics() []cycle.Diag {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cycle.Diag(nil), f.diags...)
}

// Writes counts the writes of the file.
func (f *File) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Record returns the trust record of a call (the decision on it in this
// run), if there is one.
func (f *File) Record(id string) (cycle.WireRecord, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.records[id]
	return r, ok
}

// Conflict returns the error of the first write refused because the file
// changed on disk (nil when none was), and where the run's own text was
// saved instead ("" when it could not be).
func (f *File) Conflict() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saved, f.conflict
}

// Changed is closed when a write is refused because the file changed on
// disk: the run stops what it is doing.
func (f *File) Changed() <-chan struct{} { return f.changed }

func (f *File) Snapshot(bufnr, have int) (cycle.Snapshot, error) {
	if bufnr != Bufnr {
		return cycle.Snapshot{}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return cycle.Snapshot{Valid: true, Tick: f.tick, Count: len(f.lines), Lines: append([]string(nil), f.lines...),
		Name: f.path, Cwd: f.cwd, Modifiable: f.modifiable, Width: 80, EOL: "↵", Ambiwidth: "single",
		TrustGen: 1, TrustVouch: 1, Trusted: f.trusted}, nil
}

func (f *File) Apply(bufnr, tick int, edits []cycle.LineEdit, opts cycle.ApplyOpts) (cycle.ApplyResult, error) {
	if bufnr != Bufnr {
		return cycle.ApplyResult{Err: fmt.Sprintf("buffer %d is no longer valid", bufnr)}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if tick != f.tick {
		return cycle.ApplyResult{Stale: true, Tick: f.tick}, nil
	}
	if len(edits) > 0 {
		be := make([]buffer.Edit, len(edits))
		for i, e := range edits {
			be[i] = buffer.Edit{Start: e.Start, End: e.Stop, Lines: e.Lines}
		}
		out, err := buffer.Apply(f.lines, be)
		if err != nil {
			return cycle.ApplyResult{Err: err.Error()}, nil
		}
		if err := f.write(out); err != nil {
			return cycle.ApplyResult{Err: err.Error()}, nil
		}
		f.lines = out
		f.tick++
	}
	if opts.Modifiable != nil {
		f.modifiable = *opts.Modifiable
	}
	if opts.Diagnostics != nil {
		f.diags = opts.Diagnostics
	}
	for _, r := range opts.Records {
		f.records[r.ID] = r
	}
	return cycle.ApplyResult{OK: true, Tick: f.tick}, nil
}

// write replaces the file with lines, atomically, if it still holds what
// flemma last read or wrote. Call with f.mu held.
func (f *File) write(lines []string) error {
	if f.conflict != nil {
		return f.conflict
	}
	data := f.render(lines)
	dir, base := filepath.Split(f.path)
	tmp, err := os.CreateTemp(dir, "."+base+".flemma-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	_ = tmp.Chmod(f.mode)
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	// Checked as late as possible: just before the rename.
	if why := f.changedOnDisk(); why != "" {
		f.refuse(why, data)
		return f.conflict
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename itself survives a crash
		d.Close()
	}
	f.disk = sha256.Sum256(data)
	f.writes++
	return nil
}

// changedOnDisk says how the file differs from what flemma last read or
// wrote ("" when it does not). The content decides: a file touched but
// unchanged is not a conflict.
func (f *File) changedOnDisk() string {
	b, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it was deleted or moved"
	case err != nil:
		return "it could not be read: " + err.Error()
	case sha256.Sum256(b) != f.disk:
		return "its content is not what flemma last read or wrote"
	}
	return ""
}

// refuse records a refused write and saves the run's text next to the
// file, so that neither the user's text nor the run's is lost. Call with
// f.mu held.
func (f *File) refuse(why string, data []byte) {
	dir, base := filepath.Split(f.path)
	if tmp, err := os.CreateTemp(dir, base+".flemma-conflict-*"); err == nil {
		_, werr := tmp.Write(data)
		if cerr := tmp.Close(); werr == nil && cerr == nil {
			f.saved = tmp.Name()
		} else {
			os.Remove(tmp.Name())
		}
	}
	msg := fmt.Sprintf("%s changed on disk during the run (%s): flemma did not write over it", f.path, why)
	if f.saved != "" {
		msg += "; the run's text is in " + f.saved
	}
	f.conflict = fmt.Errorf("%w: %s", ErrChanged, msg)
	close(f.changed)
}

func (f *File) SetDiagnostics(bufnr int, diags []cycle.Diag) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.diags = diags
	return nil
}

func (f *File) SetModifiable(bufnr int, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modifiable = on
	return nil
}

func (f *File) Notify(msg string, level int) error {
	if f.OnNotify != nil {
		f.OnNotify(msg, level)
	}
	return nil
}

func (f *File) Event(pattern string, data any) error {
	if f.OnEvent != nil {
		f.OnEvent(pattern, data)
	}
	return nil
}

func (f *File) Progress(bufnr int, p cycle.Progress) error {
	if f.OnProgress != nil {
		f.OnProgress(p)
	}
	return nil
}

// TrustPull gives the engine the origin (as a digest, computed at Open)
// and the records of this run.
func (f *File) TrustPull(bufnr int) (cycle.TrustPull, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.digest
	p := cycle.TrustPull{Gen: 1, Trusted: f.trusted, Digest: &d, Vouch: 1, Vouched: f.vouched, Tombs: f.tombs}
	for _, r := range f.records {
		p.Records = append(p.Records, r)
	}
	return p, nil
}

// TrustGrant keeps nothing: a headless run has no user to grant, and no
// host restart to survive.
func (f *File) TrustGrant(bufnr int, g cycle.WireGrants) error { return nil }

// TrustSetDigest is never needed: the origin is a digest from the start.
func (f *File) TrustSetDigest(bufnr, gen int, d cycle.Digest) error { return nil }

func (f *File) TrustRecord(bufnr int, recs []cycle.WireRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		f.records[r.ID] = r
	}
	return nil
}

// TrustSetVouched is never needed: the vouched calls are a digest from
// the start.
func (f *File) TrustSetVouched(bufnr, gen, vouch int, calls []cycle.DigestCall) error { return nil }

// TrustPrune drops the run's records of calls the file is done with.
func (f *File) TrustPrune(bufnr int, ids []string, tombs string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		delete(f.records, id)
	}
	f.tombs += tombs
	return nil
}

// TrustAncestry: a file has no undo; its text descends from every state
// the run wrote.
func (f *File) TrustAncestry(bufnr, tick int, seqs []int) (cycle.Ancestry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tick != f.tick {
		return cycle.Ancestry{Stale: true}, nil
	}
	return cycle.Ancestry{In: seqs}, nil
}

var _ cycle.Editor = (*File)(nil)
