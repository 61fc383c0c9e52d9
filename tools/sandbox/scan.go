package sandbox

// Bounds of the scan WrapCommand makes before every sandboxed command to
// find what bubblewrap must hide: deny_read files and folders, sockets, and
// (with Env.Protect) protected paths. Each tree is walked breadth first, so
// what lies near its top is seen first; big folders that rarely hold
// secrets of their own (heavyDirs) are walked last. A scan cut short says
// so in Status.
const (
	scanRootEntries = 60000 // directory entries of the writable roots, together
	scanHomeEntries = 30000 // of the home directory (outside the roots)
	scanTempEntries = 10000 // of /tmp and $TMPDIR (each)
	scanMaxDepth    = 32
	scanMaxMasks    = 400 // mounts added to one command (each costs bubblewrap about 0.5 ms here)
	groupMasks      = 3   // outside the roots, a folder with this many hidden files is hidden whole
)
