package shell

import (
	"strings"
)

// git parses git's global options (-C, -c, --git-dir, ...) so that a rule
// sees "git <subcommand> <args>", and expands aliases given with -c.
func (a *analysis) git(lname string, args []word, depth int) kind {
	certain := true
	var aliases map[string]string
	for _, n := range []string{"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
		"GIT_CONFIG_SYSTEM", "GIT_CONFIG"} {
		if a.assigned[n] {
			a.unverify() // configuration (aliases, pagers) the command sets
		}
	}
	for _, n := range []string{"GIT_DIR", "GIT_EXEC_PATH", "HOME", "XDG_CONFIG_HOME"} {
		if a.assigned[n] {
			certain = false
		}
	}
	config := func(v word) {
		a.suspect(v)
		if !v.lit {
			certain = false
			return
		}
		key, val, _ := strings.Cut(v.val, "=")
		key = asciiLower(key)
		switch {
		case strings.HasPrefix(key, "alias."):
			if aliases == nil {
				aliases = map[string]string{}
			}
			aliases[key[len("alias."):]] = val
		case key == "include.path" || strings.HasPrefix(key, "includeif."):
			a.unverify()
		}
	}
	i := 0
	for i < len(args) {
		w := args[i]
		if !w.lit {
			certain = false
			if strings.HasPrefix(w.val, "-") {
				i++
				continue
			}
			break
		}
		s := w.val
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		name, val, hasEq := strings.Cut(s, "=")
		switch {
		case gitArgOpts[name] && hasEq && strings.HasPrefix(name, "--"):
			if name == "--config-env" {
				certain = false
			}
			a.suspect(word{val: val, lit: true, eq: -1})
		case gitArgOpts[name] && !hasEq:
			if i < len(args) {
				if name == "-c" {
					config(args[i])
				} else {
					if name == "--config-env" {
						certain = false
					}
					a.suspect(args[i])
				}
			}
			i++
		case gitFlags[name] || strings.HasPrefix(s, "--exec-path=") || strings.HasPrefix(s, "--list-cmds="):
		default:
			certain = false
			a.suspect(w)
		}
	}
	if i > len(args) {
		i = len(args)
	}
	sub := args[i:]
	if len(sub) == 0 {
		a.addProbe(lname, "git", "", args)
		return kData
	}
	for n := 0; n < 8 && sub[0].lit; n++ {
		v, ok := aliases[asciiLower(sub[0].val)]
		if !ok {
			break
		}
		if strings.HasPrefix(v, "!") {
			a.script(v[1:], depth+1) // a shell alias
			a.suspectAll(sub)
			return kUnknown
		}
		var exp []word
		for _, f := range strings.Fields(v) {
			exp = append(exp, word{val: f, lit: true, eq: -1})
		}
		if len(exp) == 0 {
			break
		}
		sub = append(exp, sub[1:]...)
	}
	a.addWords("git", append([]word{{}}, sub...), false)
	s := ""
	if sub[0].lit {
		s = asciiLower(sub[0].val)
	}
	if certain && gitData[s] {
		a.addProbe(lname, "git", s, sub[1:])
		return kData
	}
	a.addProbe(lname, "git", "", args)
	a.suspectAll(args)
	return kUnknown
}

var gitArgOpts = setOf("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
	"--config-env", "--attr-source", "--shallow-file")

var gitFlags = setOf("-p", "--paginate", "-P", "--no-pager", "--bare", "--no-replace-objects",
	"--no-lazy-fetch", "--no-optional-locks", "--no-advice", "--literal-pathspecs",
	"--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
	"-h", "--help", "-v", "--version", "--html-path", "--man-path", "--info-path", "--exec-path")

// gitData are the git subcommands whose arguments never name a command to
// run (hooks and configured programs aside, as for any git command).
var gitData = setOf("add", "annotate", "apply", "blame", "branch", "cat-file", "check-attr",
	"check-ignore", "check-mailmap", "checkout", "cherry", "cherry-pick", "clean", "commit",
	"commit-tree", "count-objects", "describe", "diff", "diff-files", "diff-index", "diff-tree",
	"for-each-ref", "format-patch", "fsck", "gc", "help", "init", "log", "ls-files", "ls-tree",
	"merge", "merge-base", "mktag", "mktree", "mv", "name-rev", "notes", "prune", "range-diff",
	"read-tree", "reflog", "repack", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert",
	"rm", "shortlog", "show", "show-branch", "show-ref", "sparse-checkout", "stash", "status",
	"switch", "symbolic-ref", "tag", "update-index", "update-ref", "verify-commit", "verify-pack",
	"verify-tag", "version", "whatchanged", "worktree", "write-tree")

func (a *analysis) runGit(x *cmdCall) step {
	if x.open && len(x.args) == 0 {
		a.unverify() // the subcommand and options come from the input
		return step{k: kUnknown}
	}
	return step{k: a.git(x.lname, x.args, x.depth)}
}
