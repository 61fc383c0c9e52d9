// Package flemma holds what the plugin's two halves share at build time:
// the version, written once in lua/flemma/VERSION. The Lua side reads that
// file at runtime (lua/flemma/version.lua); the host embeds it, so the
// version in the handshake cannot drift from the plugin's.
package flemma

import (
	_ "embed"
	"strings"
)

//go:embed lua/flemma/VERSION
var versionFile string

// Version is the plugin's version: lua/flemma/VERSION without its newline.
var Version = strings.TrimSpace(versionFile)
