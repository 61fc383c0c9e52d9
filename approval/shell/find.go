package shell

// find analyses the commands of -exec, -execdir, -ok and -okdir; "{}" in
// them stands for file names.
func (a *analysis) find(args []word, c *scmd, depth int, open bool) {
	for i := 0; i < len(args); i++ {
		if !args[i].lit {
			continue
		}
		switch args[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].lit && (args[j].val == ";" || args[j].val == "+")) {
				j++
			}
			if j == len(args) && open {
				a.unverify() // the rest comes from xargs
			}
			if depth+1 > MaxNesting {
				a.unverify()
				return
			}
			a.words(markDynamic(args[i+1:j], "{}"), c, depth+1, false, false)
			i = j
		}
	}
}

// The approve side of find: its expression, word by word. -exec, -execdir,
// -ok and -okdir run commands, -delete deletes, -fprint, -fprint0,
// -fprintf and -fls write files: none of them is listed, so a rule that
// does not spell them does not match.
var (
	findFlags = setOf("-H", "-L", "-P", "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false",
		"-empty", "-readable", "-writable", "-executable", "-nouser", "-nogroup", "-depth", "-d",
		"-daystart", "-follow", "-mount", "-xdev", "-noleaf", "-ignore_readdir_race",
		"-noignore_readdir_race", "-not", "-a", "-and", "-o", "-or", "-help", "--help", "-version", "--version")
	findArgs = setOf("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
		"-type", "-xtype", "-size", "-user", "-group", "-uid", "-gid", "-perm", "-links", "-inum", "-mtime",
		"-atime", "-ctime", "-mmin", "-amin", "-cmin", "-newer", "-anewer", "-cnewer", "-samefile",
		"-maxdepth", "-mindepth", "-lname", "-ilname", "-fstype", "-used", "-context", "-printf",
		"-regextype", "-D", "-O", "-files0-from")
)

var findSpec = &approveSpec{custom: findApprovable}

// findApprovable checks find's words: paths, then an expression whose
// primaries must all be known to be free of writes and execution.
func findApprovable(args []aword) bool {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !isOption(w.s) || w.spelled {
			continue // a path, or what the rule spells
		}
		switch {
		case findFlags[w.s]:
		case findArgs[w.s], isNewerXY(w.s):
			i++ // its argument
		default:
			return false
		}
	}
	return true
}

// isNewerXY: -newermt, -newerat, ... compare times.
func isNewerXY(s string) bool {
	return len(s) == len("-newerXY") && s[:len("-newer")] == "-newer"
}

var findExamples = []example{
	denies("rm *", "find . -exec rm {} +", Runs),
	denies("rm *", "find . -name x -delete", No),
	approves("find *", "find . -name *.go -type f", false), // '*' is not plain
	approves("find *", "find . -name x.go -type f -print", true),
	approves("find *", "find . -maxdepth 2 -newermt 2024-01-01", true),
	approves("find *", "find . -exec rm x", false),
	approves("find *", "find . -execdir rm x", false),
	approves("find *", "find . -ok rm x", false),
	approves("find *", "find . -delete", false),
	approves("find *", "find . -fprint out", false),
	approves("find *", "find . -fprint0 out", false),
	approves("find *", "find . -fprintf out x", false),
	approves("find *", "find . -fls out", false),
	approves("find *", "find . -name -delete", true), // a name, not a primary
	approves("find . -delete*", "find . -delete", true),
}
