package main

import (
	"io"
	"os"
	"testing"

	"github.com/flemma-dev/flemma"
)

// `flemma-host -version` prints the version of lua/flemma/VERSION, the one
// the Lua side reads and checks in the handshake.
func TestVersionFlag(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, args := os.Stdout, os.Args
	defer func() { os.Stdout, os.Args = stdout, args }()
	os.Stdout, os.Args = w, []string{"flemma-host", "-version"}
	code := run()
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "flemma-host " + flemma.Version + "\n"; code != 0 || string(out) != want {
		t.Errorf("flemma-host -version = %d, %q; want 0, %q", code, out, want)
	}
}
