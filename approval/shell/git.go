package shell

import (
	"strings"
)

// git parses git's global options (-C, -c, --git-dir, ...) so that a rule
// sees "git <subcommand> <args>", and expands aliases given with -c.
func (a *analysis) git(lname string, args []word, depth int) kind {
	g := &gitRead{a: a, certain: true}
	g.environment()
	i := g.globals(args)
	sub := args[i:]
	if len(sub) == 0 {
		a.addProbe(lname, "git", "", args)
		return kData
	}
	sub, shell := g.expandAliases(sub, depth)
	if shell {
		return kUnknown
	}
	a.addWords("git", append([]word{{}}, sub...), false)
	s := ""
	if sub[0].lit {
		s = asciiLower(sub[0].val)
	}
	if g.certain && gitData[s] {
		a.addProbe(lname, "git", s, sub[1:])
		return kData
	}
	a.addProbe(lname, "git", "", args)
	a.suspectAll(args)
	return kUnknown
}

// gitRead is what the deny side learns from git's global options.
type gitRead struct {
	a       *analysis
	certain bool              // the subcommand is the one written (no unknown option, no config elsewhere)
	aliases map[string]string // -c alias.NAME=VALUE
}

// environment: configuration the command itself sets in the environment.
func (g *gitRead) environment() {
	for _, n := range []string{"GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL",
		"GIT_CONFIG_SYSTEM", "GIT_CONFIG"} {
		if g.a.assigned[n] {
			g.a.unverify() // configuration (aliases, pagers) the command sets
		}
	}
	for _, n := range []string{"GIT_DIR", "GIT_EXEC_PATH", "HOME", "XDG_CONFIG_HOME"} {
		if g.a.assigned[n] {
			g.certain = false
		}
	}
}

// config reads the value of -c NAME=VALUE.
func (g *gitRead) config(v word) {
	g.a.suspect(v)
	if !v.lit {
		g.certain = false
		return
	}
	key, val, _ := strings.Cut(v.val, "=")
	key = asciiLower(key)
	switch {
	case strings.HasPrefix(key, "alias."):
		if g.aliases == nil {
			g.aliases = map[string]string{}
		}
		g.aliases[key[len("alias."):]] = val
	case key == "include.path" || strings.HasPrefix(key, "includeif."):
		g.a.unverify()
	}
}

// globals reads the global options and returns the index of the
// subcommand.
func (g *gitRead) globals(args []word) int {
	i := 0
	for i < len(args) {
		w := args[i]
		if !w.lit {
			g.certain = false
			if strings.HasPrefix(w.val, "-") {
				i++
				continue
			}
			break
		}
		if len(w.val) < 2 || w.val[0] != '-' {
			break
		}
		i++
		i += g.global(w, args, i)
	}
	return min(i, len(args))
}

// global reads one global option; it returns how many words its value
// took after it.
func (g *gitRead) global(w word, args []word, i int) int {
	s := w.val
	name, val, hasEq := strings.Cut(s, "=")
	switch {
	case gitArgOpts[name] && hasEq && strings.HasPrefix(name, "--"):
		g.certain = g.certain && name != "--config-env"
		g.a.suspect(word{val: val, lit: true, eq: -1})
		return 0
	case gitArgOpts[name] && !hasEq:
		if i < len(args) {
			if name == "-c" {
				g.config(args[i])
			} else {
				g.certain = g.certain && name != "--config-env"
				g.a.suspect(args[i])
			}
		}
		return 1
	case gitFlags[name] || strings.HasPrefix(s, "--exec-path=") || strings.HasPrefix(s, "--list-cmds="):
		return 0
	}
	g.certain = false
	g.a.suspect(w)
	return 0
}

// expandAliases replaces a subcommand that is an alias given with -c by its
// value; shell reports a "!" alias, which runs a shell script.
func (g *gitRead) expandAliases(sub []word, depth int) ([]word, bool) {
	for n := 0; n < 8 && sub[0].lit; n++ {
		v, ok := g.aliases[asciiLower(sub[0].val)]
		if !ok {
			break
		}
		if strings.HasPrefix(v, "!") {
			g.a.script(v[1:], depth+1) // a shell alias
			g.a.suspectAll(sub)
			return sub, true
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
	return sub, false
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

func (a *analysis) runGit(x cmdCall) step {
	if x.open && len(x.args) == 0 {
		a.unverify() // the subcommand and options come from the input
		return step{k: kUnknown}
	}
	return step{k: a.git(x.lname, x.args, x.depth)}
}

// The approve side of git. Global options that change which repository,
// configuration or programs git uses (-c, -C, --git-dir, --work-tree,
// --exec-path, --config-env, --namespace, -p with its pager, --help with
// its browser) are not listed; nor are --output (writes a file),
// --ext-diff and --textconv (run configured programs), --show-signature
// (runs gpg) or the -O pager of git grep. Subcommands whose purpose is
// running a command (bisect run, submodule foreach, difftool, ...) match
// only when the rule names them.

const gitDiffOpts = `-p -u --patch -s --no-patch -U= --unified= --raw --patch-with-raw --patch-with-stat
	--indent-heuristic --no-indent-heuristic --minimal --patience --histogram --anchored=
	--diff-algorithm= --stat? --stat-width= --stat-name-width= --stat-graph-width= --stat-count=
	--compact-summary --numstat --shortstat --dirstat? --cumulative --dirstat-by-file? --summary -z
	--name-only --name-status --submodule? --color? --no-color --color-moved? --no-color-moved
	--color-moved-ws= --no-color-moved-ws --word-diff? --word-diff-regex= --color-words? --no-renames
	--rename-empty --no-rename-empty --check --ws-error-highlight= --full-index --binary --abbrev?
	--no-abbrev -B? --break-rewrites? -M? --find-renames? -C? --find-copies? --find-copies-harder -D
	--irreversible-delete -l= --diff-filter= -S= -G= --find-object= --pickaxe-all --pickaxe-regex -O=
	--skip-to= --rotate-to= -R --relative? --no-relative -a --text --ignore-cr-at-eol
	--ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space --ignore-blank-lines -I=
	--ignore-matching-lines= --inter-hunk-context= -W --function-context --exit-code --quiet
	--no-ext-diff --no-textconv --ignore-submodules? --src-prefix= --dst-prefix= --no-prefix
	--default-prefix --line-prefix= --ita-invisible-in-index --ita-visible-in-index --output-indicator-new=
	--output-indicator-old= --output-indicator-context= --cached --staged --merge-base --no-index
	-0 -1 -2 -3 --base --ours --theirs --cc -c -m --combined-all-paths --diff-merges= --no-diff-merges
	--remerge-diff --dd -t !--output= !--ext-diff !--textconv`

const gitLogOpts = `-# -n= --max-count= --skip= --since= --after= --until= --before= --since-as-filter=
	--author= --committer= --grep-reflog= --grep= --all-match --invert-grep -i --regexp-ignore-case
	--basic-regexp -E --extended-regexp -F --fixed-strings -P --perl-regexp --remove-empty --merges
	--no-merges --min-parents= --max-parents= --no-min-parents --no-max-parents --first-parent
	--exclude-first-parent-only --not --all --branches? --tags? --remotes? --glob= --exclude=
	--exclude-hidden= --reflog --alternate-refs --single-worktree --ignore-missing --bisect --stdin
	--cherry-mark --cherry-pick --left-only --right-only --cherry --walk-reflogs -g --merge --boundary
	--simplify-by-decoration --show-pulls --full-history --dense --sparse --simplify-merges
	--ancestry-path? --date-order --author-date-order --topo-order --reverse --no-walk? --do-walk
	--pretty? --format= --abbrev-commit --no-abbrev-commit --oneline --encoding= --expand-tabs?
	--no-expand-tabs --notes? --no-notes --show-notes? --standard-notes --no-standard-notes
	--relative-date --date= --parents --children --left-right --graph --show-linear-break?
	--follow --no-follow --decorate? --no-decorate --decorate-refs= --decorate-refs-exclude=
	--clear-decorations --source --use-mailmap --mailmap --no-mailmap --no-use-mailmap --full-diff
	--log-size -L= --count --objects --objects-edge --in-commit-order --no-object-names --timestamp
	--header --no-commit-header --commit-header --abbrev= --show-origin !--show-signature`

const gitStatusOpts = `-s --short -b --branch --show-stash --porcelain? --long -v --verbose -u?
	--untracked-files? --ignore-submodules? --ignored? -z --column? --no-column --ahead-behind
	--no-ahead-behind --renames --no-renames --find-renames?`

// gitRefFilters are the options with which branch and tag list.
const gitRefFilters = `-l --list --contains? --no-contains? --merged? --no-merged? --points-at= --sort=
	--format= --color? --no-color --column? --no-column -i --ignore-case --omit-empty -v --verbose
	-a --all -r --remotes --abbrev= --no-abbrev -q --quiet --show-current -n? --create-reflog`

// gitListing: branch and tag create, delete or move refs when given names,
// unless they list (-l, --list or a filter).
func gitListing(ops []string, seen map[string]bool) bool {
	if len(ops) == 0 {
		return true
	}
	for _, o := range []string{"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at"} {
		if seen[o] {
			return true
		}
	}
	return false
}

// gitConfigRead: git config only reads with --get, --get-all,
// --get-regexp, --list, -l or the get and list subcommands.
func gitConfigRead(ops []string, seen map[string]bool) bool {
	if len(ops) > 0 && (ops[0] == "get" || ops[0] == "list") {
		return true
	}
	for _, o := range []string{"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"} {
		if seen[o] {
			return true
		}
	}
	return false
}

var gitSpec = &approveSpec{
	opts: opts(`--no-pager -P --no-replace-objects --no-optional-locks --literal-pathspecs
		--no-literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs --no-lazy-fetch
		--no-advice --bare --version -v --html-path --man-path --info-path
		!-c= !-C= !--git-dir= !--work-tree= !--namespace= !--super-prefix= !--config-env= !--exec-path?
		!-p !--paginate !--attr-source= !--shallow-file= !-h !--help !--list-cmds=`),
	subs: map[string]*approveSpec{
		"status":      {opts: opts(gitStatusOpts)},
		"log":         {opts: opts(gitLogOpts, gitDiffOpts)},
		"whatchanged": {opts: opts(gitLogOpts, gitDiffOpts)},
		"show":        {opts: opts(gitLogOpts, gitDiffOpts)},
		"rev-list":    {opts: opts(gitLogOpts)},
		"shortlog": {opts: opts(gitLogOpts, `-n --numbered -s --summary -e --email --group= -c
			--committer -w?`)},
		"diff":       {opts: opts(gitDiffOpts)},
		"diff-files": {opts: opts(gitDiffOpts)},
		"diff-index": {opts: opts(gitDiffOpts)},
		"diff-tree":  {opts: opts(gitDiffOpts, `-r --root --stdin --no-commit-id -v --always`)},
		"range-diff": {opts: opts(gitDiffOpts, `--creation-factor= --no-dual-color --left-only --right-only`)},
		"branch":     {opts: opts(gitRefFilters), operands: gitListing},
		"tag":        {opts: opts(gitRefFilters), operands: gitListing},
		"stash": {subs: map[string]*approveSpec{
			"list": {opts: opts(gitLogOpts, gitDiffOpts)},
			"show": {opts: opts(gitDiffOpts, `--include-untracked --only-untracked`)},
		}, opts: opts("")},
		"remote": {opts: opts(`-v --verbose`), operands: func(ops []string, _ map[string]bool) bool {
			return len(ops) == 0 || ops[0] == "get-url"
		}},
		"config": {opts: opts(`--get --get-all --get-regexp --get-urlmatch --list -l --show-origin
			--show-scope --name-only --global --system --local --worktree --includes --no-includes
			--type= --bool --int --bool-or-int --path --expiry-date --default= -z --null --fixed-value`),
			operands: gitConfigRead},
		"rev-parse": {opts: opts(`--show-toplevel --show-prefix --show-cdup --show-superproject-working-tree
			--abbrev-ref? --short? --verify -q --quiet --git-dir --absolute-git-dir --git-common-dir
			--is-inside-git-dir --is-inside-work-tree --is-bare-repository --is-shallow-repository
			--symbolic --symbolic-full-name --all --branches? --tags? --remotes? --glob= --exclude=
			--revs-only --no-revs --flags --no-flags --default= --prefix= --sq --sq-quote --not
			--local-env-vars --show-object-format? --show-ref-format --path-format= --git-path=
			--resolve-git-dir= --since= --after= --until= --before= --disambiguate= --end-of-options`)},
		"ls-files": {opts: opts(`-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others
			--ignored --stage --unmerged --killed --directory --no-empty-directory --eol --exclude= -x=
			--exclude-from= -X= --exclude-per-directory= --exclude-standard --error-unmatch --with-tree=
			--full-name --recurse-submodules --abbrev? --debug --deduplicate --format= --sparse`)},
		"ls-tree": {opts: opts(`-d -r -t -l --long -z --name-only --name-status --object-only --full-name
			--full-tree --abbrev? --format=`)},
		"cat-file": {opts: opts(`-t -s -e -p --batch? --batch-check? --batch-all-objects --buffer
			--follow-symlinks --allow-unknown-type --unordered -z -Z --use-mailmap --no-use-mailmap`)},
		"show-ref": {opts: opts(`--head --verify --exists --hash? --abbrev? --tags --heads --branches -d
			--dereference -s -q --quiet --exclude-existing?`)},
		"for-each-ref": {opts: opts(`--count= --sort= --format= --color? --shell --perl --python --tcl
			--points-at= --merged? --no-merged? --contains? --no-contains? --ignore-case --omit-empty
			--exclude= --include-root-refs`)},
		"merge-base": {opts: opts(`-a --all --octopus --independent --is-ancestor --fork-point`)},
		"describe": {opts: opts(`--all --tags --contains --abbrev= --candidates= --exact-match --debug
			--long --match= --exclude= --always --first-parent --dirty? --broken?`)},
		"blame": {opts: opts(`-b --root --show-stats -L= -l -t -S= -p --porcelain --line-porcelain
			--incremental --encoding= --contents= --date= --progress --no-progress -M? -C? -w
			--ignore-rev= --ignore-revs-file= --color-lines --color-by-age -e --show-email -s -n
			--show-number -f --show-name --abbrev= -c --score-debug`)},
		"grep": {opts: opts(`-# --cached --untracked --no-index --no-exclude-standard --exclude-standard
			--recurse-submodules -a --text --no-textconv -i --ignore-case -I --max-depth= -r --recursive
			--no-recursive -w --word-regexp -v --invert-match -h -H --full-name -E --extended-regexp -G
			--basic-regexp -P --perl-regexp -F --fixed-strings -n --line-number --column -l
			--files-with-matches --name-only -L --files-without-match -z --null -o --only-matching -c
			--count --color? --no-color --break --heading -p --show-function -A= -B= -C= -W
			--function-context --threads= -f= -e= --and --or --not --all-match -q --quiet
			--after-context= --before-context= --context=`)},
		"reflog": {opts: opts(gitLogOpts, gitDiffOpts), operands: func(ops []string, _ map[string]bool) bool {
			return len(ops) == 0 || (ops[0] != "expire" && ops[0] != "delete" && ops[0] != "drop")
		}},
		"count-objects": {opts: opts(`-v --verbose -H --human-readable`)},
		"version":       {opts: opts(`--build-options`)},
		"check-ignore":  {opts: opts(`-q --quiet -v --verbose --stdin -z -n --non-matching --no-index`)},
		"check-attr":    {opts: opts(`-a --all --cached --stdin -z --source=`)},
		"name-rev":      {opts: opts(`--tags --refs= --exclude= --all --annotate-stdin --name-only --no-undefined --always`)},
		"add": {opts: opts(`-n --dry-run -v --verbose -f --force -u --update -A --all --no-all
			--ignore-removal --no-ignore-removal -N --intent-to-add --refresh --ignore-errors
			--ignore-missing --renormalize --chmod= --sparse --pathspec-from-file= --pathspec-file-nul`)},
		"commit": {opts: opts(`-a --all -m= --message= -F= --file= -C= --reuse-message= -s --signoff
			--no-signoff -n --no-verify --allow-empty --allow-empty-message --amend --no-edit -q --quiet
			-v --verbose --dry-run --short --branch --porcelain --long -z --null --author= --date=
			--fixup= --squash= --reset-author -i --include -o --only --no-post-rewrite
			--untracked-files? -u? --cleanup= --trailer= --no-gpg-sign --status --no-status`)},
		// Subcommands that run commands or programs by design.
		"bisect": {runs: true}, "submodule": {runs: true}, "difftool": {runs: true},
		"mergetool": {runs: true}, "filter-branch": {runs: true}, "instaweb": {runs: true},
		"web--browse": {runs: true}, "daemon": {runs: true}, "send-email": {runs: true},
		"upload-pack": {runs: true}, "receive-pack": {runs: true}, "shell": {runs: true},
		"credential": {runs: true}, "help": {runs: true}, "rebase": {runs: true}, "archive": {runs: true},
		"p4": {runs: true}, "svn": {runs: true}, "cvsimport": {runs: true}, "am": {runs: true},
	},
}

var gitExamples = []example{
	denies("git push*", "git -C . --no-pager push", Runs),
	denies("git push*", "git -c alias.p=push p", Runs),
	denies("git push*", "git status", No),
	approves("git status*", "git status --short", true),
	approves("git status*", "git status -sb", true),
	approves("git status*", "git status --output=/etc/passwd", false),
	approves("git log*", "git log --oneline -10", true),
	approves("git log*", "git log --oneline --graph --decorate --all -n 20 --stat", true),
	approves("git log*", "git log --format=%H -n 3 main", true),
	approves("git log*", "git log --output=/tmp/x", false),
	approves("git log*", "git log --output /tmp/x", false),
	approves("git log*", "git log --outp=/tmp/x", false), // git accepts the abbreviation
	approves("git log*", "git log -p --ext-diff", false),
	approves("git log*", "git log -p --textconv", false),
	approves("git log*", "git log --show-signature", false),
	approves("git log*", "git log -n --output=x", false), // the value read as an option
	approves("git log*", "git log -- --output=x", true),  // a path
	approves("git log*", "git log main --output=x", false),
	approves("git diff*", "git diff --stat HEAD", true),
	approves("git diff*", "git diff --cached -M50%", true),
	approves("git diff*", "git diff --output=x", false),
	approves("git diff*", "git diff --ext-diff", false),
	approves("git show*", "git show HEAD:main.go", true),
	approves("git show*", "git show --output=x HEAD", false),
	approves("git *", "git -c core.pager=sh log", false),
	approves("git *", "git -C /tmp/other status", false),
	approves("git *", "git --git-dir=/tmp/x status", false),
	approves("git *", "git --work-tree=/tmp status", false),
	approves("git *", "git --exec-path=/tmp log", false),
	approves("git *", "git --config-env=core.pager=X log", false),
	approves("git *", "git -p log", false),
	approves("git *", "git bisect run make", false),
	approves("git *", "git submodule foreach make", false),
	approves("git *", "git difftool", false),
	approves("git *", "git --no-pager log -3", true),
	approves("git -C sub status*", "git -C sub status -s", true), // spelled
	approves("git branch*", "git branch -a", true),
	approves("git branch*", "git branch --list feat/*", false), // '*' is not plain
	approves("git branch*", "git branch --list feat", true),
	approves("git branch*", "git branch newbranch", false),
	approves("git branch*", "git branch -D main", false),
	approves("git branch*", "git branch --edit-description", false),
	approves("git tag*", "git tag", true),
	approves("git tag*", "git tag v9", false),
	approves("git stash*", "git stash list", true),
	approves("git stash*", "git stash show -p", true),
	approves("git stash*", "git stash show --output=x", false),
	approves("git remote*", "git remote -v", true),
	approves("git remote*", "git remote add x y", false),
	approves("git config*", "git config --get user.name", true),
	approves("git config*", "git config user.name x", false),
	approves("git config*", "git config --global core.pager sh", false),
	approves("git grep*", "git grep -n TODO", true),
	approves("git grep*", "git grep -Osh TODO", false),
	approves("git grep*", "git grep --open-files-in-pager=sh TODO", false),
	approves("git commit*", "git commit -m fix", true),
	approves("git commit*", "git commit -e -m fix", false),
	approves("git commit*", "git commit --gpg-sign -m x", false),
	approves("git add*", "git add -A", true),
	approves("git add*", "git add -p", false),
}
