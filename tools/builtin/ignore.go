package builtin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/flemma-dev/flemma/tools/sandbox"
)

// A gitignore-style rule (gitignore(5)): matched against the base name when
// the pattern has no slash, else against the path relative to the
// directory of the ignore file. The last matching rule of the deepest file
// decides; `!` re-includes.
type ignoreRule struct {
	pat      string // doublestar pattern (braces escaped: gitignore has none)
	kind     sandbox.GlobKind
	lit      string
	negate   bool
	dirOnly  bool
	anchored bool
}

// ignoreFrame is the rules of one directory: .git/info/exclude (at a repo
// root), then .gitignore, then .ignore (later rules take precedence, as in
// ripgrep).
type ignoreFrame struct {
	base  string // absolute directory
	rules []ignoreRule
}

func parseIgnore(data []byte) []ignoreRule {
	var rules []ignoreRule
	for _, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimSuffix(string(raw), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		r.anchored = strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		line = strings.NewReplacer("{", `\{`, "}", `\}`).Replace(line)
		if !doublestar.ValidatePattern(line) {
			continue
		}
		r.pat = line
		r.kind, r.lit = sandbox.ClassifyGlob(line)
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether the entry abs (named name) is ignored by the
// frames, innermost first.
func ignored(frames []ignoreFrame, abs, name string, isDir bool) bool {
	for i := len(frames) - 1; i >= 0; i-- {
		fr := &frames[i]
		for j := len(fr.rules) - 1; j >= 0; j-- {
			r := &fr.rules[j]
			if r.dirOnly && !isDir {
				continue
			}
			var ok bool
			if r.anchored {
				rel := strings.TrimPrefix(abs[len(fr.base):], "/")
				ok, _ = doublestar.Match(r.pat, rel)
			} else {
				ok = sandbox.MatchGlob(r.kind, r.lit, r.pat, name)
			}
			if ok {
				return !r.negate
			}
		}
	}
	return false
}

// maxIgnoreFile bounds the size of an ignore file that is read.
const maxIgnoreFile = 16 << 20

// loadIgnoreFrame reads the ignore files of the open directory d (at path
// dir) that its listing says exist, after the rules of exclude (the
// repository's .git/info/exclude). Ignore files are opened relative to d and
// never through a symlink.
func loadIgnoreFrame(d sandbox.DirFD, dir string, hasGitignore, hasIgnore bool, exclude []byte) (ignoreFrame, bool) {
	fr := ignoreFrame{base: dir}
	if exclude != nil {
		fr.rules = append(fr.rules, parseIgnore(exclude)...)
	}
	read := func(name string) {
		if data, err := d.ReadFile(name, maxIgnoreFile); err == nil {
			fr.rules = append(fr.rules, parseIgnore(data)...)
		}
	}
	if hasGitignore {
		read(".gitignore")
	}
	if hasIgnore {
		read(".ignore")
	}
	return fr, len(fr.rules) > 0
}

// ancestorFrames are the ignore rules that apply to a search starting at
// root from the directories above it, up to the repository root (the
// nearest ancestor with a .git entry); none when root is in no repository.
// The directories are opened from the repository root down, never through a
// symlink.
func ancestorFrames(root string) []ignoreFrame {
	var chain []string
	repo := ""
	for d := root; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			repo = d
			break
		}
		chain = append(chain, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if repo == "" {
		return nil
	}
	// chain holds root..repo; frames go outermost first, root excluded (the
	// walk loads root's own files), except that the repo's info/exclude is
	// loaded here even when repo == root.
	if repo != root {
		chain = append(chain, repo)
	} else {
		chain = []string{repo}
	}
	d, err := sandbox.OpenRootDir(repo)
	if err != nil {
		return nil
	}
	defer func() { d.Close() }()
	var exclude []byte
	if g, err := d.OpenDir(".git"); err == nil {
		if info, err := g.OpenDir("info"); err == nil {
			exclude, _ = info.ReadFile("exclude", maxIgnoreFile)
			info.Close()
		}
		g.Close()
	}
	if exclude == nil {
		exclude = []byte{}
	}
	var frames []ignoreFrame
	for i := len(chain) - 1; i >= 0; i-- {
		dir := chain[i]
		if i < len(chain)-1 {
			next, err := d.OpenDir(filepath.Base(dir))
			if err != nil {
				break
			}
			d.Close()
			d = next
		}
		excl := []byte(nil)
		if dir == repo {
			excl = exclude
		}
		if dir == root {
			if excl != nil {
				if fr, ok := loadIgnoreFrame(d, dir, false, false, excl); ok {
					frames = append(frames, fr)
				}
			}
			continue
		}
		if fr, ok := loadIgnoreFrame(d, dir, true, true, excl); ok {
			frames = append(frames, fr)
		}
	}
	return frames
}
