package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// A damaged write-ahead log. SQLite reads the WAL up to its first frame
// whose checksum or salt does not match and ignores the rest without a
// word: records committed after a damaged frame (or all of them, when the
// header itself is damaged) are silently gone, and the next write starts
// the WAL over them. Open reads the WAL itself first (its format is
// SQLite's documented file format), under the write lock so no writer
// changes it meanwhile; when it finds committed transactions SQLite will
// not read, it copies the WAL aside and says so (WALDamage).

// WALDamage describes a write-ahead log whose records could not all be
// read.
type WALDamage struct {
	Path    string // the WAL (<journal>-wal)
	CopyAt  string // where its bytes were kept ("" if the copy failed)
	Size    int64  // its size
	Frame   int    // the first unreadable frame (0: the header itself)
	Lost    int    // commits after it that could not be read (-1: unknown)
	CopyErr error  // why the copy failed, if it did
}

// String says what was lost, for the log, the user and :checkhealth.
func (d *WALDamage) String() string {
	what := "its records since the last checkpoint could not be read (how many is unknown)"
	if d.Frame > 0 {
		what = fmt.Sprintf("%d commit(s) of records after frame %d could not be read", d.Lost, d.Frame)
	}
	where := "it was kept at " + d.CopyAt
	if d.CopyAt == "" {
		where = fmt.Sprintf("it could not be kept (%v)", d.CopyErr)
	}
	return fmt.Sprintf("journal: the write-ahead log %s (%d bytes) was damaged: %s and are lost; %s", d.Path, d.Size, what, where)
}

// walState is what inspectWAL found.
type walState struct {
	headerOK bool
	frames   int // valid frames, up to the last valid commit
	commits  int // valid commits
	broken   int // 1-based index of the first invalid frame that carries the header's salts (0: none)
	lost     int // commit frames with the header's salts after broken
}

const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
	walMagicLE         = 0x377f0682
	walMagicBE         = 0x377f0683
)

// inspectWAL reads a WAL file's bytes as SQLite would (the "WAL File
// Format" of sqlite.org/fileformat2.html): the header, then each frame
// whose salts match the header's and whose cumulative checksum holds.
// Frames after the first that does not are ignored by SQLite; those that
// still carry the header's salts were written in this generation of the
// WAL and are lost (old frames of an earlier generation, left after a
// checkpoint restarted the WAL, carry other salts and are not).
func inspectWAL(b []byte) walState {
	var st walState
	if len(b) < walHeaderSize {
		return st
	}
	be := binary.BigEndian
	magic := be.Uint32(b[0:])
	if magic != walMagicLE && magic != walMagicBE {
		return st
	}
	var order binary.ByteOrder = binary.LittleEndian
	if magic == walMagicBE {
		order = binary.BigEndian
	}
	pageSize := int(be.Uint32(b[8:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return st
	}
	s0, s1 := walChecksum(order, b[:24], 0, 0)
	if s0 != be.Uint32(b[24:]) || s1 != be.Uint32(b[28:]) {
		return st
	}
	st.headerOK = true
	salt1, salt2 := be.Uint32(b[16:]), be.Uint32(b[20:])
	frameSize := walFrameHeaderSize + pageSize
	valid := true
	n := 0
	for off := walHeaderSize; off+frameSize <= len(b); off += frameSize {
		n++
		fh := b[off : off+walFrameHeaderSize]
		ours := be.Uint32(fh[8:]) == salt1 && be.Uint32(fh[12:]) == salt2
		commit := be.Uint32(fh[4:]) != 0
		if valid {
			if ours && be.Uint32(fh[0:]) != 0 {
				c0, c1 := walChecksum(order, fh[:8], s0, s1)
				c0, c1 = walChecksum(order, b[off+walFrameHeaderSize:off+frameSize], c0, c1)
				if c0 == be.Uint32(fh[16:]) && c1 == be.Uint32(fh[20:]) {
					s0, s1 = c0, c1
					if commit {
						st.frames, st.commits = n, st.commits+1
					}
					continue
				}
			}
			// SQLite stops here. What follows with the header's salts
			// was written in this generation of the WAL; old frames of
			// an earlier one (other salts) are not records.
			valid, st.broken = false, n
		}
		if ours && commit {
			st.lost++
		}
	}
	return st
}

// walChecksum is SQLite's WAL checksum over b (a multiple of 8 bytes),
// continuing from s0, s1.
func walChecksum(order binary.ByteOrder, b []byte, s0, s1 uint32) (uint32, uint32) {
	for i := 0; i+8 <= len(b); i += 8 {
		s0 += order.Uint32(b[i:]) + s1
		s1 += order.Uint32(b[i+4:]) + s0
	}
	return s0, s1
}

// checkWAL inspects the journal's WAL (call with the write lock held) and,
// when committed records in it cannot be read, copies it aside.
func checkWAL(path string, now func() time.Time) *WALDamage {
	wal := path + "-wal"
	b, err := os.ReadFile(wal)
	if err != nil || len(b) <= walHeaderSize {
		return nil // none, or nothing past a header (a WAL being started)
	}
	st := inspectWAL(b)
	d := &WALDamage{Path: wal, Size: int64(len(b))}
	switch {
	case !st.headerOK:
		if allZero(b) {
			return nil
		}
		d.Lost = -1
	case st.lost > 0:
		d.Frame, d.Lost = st.broken, st.lost
	default:
		return nil
	}
	base := path + ".wal-damaged-" + now().UTC().Format("20060102T150405Z")
	dst := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		d.CopyErr = err
		_ = os.Remove(dst)
	} else {
		d.CopyAt = dst
	}
	return d
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
