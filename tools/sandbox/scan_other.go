//go:build !linux

package sandbox

// maskPlan is empty where bubblewrap does not exist.
type maskPlan struct {
	early, ro, tmpfs, null, private, rebind, reveal []string
	sockets, entries                                int
	scanned, notes                                  []string
	seccomp                                         bool
}

func (s *Sandbox) planMasks() *maskPlan { return &maskPlan{} }
