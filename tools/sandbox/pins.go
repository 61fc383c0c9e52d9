package sandbox

import (
	"fmt"
	"sync"
)

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

func (id fileID) String() string { return fmt.Sprintf("device %d, inode %d", id.dev, id.ino) }

// RootPins remembers the identity of each writable root the first time it
// is resolved: its path with symlinks resolved, device and inode. A later
// resolution of the same configured root that lands elsewhere — the folder
// was replaced by a symlink, or by another folder — is refused by
// New, so a command that swapped a root cannot widen what the next
// calls may write. The host keeps one RootPins per buffer (WithRootPins)
// and forgets it only on a user action (Reset). Safe for concurrent use.
type RootPins struct {
	mu sync.Mutex
	m  map[string]rootPin
}

type rootPin struct {
	resolved string
	id       fileID
}

// NewRootPins returns an empty set of pins.
func NewRootPins() *RootPins { return &RootPins{m: map[string]rootPin{}} }

// defaultPins are the pins of sandboxes built without WithRootPins.
var defaultPins = NewRootPins()

// Reset forgets every pin: the next resolution of each root is trusted
// again. Call it only when the user asks (e.g. after they recreated a
// folder on purpose).
func (p *RootPins) Reset() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.m = map[string]rootPin{}
	p.mu.Unlock()
}

// check compares the resolution of the configured root key (expanded,
// absolute, symlinks not resolved) with its pin, recording it when it is
// the first. "" means the root may be used; otherwise the reason to refuse
// it. A root that does not exist yet is not pinned; a pinned root that
// disappeared is refused.
func (p *RootPins) check(key, resolved string, id fileID, exists bool) string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pin, ok := p.m[key]
	switch {
	case !ok && exists:
		p.m[key] = rootPin{resolved: resolved, id: id}
		return ""
	case !ok:
		return ""
	case !exists:
		return fmt.Sprintf("it was %s when first used and no longer exists: it was removed or replaced; refused until the user resets the sandbox", pin.resolved)
	case pin.resolved != resolved || pin.id != id:
		return fmt.Sprintf("it now resolves to %s (%s), not to %s (%s) as when first used: it was replaced; refused until the user resets the sandbox", resolved, id, pin.resolved, pin.id)
	}
	return ""
}
