package tools

import (
	"errors"
	"io/fs"
	"testing"
)

func TestFailf(t *testing.T) {
	err := Failf("File not found: %s (%w)", "x.go", fs.ErrNotExist)
	var me *ModelError
	if !errors.As(err, &me) || err.Error() != "File not found: x.go (file does not exist)" {
		t.Errorf("Failf = %T %q", err, err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("Failf does not wrap what %w names")
	}
	if errors.Is(Failf("No path provided"), fs.ErrNotExist) {
		t.Error("a ModelError without %w wraps something")
	}
	if err := Failf("A %w and a %w", fs.ErrExist, fs.ErrClosed); !errors.Is(err, fs.ErrExist) || !errors.Is(err, fs.ErrClosed) {
		t.Errorf("two %%w: %v", err)
	}
}
