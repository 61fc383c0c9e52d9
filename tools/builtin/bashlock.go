package builtin

import (
	"context"
	"strings"
	"sync"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// Policy-approved commands whose tracked roots overlap run one at a time
// (issue 24 #1, the guard): the lock is taken before the command's
// protected paths are scanned and its roots snapshot, and released once
// its guard has put right what it did. Were two such commands to run at
// once, the second's snapshot could record what the first did to a
// protected path (a .git repointed) as how things were, and its guard
// would then put that back after the first's guard had undone it.
// Commands the user approved, and untracked ones, do not take the lock.

// rootLock is one command's hold on its tracked roots.
type rootLock struct {
	roots []string
	done  chan struct{}
}

var trackLocks struct {
	mu   sync.Mutex
	held []*rootLock
}

// lockTracked waits until no other policy-approved command holds a root
// overlapping the roots this one tracks, then holds them until release is
// called; an error only when ctx ends first. Commands that are not both
// tracked (bubblewrap) and policy-approved return at once.
func lockTracked(ctx context.Context, sb *sandbox.Sandbox, env *tools.Env, call tools.Call) (release func(), err error) {
	if sb.Backend() != "bwrap" || !sb.Protecting() {
		return func() {}, nil
	}
	roots := trackedFor(sb, env, call)
	if len(roots) == 0 {
		return func() {}, nil
	}
	return lockRoots(ctx, roots)
}

// lockRoots holds roots once no hold overlaps them (see lockTracked).
func lockRoots(ctx context.Context, roots []string) (func(), error) {
	for {
		trackLocks.mu.Lock()
		var busy *rootLock
		for _, h := range trackLocks.held {
			if rootsOverlap(h.roots, roots) {
				busy = h
				break
			}
		}
		if busy == nil {
			l := &rootLock{roots: roots, done: make(chan struct{})}
			trackLocks.held = append(trackLocks.held, l)
			trackLocks.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { unlockRoots(l) }) }, nil
		}
		trackLocks.mu.Unlock()
		select {
		case <-busy.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func unlockRoots(l *rootLock) {
	trackLocks.mu.Lock()
	defer trackLocks.mu.Unlock()
	for i, h := range trackLocks.held {
		if h == l {
			trackLocks.held = append(trackLocks.held[:i], trackLocks.held[i+1:]...)
			break
		}
	}
	close(l.done)
}

// rootsOverlap reports whether a folder of a is one of b, or inside or
// around one of b.
func rootsOverlap(a, b []string) bool {
	within := func(p, root string) bool {
		return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
	}
	for _, x := range a {
		for _, y := range b {
			if within(x, y) || within(y, x) {
				return true
			}
		}
	}
	return false
}
