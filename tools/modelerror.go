package tools

import "fmt"

// ModelError is an error written for the model to read (and the user, in
// the tool result): whole sentences, capitalized, often saying what to do
// next ("No path provided", "File not found: x"). Go's convention for error
// strings (lower case, no punctuation, made to be wrapped) is for errors
// programs read; a tool's result is read as is, so its failures are this
// type instead. Failf makes one.
type ModelError struct {
	err error
}

// Failf formats a ModelError as fmt.Errorf formats an error (%w wraps).
// The result is always a *ModelError.
func Failf(format string, args ...any) error {
	return &ModelError{err: fmt.Errorf(format, args...)}
}

func (e *ModelError) Error() string { return e.err.Error() }

// Unwrap returns what the format wrapped with %w (errors.Is and errors.As
// see through a ModelError).
func (e *ModelError) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	}
	return nil
}
