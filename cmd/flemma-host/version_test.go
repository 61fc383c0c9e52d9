package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The Lua side checks the host's version in the handshake: the version is
// written twice (here and lua/flemma/version.lua) and must be the same.
func TestVersionMatchesTheLuaSide(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "lua", "flemma", "version.lua"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^return "([^"]+)"\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("lua/flemma/version.lua does not end in return \"<version>\":\n%s", b)
	}
	if string(m[1]) != version {
		t.Errorf("lua/flemma/version.lua says %q, cmd/flemma-host %q: change both", m[1], version)
	}
}
