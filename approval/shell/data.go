package shell

// Programs that read and print: the deny side reads their arguments as
// data (cData in the commands table); the approve side knows which of their
// options are free of writes and execution. An option not listed here —
// sort -o, rg --pre, tree -o, date -s, anything new — makes an approve rule
// that did not spell it fall through.

var (
	// echo and the like print their words: nothing to check.
	freeSpec = &approveSpec{free: true}

	lsSpec = &approveSpec{opts: opts(`-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -k -l -L -m -n -N
		-o -p -q -Q -r -R -s -S -t -u -U -v -x -X -Z -1 -w= -I= -T=
		--all --almost-all --author --escape --block-size= --ignore-backups --color? --classify?
		--file-type --format= --full-time --group-directories-first --no-group --human-readable --si
		--dereference-command-line --dereference-command-line-symlink-to-dir --dereference --hide=
		--hyperlink? --indicator-style= --inode --ignore= --kibibytes --literal --numeric-uid-gid
		--hide-control-chars --show-control-chars --quote-name --quoting-style= --reverse --recursive
		--size --sort= --time= --time-style= --tabsize= --width= --context --zero --directory --dired
		--help --version`)}

	catSpec = &approveSpec{opts: opts(`-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank
		--show-ends --number --squeeze-blank --show-tabs --show-nonprinting --help --version`)}

	headSpec = &approveSpec{opts: opts(`-# -c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose
		--zero-terminated --help --version`)}

	tailSpec = &approveSpec{opts: opts(`-# -c= -n= -f -F -q -v -z -s= --bytes= --lines= --follow?
		--retry --pid= --max-unchanged-stats= --sleep-interval= --quiet --silent --verbose
		--zero-terminated --help --version`)}

	wcSpec = &approveSpec{opts: opts(`-c -m -l -L -w --bytes --chars --lines --max-line-length --words
		--files0-from= --total= --help --version`)}

	pwdSpec = &approveSpec{opts: opts(`-L -P --logical --physical --help --version`)}

	grepSpec = &approveSpec{opts: opts(`-# -E -F -G -P -e= -f= -i -y -v -w -x -c -L -l -m= -o -q -s -b
		-H -h -n -T -Z -z -A= -B= -C= -a -D= -d= -r -R -U -I -V
		--extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp= --file= --ignore-case
		--no-ignore-case --invert-match --word-regexp --line-regexp --count --color? --colour?
		--files-without-match --files-with-matches --max-count= --only-matching --quiet --silent
		--no-messages --byte-offset --with-filename --no-filename --label= --line-number --initial-tab
		--null --null-data --after-context= --before-context= --context= --text --binary-files=
		--devices= --directories= --exclude= --exclude-from= --exclude-dir= --include= --recursive
		--dereference-recursive --line-buffered --binary --help --version`)}

	// rg: --pre and --pre-glob run a program on every file, -z
	// (--search-zip) runs decompressors, --hostname-bin runs a program:
	// none of them is listed.
	rgSpec = &approveSpec{opts: opts(`-N -i -s -S -w -x -v -F -e= -f= -g= -t= -T= -n -l -c -o -r= -A= -B=
		-C= -m= -M= -u -L -j= -H -I -p -U -P -0 -a -q -b -E= -d= -h -V
		--ignore-case --case-sensitive --smart-case --word-regexp --line-regexp --invert-match
		--fixed-strings --regexp= --file= --glob= --iglob= --glob-case-insensitive --type= --type-not=
		--type-add= --type-clear= --type-list --line-number --no-line-number --files-with-matches
		--files-without-match --count --count-matches --only-matching --replace= --after-context=
		--before-context= --context= --max-count= --max-columns= --max-columns-preview --unrestricted
		--hidden --no-hidden --no-ignore --no-ignore-dot --no-ignore-exclude --no-ignore-files
		--no-ignore-global --no-ignore-parent --no-ignore-vcs --ignore-file= --ignore-file-case-insensitive
		--follow --no-follow --threads= --sort= --sortr= --sort-files --files --json --no-json
		--with-filename --no-filename --heading --no-heading --color= --colors= --pretty --multiline
		--multiline-dotall --pcre2 --no-pcre2 --engine= --null --null-data --text --binary --no-binary
		--quiet --stats --no-stats --vimgrep --column --no-column --byte-offset --trim --no-trim
		--encoding= --max-depth= --maxdepth= --max-filesize= --no-config --passthru --passthrough
		--debug --trace --one-file-system --crlf --no-crlf --line-buffered --block-buffered
		--no-messages --no-unicode --unicode --no-require-git --context-separator= --field-match-separator=
		--field-context-separator= --path-separator= --include-zero --no-include-zero --hyperlink-format=
		--auto-hybrid-regex --dfa-size-limit= --regex-size-limit= --mmap --no-mmap --help --version
		!--pre= !--pre-glob= !-z !--search-zip !--hostname-bin=`)}

	// sort: -o and --output write, --compress-program runs a program,
	// -T and --temporary-directory write elsewhere.
	sortSpec = &approveSpec{opts: opts(`-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z -k= -t= -S=
		--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort
		--ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort --random-sort --reverse
		--sort= --version-sort --check? --merge --key= --field-separator= --buffer-size= --stable
		--unique --zero-terminated --parallel= --debug --random-source= --files0-from= --help --version
		!-o= !--output= !--compress-program= !-T= !--temporary-directory=`)}

	uniqSpec = &approveSpec{opts: opts(`-c -d -D -f= -i -s= -u -w= -z --count --repeated --all-repeated?
		--skip-fields= --ignore-case --skip-chars= --unique --check-chars= --zero-terminated --group?
		--help --version`), operands: atMostOperands(1)}  // uniq IN OUT writes OUT

	cutSpec = &approveSpec{opts: opts(`-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter=
		--fields= --complement --only-delimited --output-delimiter= --zero-terminated --help --version`)}

	trSpec = &approveSpec{opts: opts(`-c -C -d -s -t --complement --delete --squeeze-repeats
		--truncate-set1 --help --version`)}

	diffSpec = &approveSpec{opts: opts(`-q -s -c -C= -u -U= -e -n -y -W= -p -F= -t -T -l -r -N -x= -X=
		-S= -i -E -Z -b -w -B -I= -a -d -D= --brief --report-identical-files --context? --unified?
		--ed --normal --rcs --side-by-side --width= --left-column --suppress-common-lines
		--show-c-function --show-function-line= --label= --expand-tabs --initial-tab --paginate
		--recursive --no-dereference --new-file --unidirectional-new-file --ignore-file-name-case
		--no-ignore-file-name-case --exclude= --exclude-from= --starting-file= --from-file= --to-file=
		--ignore-case --ignore-tab-expansion --ignore-trailing-space --ignore-space-change
		--ignore-all-space --ignore-blank-lines --ignore-matching-lines= --text --strip-trailing-cr
		--minimal --horizon-lines= --speed-large-files --color? --help --version`)}

	statSpec = &approveSpec{opts: opts(`-L -f -c= -t --dereference --file-system --format= --printf=
		--terse --cached= --help --version`)}

	duSpec = &approveSpec{opts: opts(`-0 -a -B= -b -c -D -d= -H -h -k -L -l -m -P -S -s -t= -x -X=
		--null --all --apparent-size --block-size= --bytes --total --dereference-args --max-depth=
		--human-readable --inodes --dereference --count-links --no-dereference --separate-dirs --si
		--summarize --threshold= --time? --time-style= --exclude-from= --exclude= --one-file-system
		--help --version`)}

	dfSpec = &approveSpec{opts: opts(`-a -B= -h -H -i -k -l -P -t= -T -x= --all --block-size= --human-readable
		--si --inodes --local --no-sync --output? --portability --sync --total --type= --print-type
		--exclude-type= --help --version`)}

	// date: -s and --set set the clock.
	dateSpec = &approveSpec{opts: opts(`-d= -f= -I? -R -u -r= --date= --file= --iso-8601? --rfc-email
		--rfc-3339= --reference= --utc --universal --debug --resolution --help --version`)}

	basenameSpec = &approveSpec{opts: opts(`-a -s= -z --multiple --suffix= --zero --help --version`)}
	dirnameSpec  = &approveSpec{opts: opts(`-z --zero --help --version`)}
	realpathSpec = &approveSpec{opts: opts(`-e -m -L -P -q -s -z --canonicalize-existing
		--canonicalize-missing --logical --physical --quiet --relative-to= --relative-base= --strip
		--no-symlinks --zero --help --version`)}
	readlinkSpec = &approveSpec{opts: opts(`-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing
		--canonicalize-missing --no-newline --quiet --silent --verbose --zero --help --version`)}
	whichSpec = &approveSpec{opts: opts(`-a -s --all --help --version`)}
	fileSpec  = &approveSpec{opts: opts(`-b -c -E -e= -F= -f= -h -i -k -L -l -N -n -p -P= -r -s -S -z -Z -0
		--brief --checking-printout --exclude= --exclude-quiet= --separator= --files-from=
		--no-dereference --mime --mime-type --mime-encoding --keep-going --list --dereference
		--no-buffer --preserve-date --raw --special-files --no-sandbox --uncompress
		--uncompress-noreport --print0 --extension --apple --help --version`)}
	unameSpec = &approveSpec{opts: opts(`-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename
		--kernel-release --kernel-version --machine --processor --hardware-platform
		--operating-system --help --version`)}
	// tree: -o writes its listing to a file, -R writes 00Tree.html in
	// every folder.
	treeSpec = &approveSpec{opts: opts(`-a -d -l -f -x -L= -P= -I= -q -N -Q -p -u -g -s -h -D -F -i
		-v -t -c -U -r -C -n -A -S -J -X -H= -T= --noreport --dirsfirst --filesfirst --prune
		--filelimit= --matchdirs --ignore-case --charset= --du --si --inodes --device --timefmt=
		--sort= --gitignore --info --fromfile --metafirst --help --version`)}
	jqSpec = &approveSpec{opts: opts(`-n -R -s -r -j -a -S -C -M -c -e -h -V --null-input --raw-input
		--slurp --raw-output --raw-output0 --join-output --ascii-output --sort-keys --color-output
		--monochrome-output --compact-output --tab --indent= --unbuffered --stream --stream-errors --seq
		--exit-status --arg= --argjson= --slurpfile= --rawfile= --args --jsonargs --help --version`),
		operands: jqOperands}
)

// atMostOperands: programs that write their last operand when given more
// (uniq IN OUT).
func atMostOperands(n int) func([]string, map[string]bool) bool {
	return func(ops []string, _ map[string]bool) bool { return len(ops) <= n }
}

// jqOperands: jq's --arg NAME VALUE takes two words, which the option
// parser cannot know; any operand is a filter or a file, both read only.
func jqOperands([]string, map[string]bool) bool { return true }

var dataExamples = []example{
	approves("ls *", "ls -la src", true),
	approves("ls *", "ls --color=auto -1", true),
	approves("cat *", "cat -n main.go", true),
	approves("head *", "head -20 main.go", true),
	approves("head *", "head -n 5 main.go", true),
	approves("tail *", "tail -f log", true),
	approves("wc *", "wc -l main.go", true),
	approves("echo *", "echo --output=x -n hi", true),
	approves("pwd*", "pwd -P", true),
	approves("grep *", "grep -rn TODO src", true),
	approves("grep *", "grep -rnf pats src", true),
	approves("grep *", "grep --devices=skip x", true),
	approves("rg *", "rg -n TODO src", true),
	approves("rg *", "rg --pre=sh x", false),
	approves("rg *", "rg --pre sh x", false),
	approves("rg *", "rg --pre-glob=* --pre=sh x", false),
	approves("rg *", "rg -z x f.gz", false),
	approves("rg *", "rg -uz x", false),
	approves("rg *", "rg --search-zip x", false),
	approves("rg *", "rg --hostname-bin=sh x", false),
	approves("rg *", "rg --pr=sh x", false),
	approves("rg *", "rg -- --pre=sh", true), // a pattern
	approves("rg *", "rg -e --pre=sh x", false),
	approves("rg --pre=pdftotext *", "rg --pre=pdftotext x", true), // spelled by the rule
	approves("sort *", "sort -u -k2 names", true),
	approves("sort *", "sort -o out names", false),
	approves("sort *", "sort -uo out names", false),
	approves("sort *", "sort --output=out names", false),
	approves("sort *", "sort --compress-program=sh names", false),
	approves("sort *", "sort -T /tmp names", false),
	approves("sort -o *", "sort -o sorted.txt names", true), // spelled
	approves("uniq *", "uniq -c names", true),
	approves("uniq *", "uniq names out", false),
	approves("date*", "date +%Y-%m-%d", true),
	approves("date*", "date -s 2020-01-01", false),
	approves("tree*", "tree -L 2", true),
	approves("tree*", "tree -o out", false),
	approves("tree*", "tree -R -H x", false),
	approves("rg *", "rg -N x", true),
	approves("git diff*", "git diff --stat HEAD~3", false), // '~' is not plain
	approves("cut *", "cut -d: -f1 /etc/passwd", true),
	approves("tr *", "tr -d x", true),
	approves("diff *", "diff -u a b", true),
	approves("stat *", "stat -c %s f", true),
	approves("du *", "du -sh .", true),
	approves("df *", "df -h", true),
	approves("basename *", "basename -s .go main.go", true),
	approves("dirname *", "dirname a/b", true),
	approves("realpath *", "realpath -m x", true),
	approves("readlink *", "readlink -f x", true),
	approves("which *", "which -a go", true),
	approves("file *", "file -b x", true),
	approves("file *", "file -C -m magic", false), // -C compiles a magic file
	approves("uname *", "uname -a", true),
	approves("jq *", "jq -r .name f.json", true),
	approves("jq *", "jq -r --arg x 1 .name f.json", true),
	approves("printf *", "printf %s x", true),
	approves("true*", "true", true),
	approves("false*", "false", true),
	approves("whoami*", "whoami", true),
	approves("id *", "id -u", true),
	approves("nproc*", "nproc", true),
	approves("tty*", "tty", true),
	approves("printenv*", "printenv HOME", true),
	approves("groups*", "groups", true),
	approves("egrep *", "egrep -n x f", true),
	approves("fgrep *", "fgrep -n x f", true),
	denies("cat *", "cat x", Runs),
	denies("rm *", "cat rm", No),
}
