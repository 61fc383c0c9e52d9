package main

import (
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flemma-dev/flemma/internal/secrets"
)

// The log rotates at its bound and keeps one previous file: it never grows
// without limit (issue 12).
func TestLogRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "flemma")
	path := filepath.Join(dir, "host.log")
	l, err := openLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", 99) + "\n"
	for i := 0; i < 35; i++ {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if st.Size() > 1100 {
			t.Errorf("%s is %d bytes, over the bound", p, st.Size())
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode %v, want 0700", st.Mode().Perm())
	}
	// A log already over the bound at start is rotated first.
	if err := os.WriteFile(path, []byte(strings.Repeat("y", 2000)), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err = openLog(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if st, _ := os.Stat(path); st.Size() > 100 {
		t.Errorf("an oversized log was not rotated at start (%d bytes)", st.Size())
	}
}

// Whatever writes a line, a configured credential never reaches the log.
func TestLogRedactsCredentials(t *testing.T) {
	secrets.Default.Add("log-secret-0123456789")
	path := filepath.Join(t.TempDir(), "host.log")
	l, err := openLog(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	logger := log.New(l, "", 0)
	logger.Printf("send: error: invalid key log-secret-0123456789 (echoed)")
	l.Close()
	b, _ := os.ReadFile(path)
	if got := string(b); strings.Contains(got, "log-secret") || !strings.Contains(got, "invalid key [redacted] (echoed)") {
		t.Errorf("log = %q", got)
	}
}
