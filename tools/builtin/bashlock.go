package builtin

import (
	"strings"
	"sync"
)

// Policy-approved commands run side by side (tools.max_concurrent), and a
// mount cannot make a protected symbolic link (.git) read-only, so each
// one's guard puts such a link back to the target it had before (issue 24
// #1). "Before" is one baseline for all the commands whose tracked roots
// overlap and that run at once: a command that starts while another runs
// takes a link's target from the earliest of them that had read it, never
// from what it reads itself — which may be what the other command did (a
// .git repointed at the model's folder). Otherwise its guard, ending after
// the other's, would put the model's target "back". Rejected: running such
// commands one at a time (a build and its tests no longer run together, and
// a command that waits for another never ends).

// trackHold is one running command's baseline of link targets.
type trackHold struct {
	roots []string
	links map[string]linkBefore
}

var tracking struct {
	mu     sync.Mutex
	active []*trackHold // in the order the commands started
}

// holdBaseline registers a command tracking roots, whose own reading of its
// links is links, and returns the links it must put back to: for each link
// an earlier running command in overlapping roots also read, that one's
// target. release ends the hold (once its guard is done).
func holdBaseline(roots []string, links map[string]linkBefore) (map[string]linkBefore, func()) {
	tracking.mu.Lock()
	defer tracking.mu.Unlock()
	merged := make(map[string]linkBefore, len(links))
	for p, l := range links {
		merged[p] = l
	}
	for i := len(tracking.active) - 1; i >= 0; i-- { // the earliest last: it wins
		h := tracking.active[i]
		if !rootsOverlap(h.roots, roots) {
			continue
		}
		for p, l := range h.links {
			if _, ok := merged[p]; ok {
				merged[p] = l
			}
		}
	}
	h := &trackHold{roots: roots, links: merged}
	tracking.active = append(tracking.active, h)
	var once sync.Once
	return merged, func() {
		once.Do(func() {
			tracking.mu.Lock()
			defer tracking.mu.Unlock()
			for i, x := range tracking.active {
				if x == h {
					tracking.active = append(tracking.active[:i], tracking.active[i+1:]...)
					break
				}
			}
		})
	}
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
