package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/flemma-dev/flemma/tools"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// ReadInput is the input of read (reference §7.2).
type ReadInput struct {
	Label  string   `json:"label" desc:"A short human-readable label for this operation"`
	Limit  *float64 `json:"limit" desc:"Maximum number of lines to read"`
	Offset *float64 `json:"offset" desc:"Line number to start reading from (1-indexed)"`
	Path   string   `json:"path" desc:"Path to the file, absolute or relative to the chat file's directory (~ is the home directory)"`
}

// Read is the read built-in: a file's lines with offset/limit, head-truncated
// to 2000 lines or 50KB with a notice telling how to continue; a binary file
// is answered with a file reference and its MIME type.
func Read() tools.Tool {
	return tools.Typed(tools.Spec{
		Name:      "read",
		Truncates: true,
		Description: "Read the contents of a file. Output is truncated to 2000 lines or 50KB, whichever comes first; " +
			"use offset and limit to read large files in parts (the notice at the end says how to continue). " +
			"Images and PDFs are returned as a file reference that is attached to the conversation.",
		Capabilities: []string{"template_tool_result", tools.CapReadsPath},
		Tags:         []string{"filesystem", "readonly"},
		Enabled:      true,
	}, runRead)
}

func runRead(ctx context.Context, call tools.Call, in ReadInput) (tools.Output, error) {
	if in.Path == "" {
		return tools.Output{}, tools.Failf("No path provided")
	}
	resolved, err := checkedRead(call, in.Path)
	if err != nil {
		return tools.Output{}, err
	}
	f, err := sandbox.OpenNoFollow(resolved)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, sandbox.ErrNotRegular):
			return tools.Output{}, tools.Failf("File not found: %s", in.Path)
		case errors.Is(err, sandbox.ErrIsDir):
			return tools.Output{}, tools.Failf("File not found: %s is a directory (use ls to list it)", in.Path)
		}
		return tools.Output{}, ioError("read", err)
	}
	defer f.Close()

	head := make([]byte, 8192)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return tools.Output{}, ioError("read", err)
	}
	head = head[:n]
	if mime, binary := tools.DetectMIME(resolved, head); binary {
		return tools.Output{Text: "@" + fileRef(in.Path) + ";type=" + mime}, nil
	}

	start := 1
	if in.Offset != nil {
		start = int(math.Max(1, math.Floor(*in.Offset)))
	}
	limit := -1
	if in.Limit != nil {
		limit = int(math.Max(1, math.Floor(*in.Limit)))
	}
	lim := call.Env.Limits()
	r, err := readLines(ctx, io.MultiReader(bytes.NewReader(head), f), start, limit, lim)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Output{}, ctx.Err()
		}
		return tools.Output{}, ioError("read", err)
	}
	call.Env.ReadsOrDefault().Record(call.Bufnr, resolved, r.sum)

	if r.total == 0 && start == 1 {
		return tools.Output{Text: "(empty file)"}, nil
	}
	if start > r.total {
		return tools.Output{}, tools.Failf("Offset %d is beyond end of file (%d lines total)", start, r.total)
	}
	limitText := tools.FormatSize(int64(lim.MaxBytes))
	if r.stop == stopFirstTooBig {
		return tools.Output{Text: fmt.Sprintf("[Line %d is %s, exceeds %s limit. Use bash: sed -n '%dp' %s | head -c %d]",
			start, tools.FormatSize(int64(r.firstSize)), limitText, start, shellQuote(in.Path), lim.MaxBytes)}, nil
	}
	content := tools.Finish(strings.Join(r.lines, "\n"), call.Env)
	end := start + len(r.lines) - 1
	switch r.stop {
	case stopLines:
		content += fmt.Sprintf("\n\n[Showing lines %d-%d of %d. Use offset=%d to continue.]", start, end, r.total, end+1)
	case stopBytes:
		content += fmt.Sprintf("\n\n[Showing lines %d-%d of %d (%s limit). Use offset=%d to continue.]", start, end, r.total, limitText, end+1)
	case stopLimit:
		content += fmt.Sprintf("\n\n[%d more lines in file. Use offset=%d to continue.]", r.total-end, end+1)
	}
	return tools.Output{Text: content}, nil
}

type readStop int

const (
	stopEOF readStop = iota
	stopLines
	stopBytes
	stopLimit
	stopFirstTooBig
)

type readResult struct {
	lines     []string
	total     int // lines in the file
	stop      readStop
	firstSize int // stopFirstTooBig: the size of the first selected line
	sum       [sha256.Size]byte
}

// readLines streams r once: it keeps the selected lines (from line start,
// at most limit of them when limit > 0) within the truncation limits, counts
// every line of the file, and hashes the whole content. Lines are split as
// Neovim's readfile does: on "\n", a "\r" before it dropped, a leading BOM
// removed, no extra line after a final newline.
func readLines(ctx context.Context, r io.Reader, start, limit int, lim tools.Limits) (readResult, error) {
	var res readResult
	h := sha256.New()
	buf := make([]byte, 256*1024)
	var cur []byte // the current line, kept up to MaxBytes+1 bytes
	curLen := 0    // its real length
	lineNo := 1
	collecting := true
	keptBytes := 0
	newlines := 0
	var last byte
	seen := false

	finish := func() {
		if lineNo >= start && collecting {
			line, n := cur, curLen
			if n > 0 && len(line) == n && line[n-1] == '\r' {
				line, n = line[:n-1], n-1
			}
			if lineNo == 1 && bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
				line, n = line[3:], n-3
			}
			k := len(res.lines)
			switch {
			case k == 0 && n > lim.MaxBytes:
				res.stop, res.firstSize, collecting = stopFirstTooBig, n, false
			case limit > 0 && k == limit:
				res.stop, collecting = stopLimit, false
			case k == lim.MaxLines:
				res.stop, collecting = stopLines, false
			case keptBytes+min(k, 1)+n > lim.MaxBytes:
				res.stop, collecting = stopBytes, false
			default:
				res.lines = append(res.lines, string(line))
				keptBytes += min(k, 1) + n
			}
		}
		lineNo++
		cur, curLen = cur[:0], 0
	}

	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			h.Write(chunk)
			seen, last = true, chunk[n-1]
			if !collecting {
				newlines += bytes.Count(chunk, []byte{'\n'})
			} else {
				for len(chunk) > 0 {
					i := bytes.IndexByte(chunk, '\n')
					part := chunk
					if i >= 0 {
						part = chunk[:i]
					}
					if room := lim.MaxBytes + 1 - len(cur); room > 0 {
						cur = append(cur, part[:min(room, len(part))]...)
					}
					curLen += len(part)
					if i < 0 {
						break
					}
					newlines++
					chunk = chunk[i+1:]
					finish()
					if !collecting {
						newlines += bytes.Count(chunk, []byte{'\n'})
						break
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
	}
	if seen && last != '\n' {
		if collecting {
			finish()
		}
		res.total = newlines + 1
	} else {
		res.total = newlines
	}
	copy(res.sum[:], h.Sum(nil))
	return res, nil
}

// fileRef is the file reference of a binary file, built from the path as
// the model wrote it (reference §7.2): /abs → //abs, ~/… and ./… kept,
// anything else gets ./; whitespace, #, %, ? and ; are percent-encoded.
func fileRef(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		p = "/" + p
	case strings.HasPrefix(p, "~/"), strings.HasPrefix(p, "./"), strings.HasPrefix(p, "../"):
	default:
		p = "./" + p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case ' ', '\t', '\n', '\r', '\v', '\f', '#', '%', '?', ';':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-~+:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
