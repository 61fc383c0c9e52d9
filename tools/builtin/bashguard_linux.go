package builtin

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/flemma-dev/flemma/tools/sandbox"
)

// The guard works in the writable roots after a command that could have
// turned any folder there into a symbolic link leading out of them. So it
// never names a file by its full path: it opens the file's folder without
// following a link (sandbox.OpenDirNoFollow) and works relative to it
// (readlinkat, renameat, symlinkat, unlinkat). A symbolic link put back
// goes only into the very folder it was read from (same device and inode).

// errFolderReplaced: the folder a protected link was in is no longer the
// one it was (replaced, or a symbolic link now).
var errFolderReplaced = errors.New("its folder was replaced or is a symbolic link now; left as it is")

// openGuardDir opens the folder dir (canonical) following no symbolic
// link, with its identity.
func openGuardDir(dir string) (int, dirID, error) {
	fd, err := sandbox.OpenDirNoFollow(dir, false, sandbox.RootRef{})
	if err != nil {
		return -1, dirID{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, dirID{}, err
	}
	return fd, dirID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// readLinksIn reads the symbolic links ps (canonical), each in its folder
// opened without following links, with the folder's identity; a link
// that cannot be read so is left out.
func readLinksIn(ps []string) map[string]linkBefore {
	sort.Strings(ps) // a folder's links together: each folder opened once
	out := make(map[string]linkBefore, len(ps))
	dir, dfd, id := "", -1, dirID{}
	defer func() {
		if dfd >= 0 {
			unix.Close(dfd)
		}
	}()
	for _, p := range ps {
		if d := filepath.Dir(p); d != dir {
			if dfd >= 0 {
				unix.Close(dfd)
			}
			dir = d
			dfd, id, _ = openGuardDir(d)
		}
		if dfd < 0 {
			continue
		}
		if t, err := readlinkat(dfd, filepath.Base(p)); err == nil {
			out[p] = linkBefore{target: t, dir: id}
		}
	}
	return out
}

func readlinkat(dfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// restoreLink makes the symbolic link p lead to target again, in the
// folder it was in before the command (want): what stands at p now (a
// link, a file, a folder) is first moved to aside(). When p's folder is
// not that folder any more, nothing is done (errFolderReplaced).
func restoreLink(p, target string, want dirID, aside func() string) error {
	dfd, id, err := openGuardDir(filepath.Dir(p))
	if errors.Is(err, sandbox.ErrPathChanged) || err == nil && id != want {
		err = errFolderReplaced
	}
	if err != nil {
		if dfd >= 0 {
			unix.Close(dfd)
		}
		return err
	}
	defer unix.Close(dfd)
	name := filepath.Base(p)
	if t, err := readlinkat(dfd, name); err == nil && t == target {
		return nil
	}
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		if err := moveAsideAt(dfd, name, st.Mode, aside()); err != nil {
			return err
		}
	case !errors.Is(err, unix.ENOENT):
		return err
	}
	return unix.Symlinkat(target, dfd, name)
}

// moveAside moves the file or symbolic link p to dst (its folders made
// 0700), by rename, else by copy and removal (another filesystem); p's
// folder is opened following no link.
func moveAside(p, dst string) error {
	dfd, _, err := openGuardDir(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return moveAsideAt(dfd, filepath.Base(p), st.Mode, dst)
}

// moveAsideAt moves name in the folder dfd (of the given mode) to dst: by
// rename; else a symbolic link or a regular file by copy and removal (a
// folder cannot be copied safely).
func moveAsideAt(dfd int, name string, mode uint32, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	q, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer q.Close()
	qfd, base := int(q.Fd()), filepath.Base(dst)
	if err := unix.Renameat(dfd, name, qfd, base); err == nil {
		return nil
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		t, err := readlinkat(dfd, name)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(t, qfd, base); err != nil {
			return err
		}
	case unix.S_IFREG:
		if err := copyAt(dfd, name, qfd, base); err != nil {
			return err
		}
	default:
		return errors.New("could not be moved")
	}
	return unix.Unlinkat(dfd, name, 0)
}

// copyAt copies the regular file name in dfd to a new file base in qfd.
func copyAt(dfd int, name string, qfd int, base string) error {
	sfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	src := os.NewFile(uintptr(sfd), name)
	defer src.Close()
	ofd, err := unix.Openat(qfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(ofd), base)
	_, err = io.Copy(out, src)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(qfd, base, 0)
	}
	return err
}

// removeEmptyDir removes the folder d when it is empty, its parent opened
// following no link.
func removeEmptyDir(d string) error {
	dfd, _, err := openGuardDir(filepath.Dir(d))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Unlinkat(dfd, filepath.Base(d), unix.AT_REMOVEDIR)
}
