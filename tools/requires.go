package tools

import (
	"os/exec"
	"strings"
)

// HaveRequirement reports whether a requirement is met: "exe:<name>" is an
// executable on $PATH; other kinds are unknown and therefore unmet.
func HaveRequirement(req string) bool {
	if name, ok := strings.CutPrefix(req, "exe:"); ok {
		_, err := exec.LookPath(name)
		return err == nil
	}
	return false
}
