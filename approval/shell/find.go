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
