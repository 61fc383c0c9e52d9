//go:build !unix

package sandbox

import "os"

// statID cannot read an identity here: roots are not pinned (only their
// existence is reported).
func statID(p string) (fileID, bool) {
	_, err := os.Stat(p)
	return fileID{}, err == nil
}
