package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialCheck(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{"fails": "exit 1", "gives": "echo tok-123", "marks": "touch " + filepath.Join(dir, "ran") + "; echo x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"SET_KEY": "k"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name    string
		src     KeySource
		present bool
		want    string
	}{
		{"environment first: no command run", KeySource{Env: []string{"SET_KEY"}, Cmd: []string{filepath.Join(dir, "marks")}}, true, "$SET_KEY"},
		{"a command that fails", KeySource{Cmd: []string{filepath.Join(dir, "fails")}}, false, "failed (exit code 1)"},
		{"a command that gives one", KeySource{Cmd: []string{filepath.Join(dir, "gives")}}, true, "which gave one"},
		{"a command not on $PATH", KeySource{Cmd: []string{"no-such-command-flemma"}}, false, "is not on $PATH"},
		{"no command, no variable", KeySource{Env: []string{"UNSET_KEY"}}, false, "$UNSET_KEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			ok, desc := CredentialCheck(context.Background(), "custom", Config{Key: &src, Getenv: getenv, Keys: &Keyring{}})
			if ok != c.present || !strings.Contains(desc, c.want) || strings.Contains(desc, "tok-123") {
				t.Errorf("CredentialCheck = %v, %q; want %v and %q", ok, desc, c.present, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran although the environment held the credential")
	}
}
