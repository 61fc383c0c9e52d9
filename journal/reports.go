package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
)

// Reports of damage outlive the host that found it. Open moves a damaged
// journal aside, or finds a damaged WAL, before the host can tell anyone;
// a host killed in between (it happens: a crash is often why the file is
// damaged) would take the news with it, and the next host would find a
// sound new journal and say nothing. So each finding is also appended to
// <journal>.unreported, and stays there until a host has told the user and
// calls Acknowledge.

// Report is one finding of Open that the user must hear of.
type Report struct {
	// Kind is "moved-aside" (a damaged journal was moved aside and a new
	// one started: Recovery) or "wal" (records of the WAL could not be
	// read: WALDamage).
	Kind string `json:"kind"`
	// Text says what happened, what was lost and where the damaged file
	// went (Recovery.String, WALDamage.String).
	Text string `json:"text"`
}

const unreportedSuffix = ".unreported"

// addReport appends r to the journal's unreported findings.
func addReport(path string, r Report) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	f, err := os.OpenFile(path+unreportedSuffix, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n'))
}

// replaceReport replaces one finding with another (its counts came).
func replaceReport(path string, old, r Report) {
	j := &Journal{path: path}
	reports := j.Reports()
	for i := range reports {
		if reports[i] == old {
			reports[i] = r
		}
	}
	_ = writeReports(path, reports)
}

// Reports returns the findings of Open (this one's and earlier ones') that
// no host has acknowledged yet, oldest first.
func (j *Journal) Reports() []Report {
	f, err := os.Open(j.path + unreportedSuffix)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Report
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		var r Report
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Text != "" {
			out = append(out, r)
		}
	}
	return out
}

// Acknowledge removes reports from the unreported findings: the user was
// told.
func (j *Journal) Acknowledge(reports []Report) error {
	var keep []Report
	for _, r := range j.Reports() {
		if !slices.Contains(reports, r) {
			keep = append(keep, r)
		}
	}
	return writeReports(j.path, keep)
}

// writeReports replaces the unreported findings with reports.
func writeReports(journal string, reports []Report) error {
	path := journal + unreportedSuffix
	if len(reports) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	for _, r := range reports {
		b, _ := json.Marshal(r)
		if _, err := f.Write(append(b, '\n')); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
