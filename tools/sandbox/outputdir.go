package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The host's private folder for full outputs (Env.OutputDir): one per host
// process, in the temporary directory, named
// flemma-output-<pid>-<start>-<pidns>-<random>, where start is the
// process's start time as the kernel counts it, so that a pid used again by
// another process is not mistaken for the host, and pidns its PID
// namespace (a host in a container that shares /tmp has pids of its own:
// its folders are judged by age only). Both are Linux's; "0" where unknown.

// outputPrefix starts the name of every output folder.
const outputPrefix = "flemma-output-"

// Bounds of the sweep NewOutputDir does at each start: the entries of the
// temporary directory it reads, and the folders it removes (the rest wait
// for the next start).
var (
	outputSweepScan = 20000
	outputSweepMax  = 256
)

// legacyOutputAge: a folder whose host cannot be told — of the old naming
// (flemma-output-<random>), or of a host in another PID namespace — is
// removed once untouched for this long.
const legacyOutputAge = 7 * 24 * time.Hour

// NewOutputDir creates the host's private output folder (0700) in the
// temporary directory ($TMPDIR, else /tmp), after removing the folders of
// hosts that are no longer running: only directories (never a symlink)
// whose names match the pattern, owned by this user, whose host process is
// gone (or whose pid now belongs to a process started at another time);
// folders whose host cannot be told (the old naming, another PID
// namespace) once untouched for a week. The sweep is
// bounded (outputSweepScan entries read, outputSweepMax folders removed per
// start). cleanup removes the folder; the host calls it when it shuts down
// (it is safe to call more than once, and from any goroutine).
func NewOutputDir() (dir string, cleanup func(), err error) {
	tmp := os.TempDir()
	sweepOutputDirs(tmp)
	start, ok := processStart(os.Getpid())
	if !ok {
		start = "0"
	}
	dir, err = os.MkdirTemp(tmp, fmt.Sprintf("%s%d-%s-%s-", outputPrefix, os.Getpid(), start, pidNamespace()))
	if err != nil {
		return "", func() {}, fmt.Errorf("create the output folder: %w", err)
	}
	var once sync.Once
	return dir, func() { once.Do(func() { os.RemoveAll(dir) }) }, nil
}

// sweepOutputDirs removes the output folders of hosts that are gone.
func sweepOutputDirs(tmp string) {
	d, err := os.Open(tmp)
	if err != nil {
		return
	}
	var names []string
	for len(names) < outputSweepScan {
		batch, err := d.Readdirnames(min(1024, outputSweepScan-len(names)))
		for _, n := range batch {
			if strings.HasPrefix(n, outputPrefix) {
				names = append(names, n)
			}
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			break
		}
	}
	d.Close()
	sort.Strings(names)
	removed := 0
	ns := pidNamespace()
	for _, n := range names {
		if removed >= outputSweepMax {
			return
		}
		if !staleOutputDir(tmp, n, ns) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tmp, n)); err == nil || errors.Is(err, os.ErrNotExist) {
			removed++
		}
	}
}

// staleOutputDir reports whether tmp/name is an output folder of this
// user whose host is gone (ns: this process's PID namespace).
func staleOutputDir(tmp, name, ns string) bool {
	fi, err := os.Lstat(filepath.Join(tmp, name))
	if err != nil || !fi.IsDir() || !ownedByMe(fi) {
		return false
	}
	old := time.Since(fi.ModTime()) > legacyOutputAge
	parts := strings.Split(strings.TrimPrefix(name, outputPrefix), "-")
	switch {
	case len(parts) == 1 && isDigits(parts[0]):
		return old // the old naming
	case len(parts) != 4 || !isDigits(parts[0]) || !isDigits(parts[1]) || !isDigits(parts[2]):
		return false
	case parts[2] != ns:
		return old // its pids are not ours to look up
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		// Ours, from this very process (an earlier NewOutputDir): alive.
		return false
	}
	if !processAlive(pid) {
		return true
	}
	if parts[1] == "0" {
		return false // no start time to compare: the pid may still be its host
	}
	now, ok := processStart(pid)
	return ok && now != parts[1]
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
