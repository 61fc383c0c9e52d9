package procsup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Invocation.
const (
	Arg0 = "flemma-supervise"
	Env  = "_FLEMMA_SUPERVISE"
)

// Control bytes (host → supervisor) and reply kinds (supervisor → host).
const (
	Terminate   = 'T'
	Kill        = 'K'
	Running     = 'R'
	StartFailed = 'E'
	Exited      = 'S'
	// LimitHit: the supervisor killed the tree for going beyond a limit
	// (HitProcesses, HitMemory); Exited follows.
	LimitHit = 'L'
)

// ctlFD is the supervisor's end of the control socket.
const ctlFD = 3

func init() {
	if len(os.Args) == 1 && os.Args[0] == Arg0 && os.Getenv(Env) == "1" {
		os.Exit(supervise())
	}
	if len(os.Args) >= 5 && os.Args[1] == SandboxExecArg {
		os.Exit(sandboxExec(os.Args[2], os.Args[3] == "1", os.Args[4:]))
	}
	if len(os.Args) >= 4 && os.Args[0] == LimitArg0 {
		os.Exit(limitExec(os.Args[1], os.Args[2], os.Args[3:]))
	}
}

// limitExec is the limit wrapper's main (see LimitArg0): it returns only
// on failure.
func limitExec(encoded, path string, argv []string) int {
	if err := applyRlimits(encoded); err != nil {
		return execFailed("cannot apply the command's limits", err)
	}
	return execFailed("cannot start the command", syscall.Exec(path, argv, os.Environ()))
}

func execFailed(what string, err error) int {
	os.Stderr.WriteString("flemma: " + what + ": " + err.Error() + "\n")
	return 126
}

// applyRlimits sets the encoded rlimits on this process.
func applyRlimits(encoded string) error {
	rs, err := decodeRlimits(encoded)
	if err != nil {
		return err
	}
	for _, r := range rs {
		soft, hard := clampRlimit(r)
		lim := syscall.Rlimit{Cur: soft, Max: hard}
		if err := syscall.Setrlimit(r.resource, &lim); err != nil {
			return fmt.Errorf("resource %d: %v", r.resource, err)
		}
	}
	return nil
}

// sandboxExec is the trampoline's main (see SandboxExecArg): it returns
// only on failure.
func sandboxExec(rlimits string, filter bool, argv []string) int {
	if err := applyRlimits(rlimits); err != nil {
		return execFailed("cannot apply the command's limits", err)
	}
	if !filter {
		return execFailed("cannot start bubblewrap", syscall.Exec(argv[0], argv, os.Environ()))
	}
	prog, err := SeccompProgram(runtime.GOARCH)
	if err != nil {
		return execFailed("cannot start the sandbox's seccomp filter", err)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // the read end stays open across exec
		return execFailed("cannot start the sandbox's seccomp filter", err)
	}
	if _, err := syscall.Write(p[1], prog); err != nil {
		return execFailed("cannot start the sandbox's seccomp filter", err)
	}
	syscall.Close(p[1])
	args := append([]string{argv[0], "--seccomp", strconv.Itoa(p[0])}, argv[1:]...)
	return execFailed("cannot start bubblewrap", syscall.Exec(argv[0], args, os.Environ()))
}

// MaxFiles is the most extra descriptors a command may be given.
const MaxFiles = 64

// EncodeCommand encodes a command for the control socket: the executable's
// path, argv and the environment, as three lists, each a little-endian
// uint32 count, then each string as a uint32 length and its bytes; then,
// as a uint32, the number of extra descriptors the supervisor received
// after the control socket (4, 5, …) and hands on to the command (as 3, 4,
// …); then the limits, five little-endian uint64 (Limits' fields in
// order).
func EncodeCommand(path string, argv, env []string, files int, lim Limits) []byte {
	var b bytes.Buffer
	for _, list := range [][]string{{path}, argv, env} {
		binary.Write(&b, binary.LittleEndian, uint32(len(list)))
		for _, a := range list {
			binary.Write(&b, binary.LittleEndian, uint32(len(a)))
			b.WriteString(a)
		}
	}
	binary.Write(&b, binary.LittleEndian, uint32(files))
	for _, v := range []int64{int64(lim.Processes), lim.Memory, lim.FileSize, int64(lim.OpenFiles), int64(lim.CPU)} {
		binary.Write(&b, binary.LittleEndian, uint64(max(v, 0)))
	}
	return b.Bytes()
}

// command is what EncodeCommand encodes.
type command struct {
	path      string
	argv, env []string
	files     int
	limits    Limits
}

// decodeCommand reads what EncodeCommand wrote.
func decodeCommand(r io.Reader) (command, error) {
	const maxTotal = 256 << 20
	total := 0
	var lists [3][]string
	for i := range lists {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return command{}, err
		}
		if n > 1<<20 {
			return command{}, errors.New("bad count")
		}
		lists[i] = make([]string, n)
		for j := range lists[i] {
			var l uint32
			if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
				return command{}, err
			}
			if total += int(l); total > maxTotal {
				return command{}, errors.New("command too long")
			}
			b := make([]byte, l)
			if _, err := io.ReadFull(r, b); err != nil {
				return command{}, err
			}
			lists[i][j] = string(b)
		}
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return command{}, err
	}
	var lim [5]uint64
	if err := binary.Read(r, binary.LittleEndian, &lim); err != nil {
		return command{}, err
	}
	for _, v := range lim {
		if v > 1<<62 {
			return command{}, errors.New("bad limit")
		}
	}
	if len(lists[0]) != 1 || len(lists[1]) == 0 || n > MaxFiles {
		return command{}, errors.New("bad command")
	}
	return command{path: lists[0][0], argv: lists[1], env: lists[2], files: int(n),
		limits: Limits{Processes: int(lim[0]), Memory: int64(lim[1]), FileSize: int64(lim[2]), OpenFiles: int(lim[3]), CPU: int(lim[4])}}, nil
}

// SupervisorEnv is the supervisor's own environment: the command's travels
// over the control socket, so that nothing in it (GODEBUG, LD_PRELOAD, …)
// changes the supervisor, and the supervisor starts as fast as Go can (no
// cgroup probing for GOMAXPROCS).
func SupervisorEnv() []string {
	return []string{Env + "=1", "GOMAXPROCS=1", "GODEBUG=updatemaxprocs=0", "GOTRACEBACK=none"}
}

// supervise is the supervisor's main. It runs in init, on the main thread:
// the shell's Pdeathsig is tied to the thread that forks it, and the main
// thread lasts as long as the process.
func supervise() int {
	syscall.CloseOnExec(ctlFD)
	ctl := os.NewFile(ctlFD, "ctl")
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Every process of the tree that loses its parent comes to us.
	prctl(prSetChildSubreaper, 1)

	c, err := decodeCommand(ctl)
	if err != nil {
		return 2
	}
	path, argv, env, nfiles := c.path, c.argv, c.env, c.files
	// The command's extra descriptors: ours 4, 5, …, its 3, 4, …. Ours are
	// closed on exec, so that the command gets each exactly once, at the
	// number its arguments name (bubblewrap's --bind-fd), and nothing more.
	fds := []uintptr{0, 1, 2}
	for i := range nfiles {
		fd := ctlFD + 1 + i
		syscall.CloseOnExec(fd)
		fds = append(fds, uintptr(fd))
	}
	reply := func(kind byte, v uint32) {
		var b [5]byte
		b[0] = kind
		binary.LittleEndian.PutUint32(b[1:], v)
		ctl.Write(b[:])
	}
	// With limits, the command starts as the limit wrapper, which sets
	// them and executes it (see LimitArg0).
	path, argv = WrapLimits(path, argv, c.limits)
	shell, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: fds,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	for _, fd := range fds[3:] {
		syscall.Close(int(fd))
	}
	if err != nil {
		errno, ok := err.(syscall.Errno)
		if !ok {
			errno = syscall.EINVAL
		}
		reply(StartFailed, uint32(errno))
		return 0
	}
	reply(Running, uint32(shell))

	// One goroutine reaps every child (the shell and the orphans we
	// inherit); when none is left, the tree is gone.
	var shellStatus syscall.WaitStatus
	shellDone := make(chan struct{})
	empty := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil { // ECHILD
				close(empty)
				return
			}
			if pid == shell {
				shellStatus = ws
				close(shellDone)
			}
		}
	}()
	cmds := make(chan byte)
	go func() {
		var b [1]byte
		for {
			n, err := ctl.Read(b[:])
			if n == 1 {
				cmds <- b[0]
				continue
			}
			if err != nil {
				close(cmds)
				return
			}
		}
	}()

	self := os.Getpid()
	// killTree kills the shell's process group first, in one call: the
	// kernel signals every member at once and none of them can fork
	// after (a fork bomb outruns a kill by listing /proc); then whatever
	// left the group (setsid), by the list.
	killTree := func() {
		syscall.Kill(-shell, syscall.SIGKILL)
		KillDescendants(self)
	}
	terminating := false
	// The limits of the tree as a whole: its processes and its resident
	// memory, looked at every watchInterval.
	var tick <-chan time.Time
	if c.limits.Processes > 0 || c.limits.Memory > 0 {
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			if hit := overLimits(self, c.limits); hit != 0 {
				tick = nil
				terminating = true
				reply(LimitHit, uint32(hit))
				killTree()
			}
		case <-shellDone:
			shellDone = nil
			// The command is over: nothing it started may outlive it
			// (as under bubblewrap, whose PID namespace ends with it).
			if !terminating && hasChildren() {
				killTree()
			}
		case <-empty:
			reply(Exited, uint32(shellStatus))
			return 0
		case c, ok := <-cmds:
			switch {
			case !ok: // the host is gone
				cmds = nil
				killTree()
			case c == Terminate:
				terminating = true
				SignalDescendants(self, syscall.SIGTERM)
			case c == Kill:
				killTree()
			}
		case <-sigs:
			killTree()
		}
	}
}

const prSetChildSubreaper = 36

func prctl(option, arg uintptr) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, option, arg, 0); e != 0 {
		return e
	}
	return nil
}

// hasChildren reports whether this process has a child, running or
// waitable (waitid with WNOWAIT reaps nothing).
func hasChildren() bool {
	const (
		pAll    = 0
		wNohang = 0x1
		wExited = 0x4
		wNowait = 0x1000000
	)
	var info [128]byte // siginfo_t
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])), wNohang|wExited|wNowait, 0, 0)
		if e != syscall.EINTR {
			return e != syscall.ECHILD
		}
	}
}

// KillDescendants SIGKILLs every process below root, again and again until
// none is left running (a process may fork while we look; one that got
// SIGKILL cannot), or a bound passes.
func KillDescendants(root int) {
	pause := time.Millisecond
	for deadline := time.Now().Add(10 * time.Second); ; {
		if SignalDescendants(root, syscall.SIGKILL) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// SignalDescendants sends sig to every running process below root and
// returns how many there were. (A process of the list that exits and is
// reaped before it is signalled frees its pid; should the pid be reused in
// those microseconds, the signal reaches the new process. With pid_max at
// its usual 4 million this needs the pids to wrap around in between.)
func SignalDescendants(root int, sig syscall.Signal) int {
	ds := Descendants(root)
	for _, p := range ds {
		syscall.Kill(p, sig)
	}
	return len(ds)
}

// Proc is what /proc/<pid>/stat says of a process.
type Proc struct {
	Pid, Ppid, Pgrp int
	State           byte
}

// Running reports whether the process has not exited (zombies have: they
// only wait to be reaped).
func (p Proc) Running() bool { return p.State != 'Z' && p.State != 'X' }

// Procs lists the processes of /proc.
func Procs() []Proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	out := make([]Proc, 0, len(names))
	buf := make([]byte, 512)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := Stat(pid, buf); ok {
			out = append(out, p)
		}
	}
	return out
}

// Stat reads /proc/<pid>/stat with buf as scratch space.
func Stat(pid int, buf []byte) (Proc, bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Proc{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return Proc{}, false
	}
	b := buf[:n]
	// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) == 0 {
		return Proc{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return Proc{}, false
	}
	return Proc{Pid: pid, Ppid: ppid, Pgrp: pgrp, State: f[0][0]}, true
}

// Descendants returns the running processes below root.
func Descendants(root int) []int {
	procs := Procs()
	children := make(map[int][]int, len(procs))
	running := make(map[int]bool, len(procs))
	for _, p := range procs {
		children[p.Ppid] = append(children[p.Ppid], p.Pid)
		running[p.Pid] = p.Running()
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if seen[c] {
				continue
			}
			seen[c] = true
			if running[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}

// watchInterval is how often the supervisor counts a tree with limits.
var watchInterval = 100 * time.Millisecond

// overLimits says which limit of the tree below root is exceeded
// (HitProcesses, HitMemory), or 0.
func overLimits(root int, l Limits) int {
	ds := Descendants(root)
	if l.Processes > 0 && len(ds) > l.Processes {
		return HitProcesses
	}
	if l.Memory > 0 {
		var total int64
		page := int64(os.Getpagesize())
		buf := make([]byte, 128)
		for _, pid := range ds {
			total += residentPages(pid, buf) * page
			if total > l.Memory {
				return HitMemory
			}
		}
	}
	return 0
}

// residentPages reads the second field of /proc/<pid>/statm.
func residentPages(pid int, buf []byte) int64 {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/statm", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	n, _ := syscall.Read(fd, buf)
	syscall.Close(fd)
	if n <= 0 {
		return 0
	}
	f := bytes.Fields(buf[:n])
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return v
}

// WrapLimits returns the command started so that lim are its rlimits
// before its first instruction: through util-linux's prlimit(1) when the
// system has it (a small C program: a start of this binary costs several
// times more, and it is paid by every command), else through this
// binary's limit wrapper (LimitArg0). Both set the limits on themselves
// and execute the command in their place. path and argv unchanged when lim
// sets nothing.
func WrapLimits(path string, argv []string, lim Limits) (string, []string) {
	if !lim.Any() {
		return path, argv
	}
	if pl := prlimitPath(); pl != "" {
		names := map[int]string{rlimitCPU: "cpu", rlimitFSIZE: "fsize", rlimitDATA: "data", rlimitNPROC: "nproc", rlimitNOFILE: "nofile"}
		args := []string{"prlimit"}
		for _, r := range rlimitsOf(lim, tasksFor(lim)) {
			soft, hard := clampRlimit(r)
			args = append(args, fmt.Sprintf("--%s=%d:%d", names[r.resource], soft, hard))
		}
		// prlimit runs its command with execvp and that name as argv[0]:
		// a bare name found on PATH (bash, bwrap) keeps its argv[0].
		cmd := path
		if filepath.Base(path) == argv[0] {
			cmd = argv[0]
		}
		return pl, append(append(args, "--", cmd), argv[1:]...)
	}
	return "/proc/self/exe", append([]string{LimitArg0, EncodeLimits(lim), path}, argv...)
}

// prlimitPath is util-linux's prlimit in a system folder, owned by root
// and writable by nobody else; "" when there is none.
var prlimitPath = sync.OnceValue(func() string {
	for _, p := range []string{"/usr/bin/prlimit", "/bin/prlimit", "/usr/sbin/prlimit", "/sbin/prlimit"} {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Uid == 0 && st.Mode&0o022 == 0 && st.Mode&0o111 != 0 {
			return p
		}
	}
	return ""
})

// clampRlimit is the soft and hard value to set for r: r's value (the hard
// limit of processor time a few seconds above, so that SIGXCPU comes
// first), never above the hard limit this process has.
func clampRlimit(r rlimit) (soft, hard uint64) {
	soft, hard = r.value, r.value
	if r.resource == rlimitCPU {
		hard += 5
	}
	var old syscall.Rlimit
	if syscall.Getrlimit(r.resource, &old) == nil && old.Max < hard {
		hard = old.Max
		soft = min(soft, hard)
	}
	return soft, hard
}
