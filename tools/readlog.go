package tools

import (
	"crypto/sha256"
	"sync"
)

// ReadLog remembers, per conversation (buffer number), the content hash of
// each file as the model last saw it: after read, write or edit. edit
// refuses to change a file whose content no longer has that hash (seed 001's
// stale-file protection). It is safe for concurrent use.
type ReadLog struct {
	mu sync.Mutex
	m  map[int]map[string][sha256.Size]byte
}

// NewReadLog returns an empty log.
func NewReadLog() *ReadLog { return &ReadLog{m: map[int]map[string][sha256.Size]byte{}} }

// Record notes that the model of conversation conv saw path (resolved) with
// this content hash.
func (l *ReadLog) Record(conv int, path string, sum [sha256.Size]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	files := l.m[conv]
	if files == nil {
		files = map[string][sha256.Size]byte{}
		l.m[conv] = files
	}
	files[path] = sum
}

// Lookup returns the hash recorded for path in conversation conv.
func (l *ReadLog) Lookup(conv int, path string) ([sha256.Size]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sum, ok := l.m[conv][path]
	return sum, ok
}

// Forget drops everything recorded for a conversation (its buffer was
// wiped).
func (l *ReadLog) Forget(conv int) {
	l.mu.Lock()
	delete(l.m, conv)
	l.mu.Unlock()
}
