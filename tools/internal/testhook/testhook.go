// Package testhook holds the few switches with which the tests of package
// tools and its sub-packages reach states a real machine rarely shows
// (a file replaced between two steps, no process supervisor, no
// bubblewrap). Production code only reads them, and nothing but tests sets
// them; being internal, no other module can.
package testhook

var (
	// BeforeRename is called by an atomic write between writing the
	// temporary file and renaming it onto the path.
	BeforeRename func(path string)
	// NoSupervisor makes commands start without the process supervisor
	// (the fallback where it cannot run).
	NoSupervisor bool
	// NoBwrap, when not empty, makes bubblewrap look missing, for this
	// reason.
	NoBwrap string
	// NoSeccomp, when not empty, makes bubblewrap's seccomp filter look
	// unavailable, for this reason (the fallback: sockets found and hidden).
	NoSeccomp string
	// ResetShutdown lets commands start again after KillAll (set by the
	// sandbox package).
	ResetShutdown func()
	// ForgetInherited makes the next command mark the descriptors the
	// process inherited close-on-exec again (set by the sandbox package).
	ForgetInherited func()
)
