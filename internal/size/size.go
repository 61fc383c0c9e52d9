// Package size formats byte counts the way previews, notices and
// truncation footers show them ("5B", "2.3KB", "1.0MB"): one function that
// both preview and tools use, so they always agree.
package size

import "strconv"

// Format formats a byte count with one decimal (binary units).
func Format(n int64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n < kib:
		return strconv.FormatInt(n, 10) + "B"
	case n < mib:
		return strconv.FormatFloat(float64(n)/kib, 'f', 1, 64) + "KB"
	case n < gib:
		return strconv.FormatFloat(float64(n)/mib, 'f', 1, 64) + "MB"
	}
	return strconv.FormatFloat(float64(n)/gib, 'f', 1, 64) + "GB"
}
