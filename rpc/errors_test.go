package rpc

import (
	"errors"
	"testing"
)

func TestWithOp(t *testing.T) {
	fail := withOp("flemma.cycle", func(n int) (string, error) { return "", errors.New("read buffer 3: gone") }).(func(int) (string, error))
	if _, err := fail(1); err == nil || err.Error() != "cycle: read buffer 3: gone" {
		t.Errorf("err = %v", err)
	}
	ok := withOp("flemma.cycle", func(n int) (string, error) { return "x", nil }).(func(int) (string, error))
	if s, err := ok(1); s != "x" || err != nil {
		t.Errorf("ok = %q %v", s, err)
	}
	already := withOp("flemma.setup", func(string) error { return errors.New("setup: bad JSON") }).(func(string) error)
	if err := already(""); err.Error() != "setup: bad JSON" {
		t.Errorf("double prefix: %v", err)
	}
	notify := withOp("flemma.refresh", func(int) {}).(func(int))
	notify(1)
}
