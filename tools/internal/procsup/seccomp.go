package procsup

import (
	"encoding/binary"
	"errors"
)

// The seccomp filter of sandboxed commands (issue 24, class 2): no
// AF_UNIX socket can be created, so no unix socket of the user — a path
// one, wherever it lies and whatever it is called, or an abstract one — can
// be reached, while socketpair (pipes between a program's own processes)
// keeps working. io_uring, which creates sockets without the socket system
// call, is refused too (ENOSYS: its users fall back to epoll).
//
// The filter is classic BPF over struct seccomp_data, built here rather
// than by a library (nothing outside the standard library is imported, and
// the program is short enough to read whole). Each supported architecture
// gets its native system call numbers and those of its 32-bit
// compatibility mode (i386 on x86_64, arm on aarch64), where socketcall(2)
// multiplexes socket creation too; any other architecture value is refused
// outright (ENOSYS). SeccompProgram reports false for an architecture it
// does not know: the sandbox then claims nothing about sockets.

// SandboxExecArg selects the sandbox trampoline: `<host binary>
// --flemma-sandbox-exec RLIMITS FILTER BWRAP ARGS…` sets the encoded
// rlimits (EncodeLimits) on itself and, with FILTER "1", runs BWRAP
// --seccomp FD ARGS…, FD a pipe holding SeccompProgram (else BWRAP
// ARGS…). It is how a command wrapped for someone else to start
// (Sandbox.WrapCommand: Lua tools' ctx.sandbox.wrap_command) gets the
// limits and the filter, as no descriptor travels with an argv.
const SandboxExecArg = "--flemma-sandbox-exec"

// Seccomp errnos: socket(AF_UNIX) fails with EACCES ("permission denied"),
// the refused system calls with ENOSYS.
const (
	errnoSocket = 13 // EACCES
	errnoNoSys  = 38 // ENOSYS
)

// seccomp_data offsets: nr (int), arch (u32), instruction_pointer (u64),
// args[6] (u64 each). A 32-bit argument is the low word: little-endian
// machines keep it first.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

// Audit architectures (linux/audit.h).
const (
	auditArchX86_64  = 0xC000003E
	auditArchI386    = 0x40000003
	auditArchAarch64 = 0xC00000B7
	auditArchARM     = 0x40000028
)

const (
	afUnix        = 1
	sysSocketCall = 1 // socketcall(SYS_SOCKET, …)
	x32Bit        = 0x40000000
)

// Classic BPF opcodes (linux/filter.h).
const (
	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K
)

// Seccomp return values.
const (
	retAllow = 0x7fff0000
	retErrno = 0x00050000
)

// abi is the system calls one architecture numbers: socket, socketcall
// (-1 when it has none) and the io_uring calls.
type abi struct {
	arch       uint32
	socket     []uint32 // socket(2) numbers (x86_64 has the x32 one too)
	socketcall int64
	refuse     []uint32 // refused with ENOSYS
}

var ioUring = []uint32{425, 426, 427} // io_uring_setup, _enter, _register: the same on every ABI here

var abis = map[string][]abi{
	"amd64": {
		{arch: auditArchX86_64, socket: []uint32{41, x32Bit | 41}, socketcall: -1,
			refuse: append(append([]uint32(nil), ioUring...), x32Bit|425, x32Bit|426, x32Bit|427)},
		{arch: auditArchI386, socket: []uint32{359}, socketcall: 102, refuse: ioUring},
	},
	"arm64": {
		{arch: auditArchAarch64, socket: []uint32{198}, socketcall: -1, refuse: ioUring},
		{arch: auditArchARM, socket: []uint32{281}, socketcall: 102, refuse: ioUring},
	},
}

// SeccompArchSupported reports whether SeccompProgram knows goarch.
func SeccompArchSupported(goarch string) bool { return abis[goarch] != nil }

// insn is one struct sock_filter.
type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// SeccompProgram returns the filter for goarch as bwrap's --seccomp reads
// it: the raw array of struct sock_filter (8 bytes each, native byte
// order, which is little-endian on both supported architectures).
func SeccompProgram(goarch string) ([]byte, error) {
	list := abis[goarch]
	if list == nil {
		return nil, errors.New("no seccomp filter for " + goarch)
	}
	prog := seccompInsns(list)
	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.LittleEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.LittleEndian.AppendUint32(out, in.k)
	}
	return out, nil
}

// seccompInsns assembles the program. Layout, per ABI:
//
//	ld arch; jeq ARCH ? body : next ABI
//	body: ld nr; jeq SOCKET… → checkDomain; jeq SOCKETCALL → checkCall;
//	      jeq REFUSED… → enosys; ret allow
//	checkDomain: ld arg0; jeq AF_UNIX → eacces; ret allow
//	checkCall:   ld arg0; jeq SYS_SOCKET → eacces; ret allow
//
// after the last ABI: ret ENOSYS (an architecture nobody listed), then the
// shared eacces and enosys returns. Jumps are forward only, as BPF wants;
// every offset fits a byte (the program is a few dozen instructions).
func seccompInsns(list []abi) []insn {
	type fix struct {
		at     int
		target string // "eacces", "enosys", "domain<i>", "call<i>", "next<i>"
		jt     bool
	}
	var prog []insn
	var fixes []fix
	labels := map[string]int{}
	emit := func(in insn) int { prog = append(prog, in); return len(prog) - 1 }
	jeq := func(k uint32, target string) {
		fixes = append(fixes, fix{at: emit(insn{code: bpfJeqK, k: k}), target: target, jt: true})
	}
	name := func(s string, i int) string { return s + string(rune('0'+i)) }
	for i, a := range list {
		emit(insn{code: bpfLdWAbs, k: offArch})
		at := emit(insn{code: bpfJeqK, k: a.arch})
		fixes = append(fixes, fix{at: at, target: name("next", i)})
		emit(insn{code: bpfLdWAbs, k: offNr})
		for _, nr := range a.socket {
			jeq(nr, name("domain", i))
		}
		if a.socketcall >= 0 {
			jeq(uint32(a.socketcall), name("call", i))
		}
		for _, nr := range a.refuse {
			jeq(nr, "enosys")
		}
		emit(insn{code: bpfRetK, k: retAllow})
		labels[name("domain", i)] = len(prog)
		emit(insn{code: bpfLdWAbs, k: offArg0})
		jeq(afUnix, "eacces")
		emit(insn{code: bpfRetK, k: retAllow})
		if a.socketcall >= 0 {
			labels[name("call", i)] = len(prog)
			emit(insn{code: bpfLdWAbs, k: offArg0})
			jeq(sysSocketCall, "eacces")
			emit(insn{code: bpfRetK, k: retAllow})
		}
		labels[name("next", i)] = len(prog)
	}
	labels["enosys"] = len(prog) // an unknown architecture, and the refused calls
	emit(insn{code: bpfRetK, k: retErrno | errnoNoSys})
	labels["eacces"] = len(prog)
	emit(insn{code: bpfRetK, k: retErrno | errnoSocket})
	for _, f := range fixes {
		off := labels[f.target] - f.at - 1
		if off < 0 || off > 255 {
			panic("seccomp: jump out of range")
		}
		if f.jt {
			prog[f.at].jt = uint8(off)
		} else {
			// jeq ARCH: true falls through to the body, false skips to
			// the next ABI.
			prog[f.at].jf = uint8(off)
		}
	}
	return prog
}
