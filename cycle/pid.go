package cycle

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// pidAliveSince reports whether the flemma that started a call at started
// (process pid) may still be running. A process with that pid that started
// after the call is another program (after a machine crash pids start over
// and are soon reused): the call was interrupted (issue 28 item 4: the
// machine's crash path). Where the start time cannot be read, a live pid
// counts as the same process (the call waits for the user: the safe side).
func pidAliveSince(pid int, started time.Time) bool {
	if !pidAlive(pid) {
		return false
	}
	if t, ok := processStart(pid); ok && !started.IsZero() && t.After(started.Add(2*time.Second)) {
		return false
	}
	return true
}

// processStart is when process pid started, from Linux's /proc (its start
// in clock ticks after boot, and the boot time).
func processStart(pid int) (time.Time, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' start with field 3.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22: starttime
	if err != nil {
		return time.Time{}, false
	}
	boot, ok := bootTime()
	if !ok {
		return time.Time{}, false
	}
	const clkTck = 100 // USER_HZ: 100 on every Linux architecture Go runs on
	return boot.Add(time.Duration(ticks) * time.Second / clkTck), true
}

// bootTime is the machine's boot time (btime in /proc/stat).
func bootTime() (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(n, 0), true
		}
	}
	return time.Time{}, false
}
