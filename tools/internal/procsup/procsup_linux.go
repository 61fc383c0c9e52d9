package procsup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
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
)

// ctlFD is the supervisor's end of the control socket.
const ctlFD = 3

func init() {
	if len(os.Args) == 1 && os.Args[0] == Arg0 && os.Getenv(Env) == "1" {
		os.Exit(supervise())
	}
	if len(os.Args) >= 3 && os.Args[1] == SeccompExecArg {
		os.Exit(seccompExec(os.Args[2:]))
	}
}

// SeccompExecArg selects the seccomp trampoline: `<host binary>
// --flemma-seccomp-exec BWRAP ARGS…` runs BWRAP --seccomp FD ARGS…, FD a
// pipe holding SeccompProgram. It is how a command wrapped for someone
// else to start (Sandbox.WrapCommand: Lua tools' ctx.sandbox.wrap_command)
// gets the filter, as no descriptor travels with an argv.
const SeccompExecArg = "--flemma-seccomp-exec"

// seccompExec is the trampoline's main: it returns only on failure.
func seccompExec(argv []string) int {
	fail := func(err error) int {
		os.Stderr.WriteString("flemma: cannot start the sandbox's seccomp filter: " + err.Error() + "\n")
		return 126
	}
	prog, err := SeccompProgram(runtime.GOARCH)
	if err != nil {
		return fail(err)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // the read end stays open across exec
		return fail(err)
	}
	if _, err := syscall.Write(p[1], prog); err != nil {
		return fail(err)
	}
	syscall.Close(p[1])
	args := append([]string{argv[0], "--seccomp", strconv.Itoa(p[0])}, argv[1:]...)
	return fail(syscall.Exec(argv[0], args, os.Environ()))
}

// MaxFiles is the most extra descriptors a command may be given.
const MaxFiles = 64

// EncodeCommand encodes a command for the control socket: the executable's
// path, argv and the environment, as three lists, each a little-endian
// uint32 count, then each string as a uint32 length and its bytes; then,
// as a uint32, the number of extra descriptors the supervisor received
// after the control socket (4, 5, …) and hands on to the command (as 3, 4,
// …).
func EncodeCommand(path string, argv, env []string, files int) []byte {
	var b bytes.Buffer
	for _, list := range [][]string{{path}, argv, env} {
		binary.Write(&b, binary.LittleEndian, uint32(len(list)))
		for _, a := range list {
			binary.Write(&b, binary.LittleEndian, uint32(len(a)))
			b.WriteString(a)
		}
	}
	binary.Write(&b, binary.LittleEndian, uint32(files))
	return b.Bytes()
}

// decodeCommand reads what EncodeCommand wrote.
func decodeCommand(r io.Reader) (path string, argv, env []string, files int, err error) {
	const maxTotal = 256 << 20
	total := 0
	var lists [3][]string
	for i := range lists {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return "", nil, nil, 0, err
		}
		if n > 1<<20 {
			return "", nil, nil, 0, errors.New("bad count")
		}
		lists[i] = make([]string, n)
		for j := range lists[i] {
			var l uint32
			if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
				return "", nil, nil, 0, err
			}
			if total += int(l); total > maxTotal {
				return "", nil, nil, 0, errors.New("command too long")
			}
			b := make([]byte, l)
			if _, err := io.ReadFull(r, b); err != nil {
				return "", nil, nil, 0, err
			}
			lists[i][j] = string(b)
		}
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return "", nil, nil, 0, err
	}
	if len(lists[0]) != 1 || len(lists[1]) == 0 || n > MaxFiles {
		return "", nil, nil, 0, errors.New("bad command")
	}
	return lists[0][0], lists[1], lists[2], int(n), nil
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

	path, argv, env, nfiles, err := decodeCommand(ctl)
	if err != nil {
		return 2
	}
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
	terminating := false
	for {
		select {
		case <-shellDone:
			shellDone = nil
			// The command is over: nothing it started may outlive it
			// (as under bubblewrap, whose PID namespace ends with it).
			if !terminating && hasChildren() {
				KillDescendants(self)
			}
		case <-empty:
			reply(Exited, uint32(shellStatus))
			return 0
		case c, ok := <-cmds:
			switch {
			case !ok: // the host is gone
				cmds = nil
				KillDescendants(self)
			case c == Terminate:
				terminating = true
				SignalDescendants(self, syscall.SIGTERM)
			case c == Kill:
				KillDescendants(self)
			}
		case <-sigs:
			KillDescendants(self)
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
