//go:build !linux

package sandbox

// HardenProcess does nothing here: there is no /proc/<pid>/environ to
// protect (Linux only).
func HardenProcess() error { return nil }
