package builtin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Backups. Before write or edit changes a file, the file's previous content
// is stored in the backup directory (Env.BackupDir), named by its SHA-256
// (so the same content is stored once), and the tool's result carries a
// Change: the path, the hash of the previous content (or BackupAbsent when
// the file did not exist) and the hash of what the tool wrote. Undo puts
// the previous content back — only while the file still holds exactly
// what the tool wrote.
//
// The directory is private (0700, its files 0600, owned by the user) and
// nothing in it is ever followed: every entry is opened relative to the
// directory with O_NOFOLLOW, a symbolic link found there is removed, not
// read. It is bounded: blobs untouched for longer than the age limit are
// dropped, then the oldest until the total fits the size limit (defaults
// DefaultBackupMaxBytes, DefaultBackupMaxAge). Storing a content that is
// already there only marks it as recent.
//
// A change whose previous content cannot be stored (the directory cannot be
// used, the disk is full, the file is larger than DefaultBackupMaxFile or
// a quarter of the size limit) is refused: nothing is written, and the
// model is told why.

// Defaults of the backup store (Env.BackupMaxBytes, Env.BackupMaxAge).
const (
	DefaultBackupMaxBytes = 256 << 20
	DefaultBackupMaxAge   = 30 * 24 * time.Hour
	// DefaultBackupMaxFile is the largest file backed up (with the default
	// size limit; a quarter of the limit when it is set).
	DefaultBackupMaxFile = DefaultBackupMaxBytes / 4
)

// backupScanEvery is how often the store re-reads its directory for the
// age limit (and for what other Neovim instances stored) when the size
// limit does not force it sooner.
const backupScanEvery = time.Hour

// backupTempAge is how old a temporary file of the store must be before a
// scan removes it (it was left by a process that died while storing).
const backupTempAge = time.Hour

// DefaultBackupDir is where backups go when Env.BackupDir is empty:
// $XDG_STATE_HOME/flemma/backups, else ~/.local/state/flemma/backups.
// (The host passes Neovim's stdpath("state")/flemma/backups instead.)
func DefaultBackupDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "flemma", "backups"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("no backup directory: the host set none and $HOME is not set")
	}
	return filepath.Join(home, ".local", "state", "flemma", "backups"), nil
}

// backupConfig is the backup store a call uses; off when backups are
// turned off (Env.BackupMaxBytes < 0).
type backupConfig struct {
	dir      string
	maxBytes int64
	maxFile  int64
	maxAge   time.Duration
	off      bool
}

func backupsOf(e *tools.Env) backupConfig {
	c := backupConfig{maxBytes: DefaultBackupMaxBytes, maxFile: DefaultBackupMaxFile, maxAge: DefaultBackupMaxAge}
	if e != nil {
		c.dir = e.BackupDir
		switch {
		case e.BackupMaxBytes < 0:
			c.off = true
		case e.BackupMaxBytes > 0:
			c.maxBytes, c.maxFile = e.BackupMaxBytes, e.BackupMaxBytes/4
		}
		if e.BackupMaxAge > 0 {
			c.maxAge = e.BackupMaxAge
		}
	}
	return c
}

// backupStore is the in-process state of one backup directory: the total
// size of its blobs as last counted, and when it was last scanned.
type backupStore struct {
	mu      sync.Mutex
	total   int64
	scanned time.Time // zero: never
}

var backupStores sync.Map // canonical dir → *backupStore

func storeFor(dir string) *backupStore {
	s, _ := backupStores.LoadOrStore(dir, &backupStore{})
	return s.(*backupStore)
}

// errBackupTooLarge: the content to back up is larger than the store takes.
type errBackupTooLarge struct{ size, max int64 }

func (e *errBackupTooLarge) Error() string {
	return fmt.Sprintf("the file is larger than the %s backups are kept for", tools.FormatSize(e.max))
}

// stagedBackup is a previous content copied into the store under a
// temporary name: committed (named by its hash) once the tool decided to go
// on, discarded otherwise.
type stagedBackup struct {
	cfg  backupConfig
	dir  *backupDir
	tmp  string
	sum  [sha256.Size]byte
	size int64
}

// stageBackup copies r (the file being replaced) into the store under a
// temporary name, hashing it on the way. With backups off it only hashes
// (the result then has no directory and commit stores nothing).
func stageBackup(cfg backupConfig, r io.Reader) (*stagedBackup, error) {
	h := sha256.New()
	if cfg.off {
		buf := copyBufs.Get().(*[]byte)
		_, err := io.CopyBuffer(h, onlyReader{r}, *buf)
		copyBufs.Put(buf)
		if err != nil {
			return nil, err
		}
		st := &stagedBackup{cfg: cfg}
		copy(st.sum[:], h.Sum(nil))
		return st, nil
	}
	dir, err := openBackupDir(cfg.dir)
	if err != nil {
		return nil, err
	}
	f, tmp, err := dir.createTemp()
	if err != nil {
		dir.close()
		return nil, backupError(err)
	}
	n, err := copyHashed(f, h, r, cfg.maxFile)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.remove(tmp)
		dir.close()
		return nil, backupError(err)
	}
	st := &stagedBackup{cfg: cfg, dir: dir, tmp: tmp, size: n}
	copy(st.sum[:], h.Sum(nil))
	return st, nil
}

// copyHashed copies r to w and into h, failing once more than max bytes
// came.
func copyHashed(w io.Writer, h hash.Hash, r io.Reader, max int64) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.LimitReader(r, max+1), *buf)
	if err == nil && n > max {
		return n, &errBackupTooLarge{size: n, max: max}
	}
	return n, err
}

// onlyReader hides a reader's WriteTo (*os.File has one, which allocates
// its own buffer for anything but a socket), so that io.CopyBuffer uses the
// pooled buffer.
type onlyReader struct{ io.Reader }

// copyBufs are the buffers of the copies into the store.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// discard drops a staged backup the tool did not use.
func (s *stagedBackup) discard() {
	if s == nil || s.dir == nil {
		return
	}
	s.dir.remove(s.tmp)
	s.dir.close()
	s.dir = nil
}

// commit names the staged content by its hash (or, when the store holds
// it already, marks that one as recent), then keeps the store within its
// limits. It returns Change.Before: the hash, or "" with backups off.
func (s *stagedBackup) commit() (string, error) {
	if s.dir == nil {
		return "", nil
	}
	defer func() { s.dir.close(); s.dir = nil }()
	name := hex.EncodeToString(s.sum[:])
	store := storeFor(s.dir.path())
	store.mu.Lock()
	defer store.mu.Unlock()
	added := false
	switch st, err := s.dir.stat(name); {
	case err == nil && st.regular && st.size == s.size:
		s.dir.remove(s.tmp)
		if err := s.dir.touch(name); err != nil {
			return "", backupError(err)
		}
	case err == nil || errors.Is(err, syscall.ELOOP):
		// Something else under the blob's name (a link, a damaged blob):
		// never follow or trust it; replace it.
		s.dir.remove(name)
		fallthrough
	default:
		if err := s.dir.rename(s.tmp, name); err != nil {
			s.dir.remove(s.tmp)
			return "", backupError(err)
		}
		added = true
	}
	if added {
		// The new name must be on disk before the file it backs up
		// changes.
		if err := s.dir.sync(); err != nil {
			return "", backupError(err)
		}
		store.total += s.size
	}
	if store.scanned.IsZero() || store.total > s.cfg.maxBytes || time.Since(store.scanned) > backupScanEvery {
		store.prune(s.dir, s.cfg, map[string]bool{name: true})
	}
	return name, nil
}

// backupBatch stores many contents at once (the pre-images of a bash
// command, see preserveFiles) with two syncs for all instead of two each:
// every new content goes to a temporary file; finish makes them all
// durable (syncfs), then names them by their hashes and syncs the
// directory — the order commit keeps for one.
type backupBatch struct {
	cfg     backupConfig
	dir     *backupDir
	seen    map[string]bool // blobs known to be in the store, or pending
	pending []pendingBlob
}

type pendingBlob struct {
	tmp, name string
	size      int64
}

func openBackupBatch(cfg backupConfig) (*backupBatch, error) {
	if cfg.off {
		return nil, errors.New("backups are off")
	}
	dir, err := openBackupDir(cfg.dir)
	if err != nil {
		return nil, err
	}
	return &backupBatch{cfg: cfg, dir: dir, seen: map[string]bool{}}, nil
}

// has reports whether the store holds the blob name, of that size.
func (b *backupBatch) has(name string, size int64) bool {
	if b.seen[name] {
		return true
	}
	st, err := b.dir.stat(name)
	if err != nil || !st.regular || st.size != size {
		return false
	}
	b.seen[name] = true
	return true
}

// put stores data (named at finish) and returns its blob name. A content
// the store holds already is only marked as recent.
func (b *backupBatch) put(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	if b.seen[name] {
		return name, nil
	}
	if st, err := b.dir.stat(name); err == nil && st.regular && st.size == int64(len(data)) && b.dir.touch(name) == nil {
		b.seen[name] = true
		return name, nil
	}
	f, tmp, err := b.dir.createTemp()
	if err != nil {
		return "", backupError(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.dir.remove(tmp)
		return "", backupError(err)
	}
	b.pending = append(b.pending, pendingBlob{tmp: tmp, name: name, size: int64(len(data))})
	b.seen[name] = true
	return name, nil
}

// finish makes the contents put durable and names them, then keeps the
// store within its limits (never removing a blob of this batch). It
// returns the blobs that could not be stored; the batch is closed.
func (b *backupBatch) finish() (failed map[string]bool) {
	defer b.dir.close()
	if len(b.pending) == 0 {
		return nil
	}
	failAll := func() map[string]bool {
		failed := map[string]bool{}
		for _, pb := range b.pending {
			b.dir.remove(pb.tmp)
			failed[pb.name] = true
		}
		return failed
	}
	if err := b.dir.syncAll(); err != nil {
		return failAll()
	}
	store := storeFor(b.dir.path())
	store.mu.Lock()
	defer store.mu.Unlock()
	keep := map[string]bool{}
	var added int64
	for _, pb := range b.pending {
		keep[pb.name] = true
		switch st, err := b.dir.stat(pb.name); {
		case err == nil && st.regular && st.size == pb.size:
			b.dir.remove(pb.tmp) // stored meanwhile (by another instance)
			continue
		case err == nil || errors.Is(err, syscall.ELOOP):
			b.dir.remove(pb.name) // never trust something else under the name
		}
		if err := b.dir.rename(pb.tmp, pb.name); err != nil {
			b.dir.remove(pb.tmp)
			if failed == nil {
				failed = map[string]bool{}
			}
			failed[pb.name] = true
			continue
		}
		added += pb.size
	}
	if added > 0 {
		if err := b.dir.sync(); err != nil {
			return failAll()
		}
		store.total += added
	}
	if store.scanned.IsZero() || store.total > b.cfg.maxBytes || time.Since(store.scanned) > backupScanEvery {
		store.prune(b.dir, b.cfg, keep)
	}
	return failed
}

// storeBackup backs up data (an edit's file, read whole already). It
// returns Change.Before.
func storeBackup(cfg backupConfig, data []byte) (string, error) {
	st, err := stageBackup(cfg, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	return st.commit()
}

type blobInfo struct {
	name  string
	size  int64
	mtime time.Time
}

// prune scans the directory: it removes symbolic links and stale
// temporary files, blobs older than the age limit, then the oldest blobs
// until the total fits the size limit. keep (the blobs just stored) are
// never removed. Call with s.mu held.
func (s *backupStore) prune(dir *backupDir, cfg backupConfig, keep map[string]bool) {
	names, err := dir.names()
	if err != nil {
		return
	}
	now := time.Now()
	var blobs []blobInfo
	var total int64
	for _, n := range names {
		st, err := dir.stat(n)
		if err != nil {
			continue
		}
		switch {
		case st.symlink:
			dir.remove(n) // never followed; nothing of ours is a link
		case strings.HasPrefix(n, backupTempPrefix):
			if st.regular && now.Sub(st.mtime) > backupTempAge {
				dir.remove(n)
			}
		case st.regular && isBlobName(n):
			if !keep[n] && now.Sub(st.mtime) > cfg.maxAge {
				dir.remove(n)
				continue
			}
			blobs = append(blobs, blobInfo{n, st.size, st.mtime})
			total += st.size
		}
	}
	sort.Slice(blobs, func(i, j int) bool {
		if !blobs[i].mtime.Equal(blobs[j].mtime) {
			return blobs[i].mtime.Before(blobs[j].mtime)
		}
		return blobs[i].name < blobs[j].name
	})
	for _, b := range blobs {
		if total <= cfg.maxBytes {
			break
		}
		if keep[b.name] {
			continue
		}
		if dir.remove(b.name) == nil {
			total -= b.size
		}
	}
	s.total, s.scanned = total, now
}

const backupTempPrefix = ".tmp-"

func isBlobName(n string) bool {
	if len(n) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// errBackup marks a failure to keep a backup: the change was refused.
type errBackup struct{ err error }

func (e *errBackup) Error() string { return e.err.Error() }
func (e *errBackup) Unwrap() error { return e.err }

func backupError(err error) error {
	var eb *errBackup
	if errors.As(err, &eb) {
		return err
	}
	return &errBackup{err: err}
}

// backupRefusal words a failed backup for the model: nothing was changed,
// and why.
func backupRefusal(path string, err error) error {
	reason := ""
	var big *errBackupTooLarge
	switch {
	case errors.As(err, &big):
		reason = big.Error()
	case sandbox.FSReason(err) != "":
		reason = sandbox.FSReason(err)
	default:
		reason = err.Error()
		var eb *errBackup
		if errors.As(err, &eb) {
			if r := sandbox.FSReason(eb.err); r != "" {
				reason = r
			}
		}
	}
	return tools.Failf("Cannot keep a backup of %s before changing it (%s), so nothing was changed. Tell the user: the backups of flemma's tools (the backup directory or its size limit) need attention", path, reason)
}

// ErrUndoChanged: the file no longer holds what the tool wrote (someone
// changed it since), so Undo refused to touch it.
var ErrUndoChanged = errors.New("the file changed since the tool wrote it")

// ErrBackupGone: the backup of the previous content is no longer kept
// (pruned by the size or age limit, or backups were off).
var ErrBackupGone = errors.New("the backup of the previous content is no longer kept")

// Undo takes back a change a tool made (a Change from a Result): it puts
// the previous content back from the backup directory (or removes a file
// the tool created) — only if the file still holds exactly what the tool
// wrote; a file the tool deleted (After BackupAbsent, a sandboxed bash) is
// recreated only while nothing is at its path. Otherwise nothing is
// touched and the error says why (errors.Is ErrUndoChanged,
// ErrBackupGone). The file is replaced atomically, keeping its
// permissions, without following any symbolic link; a backup whose content
// no longer matches its name is refused. backupDir "" means
// DefaultBackupDir(). Directories the tool created are left in place.
func Undo(rec tools.Change, backupDir string) error {
	p := rec.Path
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("cannot undo: %q is not an absolute, clean path", p)
	}
	if rec.Before == "" {
		return fmt.Errorf("cannot undo the change of %s: %w (backups were off when the tool changed it)", p, ErrBackupGone)
	}
	if rec.Before != tools.BackupAbsent && !isBlobName(rec.Before) {
		return fmt.Errorf("cannot undo the change of %s: the record's backup name %q is not valid", p, rec.Before)
	}
	if rec.After == tools.BackupAbsent && rec.Before != tools.BackupAbsent {
		return undoDelete(rec, backupDir)
	}
	if !isBlobName(rec.After) {
		return fmt.Errorf("cannot undo the change of %s: the record has no valid hash of what the tool wrote", p)
	}
	cur, err := sandbox.OpenNoFollow(p)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("cannot undo the change of %s: %w (it no longer exists)", p, ErrUndoChanged)
		case errors.Is(err, sandbox.ErrPathChanged):
			return fmt.Errorf("cannot undo the change of %s: a folder on its path is now a symbolic link; nothing was restored", p)
		}
		return fmt.Errorf("cannot undo the change of %s: %v", p, err)
	}
	stamp, sum, _, err := readStamped(cur, io.Discard)
	cur.Close()
	if err != nil {
		return fmt.Errorf("cannot undo the change of %s: %v", p, err)
	}
	if hex.EncodeToString(sum[:]) != rec.After {
		return fmt.Errorf("cannot undo the change of %s: %w; nothing was restored", p, ErrUndoChanged)
	}
	if rec.Before == tools.BackupAbsent {
		if err := sandbox.RemoveIfUnchanged(p, stamp); err != nil {
			if errors.Is(err, sandbox.ErrChangedMeanwhile) {
				return fmt.Errorf("cannot undo the change of %s: %w; nothing was restored", p, ErrUndoChanged)
			}
			return fmt.Errorf("cannot undo the change of %s: removing the file the tool created: %v", p, err)
		}
		return nil
	}
	if backupDir == "" {
		if backupDir, err = DefaultBackupDir(); err != nil {
			return fmt.Errorf("cannot undo the change of %s: %v", p, err)
		}
	}
	data, err := readBackup(backupDir, rec.Before)
	if err != nil {
		return fmt.Errorf("cannot undo the change of %s: %w", p, err)
	}
	if err := sandbox.WriteFileAtomic(p, data, false, sandbox.RootRef{}, sandbox.Prior{Check: true, Stamp: stamp}); err != nil {
		if errors.Is(err, sandbox.ErrChangedMeanwhile) {
			return fmt.Errorf("cannot undo the change of %s: %w; nothing was restored", p, ErrUndoChanged)
		}
		return fmt.Errorf("cannot undo the change of %s: %v", p, err)
	}
	return nil
}

// undoDelete recreates a file the tool deleted, from its backup — only
// while nothing is at the path (created exclusively: a file, link or
// folder that appeared since is never replaced). Missing folders above it
// are created again, following no symbolic link.
func undoDelete(rec tools.Change, backupDir string) error {
	p := rec.Path
	var err error
	if backupDir == "" {
		if backupDir, err = DefaultBackupDir(); err != nil {
			return fmt.Errorf("cannot undo the deletion of %s: %v", p, err)
		}
	}
	data, err := readBackup(backupDir, rec.Before)
	if err != nil {
		return fmt.Errorf("cannot undo the deletion of %s: %w", p, err)
	}
	err = sandbox.WriteFileAtomic(p, data, true, sandbox.RootRef{}, sandbox.Prior{Check: true, Absent: true})
	switch {
	case errors.Is(err, sandbox.ErrChangedMeanwhile), errors.Is(err, sandbox.ErrIsDir):
		return fmt.Errorf("cannot undo the deletion of %s: %w (something is at that path again); nothing was restored", p, ErrUndoChanged)
	case errors.Is(err, sandbox.ErrPathChanged):
		return fmt.Errorf("cannot undo the deletion of %s: a folder on its path is now a symbolic link; nothing was restored", p)
	case err != nil:
		return fmt.Errorf("cannot undo the deletion of %s: %v", p, err)
	}
	if perm := fs.FileMode(rec.Mode) & fs.ModePerm; perm != 0 {
		if f, err := sandbox.OpenNoFollow(p); err == nil {
			f.Chmod(perm)
			f.Close()
		}
	}
	return nil
}

// readBackup reads the blob name from the backup directory and checks that
// its content still has that hash.
func readBackup(backupDir, name string) ([]byte, error) {
	dir, err := openBackupDir(backupDir)
	if err != nil {
		return nil, err
	}
	defer dir.close()
	f, err := dir.open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) || errors.Is(err, sandbox.ErrNotRegular) {
			return nil, ErrBackupGone
		}
		return nil, fmt.Errorf("reading the backup: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading the backup: %v", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != name {
		return nil, errors.New("the backup is damaged (its content no longer matches its hash); nothing was restored")
	}
	return data, nil
}

// readStamped reads the open file f to w, hashing it, and returns its
// stamp, checked to be the same before and after the read (else
// errChangedMeanwhile: it was being written).
func readStamped(f *os.File, w io.Writer) (sandbox.FileStamp, [sha256.Size]byte, int64, error) {
	var sum [sha256.Size]byte
	before, err := sandbox.StampFile(f)
	if err != nil {
		return sandbox.FileStamp{}, sum, 0, err
	}
	h := sha256.New()
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(io.MultiWriter(w, h), onlyReader{f}, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return sandbox.FileStamp{}, sum, n, err
	}
	after, err := sandbox.StampFile(f)
	if err != nil {
		return sandbox.FileStamp{}, sum, n, err
	}
	if after != before {
		return sandbox.FileStamp{}, sum, n, sandbox.ErrChangedMeanwhile
	}
	copy(sum[:], h.Sum(nil))
	return after, sum, n, nil
}
