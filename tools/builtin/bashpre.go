package builtin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Pre-images of a sandboxed bash. Before the command runs, the content of
// each regular file of the "before" snapshot is put in the backup store
// (content-addressed, as write and edit do), so that a file the command
// changes or deletes can be put back by :Flemma tool:undo. An in-process
// index remembers, per backup directory, which blob holds the content of a
// file with a given metadata (see fileMeta): a file unchanged since it was
// last kept is not read again, so after the first command the cost is the
// snapshot's stats plus one stat of each blob.
//
// The work is bounded per command (preimageBudget bytes read, files up to
// preimageMaxFile); files not kept — too large, over the budget,
// unreadable, matched by deny_read (a secret is never copied), backups off
// — are simply not undoable, and the result says so.

// Bounds of the pre-images (variables for the tests).
var (
	preimageMaxFile  int64 = 4 << 20  // largest file kept (and at most the store's per-file limit)
	preimageBudget   int64 = 64 << 20 // bytes read per command (and at most a quarter of the store)
	preimageMaxFiles       = 500      // files read per command (a new blob costs a file creation, ~0.5 ms)
)

// racyWindow: a file whose change time is this close to the moment it was
// read is kept but not indexed — a write in the same clock tick would leave
// its metadata unchanged (git's "racily clean" entries). A variable for the
// tests.
var racyWindow = 2 * time.Second

// maxPreimageIndex bounds an index; past it the index starts afresh.
const maxPreimageIndex = 4 * maxTrackEntries

// preimageReads counts the files read for pre-images (for the tests: the
// index spares the re-reads).
var preimageReads atomic.Int64

type preimageEntry struct {
	meta fileMeta
	blob string
}

type preimageIndex struct {
	mu sync.Mutex
	m  map[string]preimageEntry // path → what was kept of it
}

var preimageIndexes sync.Map // canonical backup dir → *preimageIndex

func preimageIndexFor(dir string) *preimageIndex {
	x, _ := preimageIndexes.LoadOrStore(dir, &preimageIndex{m: map[string]preimageEntry{}})
	return x.(*preimageIndex)
}

// preimages is what preserveFiles kept before a command: the blob of each
// kept file's content, and why the others were not kept.
type preimages struct {
	blob map[string]string // path → blob name
	why  map[string]string // path → why it was not kept
	none string            // why no file was kept (backups off…), or ""
}

// reason is why the file p has no pre-image.
func (pre preimages) reason(p string) string {
	if w := pre.why[p]; w != "" {
		return w
	}
	if pre.none != "" {
		return pre.none
	}
	return "not backed up"
}

// preserveFiles keeps the content of the regular files of snap in the
// backup store (see the comment at the top).
func preserveFiles(cfg backupConfig, snap rootSnapshot) preimages {
	pre := preimages{blob: map[string]string{}, why: map[string]string{}}
	if cfg.off {
		pre.none = "backups are off"
		return pre
	}
	batch, err := openBackupBatch(cfg)
	if err != nil {
		pre.none = "the backup directory cannot be used"
		return pre
	}
	idx := preimageIndexFor(batch.dir.path())
	limit := min(preimageMaxFile, cfg.maxFile)
	budget := min(preimageBudget, cfg.maxBytes/4)

	var toRead []string
	hits := map[string]string{}
	idx.mu.Lock()
	for p, m := range snap.files {
		switch {
		case !m.mode.IsRegular():
			continue
		case snap.denied[p]:
			pre.why[p] = "matches deny_read, never backed up"
		case m.size > limit:
			pre.why[p] = "larger than the " + tools.FormatSize(limit) + " kept before a command"
		default:
			if e, ok := idx.m[p]; ok && e.meta == m {
				hits[p] = e.blob
			} else {
				toRead = append(toRead, p)
			}
		}
	}
	idx.mu.Unlock()
	// The store prunes old blobs: trust the index only for blobs still there.
	for p, blob := range hits {
		if batch.has(blob, snap.files[p].size) {
			pre.blob[p] = blob
		} else {
			toRead = append(toRead, p)
		}
	}

	// Over the budget, the files changed most recently (the ones being
	// worked on) are kept first; the others over the next commands.
	if len(toRead) > preimageMaxFiles {
		type byTime struct {
			p     string
			mtime int64
		}
		ts := make([]byTime, len(toRead))
		for i, p := range toRead {
			ts[i] = byTime{p, snap.files[p].mtime}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].mtime > ts[j].mtime })
		for i := range ts {
			toRead[i] = ts[i].p
		}
	}
	fresh := map[string]preimageEntry{}
	var buf []byte
	read := 0
	for _, p := range toRead {
		m := snap.files[p]
		if read >= preimageMaxFiles {
			pre.why[p] = fmt.Sprintf("not backed up yet, past the %d files read before a command", preimageMaxFiles)
			continue
		}
		if m.size > budget {
			pre.why[p] = "the " + tools.FormatSize(min(preimageBudget, cfg.maxBytes/4)) + " budget of backups per command was spent"
			continue
		}
		read++
		var data []byte
		data, buf, err = readPreimage(p, m, buf)
		if err != nil {
			pre.why[p] = "could not be read before the command"
			continue
		}
		budget -= m.size
		preimageReads.Add(1)
		blob, err := batch.put(data)
		if err != nil {
			pre.why[p] = "the backup failed"
			continue
		}
		pre.blob[p] = blob
		if time.Since(time.Unix(0, max(m.ctime, m.mtime))) > racyWindow {
			fresh[p] = preimageEntry{meta: m, blob: blob}
		}
	}
	failed := batch.finish()
	for p, blob := range pre.blob {
		if failed[blob] {
			delete(pre.blob, p)
			delete(fresh, p)
			pre.why[p] = "the backup failed"
		}
	}
	if len(fresh) > 0 {
		idx.mu.Lock()
		if len(idx.m)+len(fresh) > maxPreimageIndex {
			idx.m = map[string]preimageEntry{}
		}
		for p, e := range fresh {
			idx.m[p] = e
		}
		idx.mu.Unlock()
	}
	return pre
}

var errReadChanged = errors.New("the file changed while it was read")

// readPreimage reads the regular file p, which must still have the
// metadata m (the snapshot's) before and after the read, without following
// a symbolic link. buf is reused; it returns the data and the buffer.
func readPreimage(p string, m fileMeta, buf []byte) ([]byte, []byte, error) {
	f, err := sandbox.OpenNoFollow(p)
	if err != nil {
		return nil, buf, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || metaOf(info) != m {
		return nil, buf, errReadChanged
	}
	if int64(cap(buf)) < m.size+1 {
		buf = make([]byte, m.size+1)
	}
	n, err := io.ReadFull(onlyReader{f}, buf[:m.size+1])
	if err != io.ErrUnexpectedEOF && err != io.EOF || int64(n) != m.size {
		if err == nil {
			err = errReadChanged // longer than it was
		}
		return nil, buf, err
	}
	if info, err := f.Stat(); err != nil || metaOf(info) != m {
		return nil, buf, errReadChanged
	}
	return buf[:n], buf, nil
}

// isSymlink reports whether m is a symbolic link's.
func (m fileMeta) isSymlink() bool { return m.mode&fs.ModeSymlink != 0 }
