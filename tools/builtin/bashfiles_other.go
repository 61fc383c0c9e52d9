//go:build !linux

package builtin

import "io/fs"

func inodeOf(fs.FileInfo) uint64 { return 0 }

func ctimeOf(fs.FileInfo) int64 { return 0 }
