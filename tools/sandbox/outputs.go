package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Full outputs of truncated results (issue 26 #6) live in flemma's state
// folder, under outputs/, one folder per conversation, so that a notice in
// a chat keeps naming a file after the host that wrote it is gone: the
// folder is kept while the conversation is used (each use touches it) and
// for OutputMaxAge after; beyond OutputMaxBytes in all, the folders used
// least recently go first. Folders are 0700, files 0600: nobody else on
// the machine reads them, and commands of other conversations do not
// see them (they are in Config.Hidden; a conversation's own folder is in
// its HiddenExcept).
const (
	OutputMaxAge   = 30 * 24 * time.Hour
	OutputMaxBytes = 1 << 30
)

// FullOutputCap bounds one saved full output: a command's first
// FullOutputCap bytes are kept, and the notice says when more was cut
// (a variable for tests).
var FullOutputCap int64 = 128 << 20

// OutputsDir is the outputs folder of the state folder state.
func OutputsDir(state string) string { return filepath.Join(state, "outputs") }

// OutputFolder is the folder of the conversation in bufferPath ("" for an
// unnamed buffer, which gets "unnamed") under the state folder: a name
// derived from the buffer's path, so that it is the same after a restart.
// It does not create it (see UseOutputFolder).
func OutputFolder(state, bufferPath string) string {
	key := "unnamed"
	if bufferPath != "" {
		sum := sha256.Sum256([]byte(filepath.Clean(bufferPath)))
		key = hex.EncodeToString(sum[:10])
	}
	return filepath.Join(OutputsDir(state), key)
}

// UseOutputFolder creates the conversation's folder (0700, and its
// parents 0700) when missing and marks it used now (its time decides the
// sweep); it returns the folder.
func UseOutputFolder(state, bufferPath string) (string, error) {
	dir := OutputFolder(state, bufferPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the output folder: %w", err)
	}
	for _, d := range []string{OutputsDir(state), dir} {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			return "", fmt.Errorf("the output folder %s is not a folder", d)
		}
		if fi.Mode().Perm() != 0o700 {
			os.Chmod(d, 0o700)
		}
	}
	now := time.Now()
	os.Chtimes(dir, now, now)
	return dir, nil
}

// SweepOutputs applies the retention to the outputs folder of state:
// conversation folders untouched for OutputMaxAge are removed, then the
// least recently used until the rest holds at most OutputMaxBytes. At
// most 10000 folders are looked at; symlinks are never followed.
func SweepOutputs(state string) (removed int) {
	return sweepOutputs(OutputsDir(state), time.Now(), OutputMaxAge, OutputMaxBytes)
}

func sweepOutputs(root string, now time.Time, maxAge time.Duration, maxBytes int64) (removed int) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return 0
	}
	type folder struct {
		path string
		used time.Time
		size int64
	}
	var folders []folder
	for i, e := range ents {
		if i >= 10000 {
			break
		}
		p := filepath.Join(root, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		var size int64
		filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if i, err := d.Info(); err == nil {
					// A spool a host killed mid-command left behind.
					if strings.HasPrefix(d.Name(), ".flemma_tool_") && strings.HasSuffix(d.Name(), ".tmp") && now.Sub(i.ModTime()) > 24*time.Hour {
						os.Remove(f)
						return nil
					}
					size += i.Size()
				}
			}
			return nil
		})
		folders = append(folders, folder{p, fi.ModTime(), size})
	}
	sort.Slice(folders, func(i, j int) bool { return folders[i].used.After(folders[j].used) })
	var total int64
	for i, f := range folders {
		total += f.size
		// The folder used last stays whatever its size: it is the
		// conversation at work.
		if now.Sub(f.used) > maxAge || i > 0 && total > maxBytes {
			if err := os.RemoveAll(f.path); err == nil || errors.Is(err, fs.ErrNotExist) {
				removed++
			}
		}
	}
	return removed
}

// CacheFolder is the folder of tool caches of sandboxed commands for the
// project of a buffer (its folder, else Neovim's cwd): state/cache/<a name
// derived from that folder>. Commands of another project do not share it.
func CacheFolder(state, cwd, bufferPath string) string {
	dir := cwd
	if bufferPath != "" {
		dir = filepath.Dir(bufferPath)
	}
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(state, "cache", hex.EncodeToString(sum[:10]))
}

// CacheMaxBytes bounds the tool caches of sandboxed commands in all (the
// least recently used projects' go first; Go trims its own cache too).
const CacheMaxBytes = 4 << 30

// SweepCaches removes the cache folders of projects unused for
// OutputMaxAge, then the least recently used beyond CacheMaxBytes.
func SweepCaches(state string) int {
	return sweepOutputs(filepath.Join(state, "cache"), time.Now(), OutputMaxAge, CacheMaxBytes)
}
