//go:build !linux

package builtin

import "errors"

// Without bubblewrap nothing is tracked, so the guard never runs here.

var errNoGuard = errors.New("not supported on this system")

func readLinksIn([]string) map[string]linkBefore { return nil }

func restoreLink(string, string, dirID, func() string) error { return errNoGuard }

func moveAside(string, string) error { return errNoGuard }

func removeEmptyDir(string) error { return errNoGuard }
