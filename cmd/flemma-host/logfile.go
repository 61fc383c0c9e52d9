package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/flemma-dev/flemma/internal/secrets"
)

// maxLogBytes is the size at which the log is rotated: host.log becomes
// host.log.1 (replacing the previous one) and a new host.log starts. The
// log of a busy host thus takes at most about twice this on disk.
const maxLogBytes = 10 << 20

// logFile is an append-only log file that rotates itself at maxLogBytes.
// It is safe for concurrent use.
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	max  int64
}

// openLog opens (creating) the log at path, in a private directory, with
// the file readable by its owner only (it names files and commands).
func openLog(path string, max int64) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	l := &logFile{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	if l.size >= l.max {
		l.rotate()
	}
	return l, nil
}

func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// rotate moves the log to path.1 and starts a new one. On failure it keeps
// writing to the old file (a log must never stop the host).
func (l *logFile) rotate() {
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return
	}
	old := l.f
	if err := l.open(); err != nil {
		l.f = old
		return
	}
	old.Close()
	fmt.Fprintf(l.f, "(log rotated: the previous one is %s.1)\n", filepath.Base(l.path))
}

// Write appends p, every configured credential in it replaced by
// [redacted] (secrets.Default: whatever wrote the line, a credential never
// reaches the log). log.Logger writes one entry per call.
func (l *logFile) Write(p []byte) (int, error) {
	q := []byte(secrets.Default.Redact(string(p)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(q)) > l.max {
		l.rotate()
	}
	n, err := l.f.Write(q)
	l.size += int64(n)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
