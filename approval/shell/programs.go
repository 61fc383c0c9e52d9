package shell

import (
	"strings"
)

// What the deny side knows about programs: how wrappers parse their
// options, which arguments are scripts (sh -c, eval, su -c, ssh, trap,
// ...), which programs run code the analysis cannot read (interpreters,
// awk, sed, make, editors), and which only treat their arguments as data.
// words (analyze.go) dispatches on the commands table.

// The commands the analyser knows.
type cmdKind uint8

const (
	cUnknown cmdKind = iota
	cData
	cWrap
	cCommand
	cEnv
	cShell
	cEval
	cFind
	cGit
	cSu
	cSsh
	cInterp
	cAwk
	cSed
	cMake
	cTrap
	cAlias
	cOptAsk
	cCrontab
	cAsk
	cRead
	cPrintf
	cDeclare
	cLet
	cTest
	cUnset
	cSg
	cScript
	cEditor
	cStdin
	nKinds
)

type handler struct {
	kind   cmdKind
	spec   *optSpec
	interp *interpSpec
	letter byte // cOptAsk: the option that asks
}

var commands = func() map[string]handler {
	m := map[string]handler{}
	for _, n := range strings.Fields(`echo cat ls pwd cd pushd popd dirs true false : head tail wc grep
		egrep fgrep cut uniq nl tr diff cmp comm stat file which type whoami id groups date basename
		dirname realpath readlink du df mkdir rmdir rm unlink touch chmod chown chgrp sleep wait exit
		return shift kill jq seq expr column fold fmt paste join base64 base32 md5sum sha1sum
		sha224sum sha256sum sha384sum sha512sum b2sum cksum sum xxd od hexdump strings printenv uname
		hostname nproc free uptime tput clear locale getconf yes rev tac numfmt tree ps pgrep pidof
		whereis set shopt ulimit umask history times caller disown bg fg jobs logout break continue
		cal factor truncate mktemp sync tty stty users who lsblk lscpu ] tee gofmt goimports tsc prettier
		black isort mypy flake8 shellcheck yamllint`) {
		m[n] = handler{kind: cData}
	}
	for n, s := range wrapperSpecs {
		m[n] = handler{kind: cWrap, spec: s}
	}
	m["command"] = handler{kind: cCommand, spec: &optSpec{flags: "pvV"}}
	m["env"] = handler{kind: cEnv}
	for _, n := range strings.Fields("sh bash zsh dash ksh mksh ash fish csh tcsh yash posh rbash lksh pdksh oksh") {
		m[n] = handler{kind: cShell}
	}
	m["eval"] = handler{kind: cEval}
	m["find"] = handler{kind: cFind}
	m["git"] = handler{kind: cGit}
	m["su"] = handler{kind: cSu}
	m["runuser"] = handler{kind: cSu}
	m["ssh"] = handler{kind: cSsh}
	for n, s := range interpSpecs {
		m[n] = handler{kind: cInterp, interp: s}
	}
	for _, n := range strings.Fields("awk gawk mawk nawk") {
		m[n] = handler{kind: cAwk}
	}
	m["sed"] = handler{kind: cSed}
	m["gsed"] = handler{kind: cSed}
	m["make"] = handler{kind: cMake}
	m["gmake"] = handler{kind: cMake}
	m["trap"] = handler{kind: cTrap}
	m["alias"] = handler{kind: cAlias}
	m["hash"] = handler{kind: cOptAsk, letter: 'p'}
	m["enable"] = handler{kind: cOptAsk, letter: 'f'}
	m["crontab"] = handler{kind: cCrontab}
	// Run commands from stdin, files or their history, or schedule them.
	for _, n := range strings.Fields("source . at batch parallel sem fc newgrp lldb pwsh powershell cmd irb jshell") {
		m[n] = handler{kind: cAsk}
	}
	for _, n := range strings.Fields("read mapfile readarray getopts") {
		m[n] = handler{kind: cRead}
	}
	m["printf"] = handler{kind: cPrintf}
	for _, n := range strings.Fields("declare typeset local export readonly") {
		m[n] = handler{kind: cDeclare}
	}
	m["let"] = handler{kind: cLet}
	m["test"] = handler{kind: cTest}
	m["["] = handler{kind: cTest}
	m["unset"] = handler{kind: cUnset}
	m["sg"] = handler{kind: cSg}
	m["script"] = handler{kind: cScript}
	for _, n := range strings.Fields("vi vim nvim view vimdiff gvim rvim evim ex emacs emacsclient gdb") {
		m[n] = handler{kind: cEditor}
	}
	// Programs that run shell commands given in their input.
	for _, n := range strings.Fields(`sqlite3 psql mysql mariadb ed red dc ftp sftp lftp gnuplot octave
		nc ncat netcat`) {
		m[n] = handler{kind: cStdin}
	}
	return m
}()

// kindRun holds, per kind, the function of the family that reads such a
// command (filled in init: the functions call words, which reads kindRun).
var kindRun [nKinds]func(a *analysis, x cmdCall) step

func init() {
	kindRun = [nKinds]func(*analysis, cmdCall) step{
		cUnknown: unknownArgs,
		cData:    func(*analysis, cmdCall) step { return done(kData) },
		cWrap:    (*analysis).runWrap,
		cCommand: (*analysis).runCommand,
		cEnv:     func(a *analysis, x cmdCall) step { return x.then(a.env(x.args, x.depth)) },
		cShell:   func(a *analysis, x cmdCall) step { return done(a.shell(x.args, x.c, x.depth, x.open, x.piped)) },
		cEval:    func(a *analysis, x cmdCall) step { a.eval(x.args, x.depth, x.open); return done(kUnknown) },
		cFind:    func(a *analysis, x cmdCall) step { a.find(x.args, x.c, x.depth, x.open); return done(kData) },
		cGit:     (*analysis).runGit,
		cSu:      (*analysis).runSu,
		cSsh:     func(a *analysis, x cmdCall) step { a.ssh(x.args, x.depth); return done(kUnknown) },
		cInterp:  func(a *analysis, x cmdCall) step { return done(a.interp(x.base, x.h.interp, x.args)) },
		cAwk:     func(a *analysis, x cmdCall) step { a.awk(x.args); return done(kData) },
		cSed:     func(a *analysis, x cmdCall) step { a.sed(x.args); return done(kData) },
		cMake:    (*analysis).runMake,
		cTrap:    func(a *analysis, x cmdCall) step { a.trap(x.args, x.depth); return done(kData) },
		cAlias:   (*analysis).runAlias,
		cOptAsk:  (*analysis).runOptAsk,
		cCrontab: (*analysis).runCrontab,
		cAsk:     func(a *analysis, _ cmdCall) step { a.unverify(); return done(kUnknown) },
		cRead:    func(a *analysis, x cmdCall) step { a.read(x.base, x.args, x.depth); return done(kData) },
		cPrintf:  (*analysis).runPrintf,
		cDeclare: func(a *analysis, x cmdCall) step { a.declare(x.args); return done(kData) },
		cLet:     (*analysis).runLet,
		cTest:    (*analysis).runTest,
		cUnset:   (*analysis).runUnset,
		cSg:      func(a *analysis, x cmdCall) step { a.sg(x.args, x.depth); return done(kUnknown) },
		cScript:  (*analysis).runScript,
		cEditor:  (*analysis).runEditor,
		cStdin:   (*analysis).runStdin,
	}
}

// approveSpecs is the approve side's knowledge, by program name (built in
// init: some specs check the command a wrapper runs with approvable).
var approveSpecs map[string]*approveSpec

func init() {
	approveSpecs = map[string]*approveSpec{
		"ls": lsSpec, "cat": catSpec, "head": headSpec, "tail": tailSpec, "wc": wcSpec, "pwd": pwdSpec,
		"echo": freeSpec, "printf": freeSpec, "true": freeSpec, "false": freeSpec, "whoami": freeSpec,
		"id": freeSpec, "nproc": freeSpec, "tty": freeSpec, "printenv": freeSpec, "groups": freeSpec,
		"grep": grepSpec, "egrep": grepSpec, "fgrep": grepSpec, "rg": rgSpec, "sort": sortSpec,
		"uniq": uniqSpec, "cut": cutSpec, "tr": trSpec, "diff": diffSpec, "stat": statSpec, "du": duSpec,
		"df": dfSpec, "date": dateSpec, "basename": basenameSpec, "dirname": dirnameSpec,
		"realpath": realpathSpec, "readlink": readlinkSpec, "which": whichSpec, "file": fileSpec,
		"uname": unameSpec, "tree": treeSpec, "jq": jqSpec,
		"find": findSpec, "sed": sedSpec, "gsed": sedSpec, "awk": awkSpec, "gawk": awkSpec,
		"mawk": awkSpec, "nawk": awkSpec, "git": gitSpec, "env": envSpec,
		"timeout": timeoutSpec, "nice": niceSpec, "nohup": nohupSpec, "stdbuf": stdbufSpec,
		"time": timeSpec, "command": commandSpec, "setsid": setsidSpec, "ionice": ioniceSpec,
		"chrt": chrtSpec, "taskset": tasksetSpec, "unbuffer": unbufferSpec,
	}
	for _, n := range runnerNames {
		approveSpecs[n] = runsSpec
	}
}
