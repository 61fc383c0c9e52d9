package flemma

import (
	"regexp"
	"strings"
	"testing"
)

// lua/flemma/VERSION is one line, a version (lua/flemma/version.lua reads
// its first line).
func TestVersionFile(t *testing.T) {
	if strings.Count(strings.TrimRight(versionFile, "\n"), "\n") != 0 {
		t.Errorf("lua/flemma/VERSION must be one line, got %q", versionFile)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Errorf("lua/flemma/VERSION holds %q, not a version like 1.2.3", Version)
	}
}
