package procsup

import (
	"encoding/binary"
	"testing"
)

// runBPF interprets the classic BPF program (the subset SeccompProgram
// emits, and nothing else: any other opcode fails the test) over a
// seccomp_data of arch, nr and arg0, and returns the seccomp action.
func runBPF(t *testing.T, prog []byte, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	binary.LittleEndian.PutUint64(data[offArg0:], arg0)
	if len(prog)%8 != 0 || len(prog) == 0 || len(prog)/8 > 4096 {
		t.Fatalf("program of %d bytes", len(prog))
	}
	n := len(prog) / 8
	var acc uint32
	for pc := 0; pc < n; {
		in := prog[pc*8:]
		code := binary.LittleEndian.Uint16(in)
		jt, jf := in[2], in[3]
		k := binary.LittleEndian.Uint32(in[4:])
		switch code {
		case bpfLdWAbs:
			if k%4 != 0 || k+4 > 64 {
				t.Fatalf("pc %d: load at %d", pc, k)
			}
			acc = binary.LittleEndian.Uint32(data[k:])
			pc++
		case bpfJeqK:
			if acc == k {
				pc += 1 + int(jt)
			} else {
				pc += 1 + int(jf)
			}
		case bpfRetK:
			return k
		default:
			t.Fatalf("pc %d: opcode %#x", pc, code)
		}
	}
	t.Fatal("program ran off its end")
	return 0
}

// TestSeccompProgram checks the filter's decisions on both architectures
// (the aarch64 one is interpreted here, on whatever machine runs the test):
// socket(AF_UNIX) refused in the native and the compatibility ABI (also
// through socketcall), other families and socketpair allowed, io_uring
// refused, an unknown architecture refused whole.
func TestSeccompProgram(t *testing.T) {
	eacces, enosys := uint32(retErrno|errnoSocket), uint32(retErrno|errnoNoSys)
	type row struct {
		name     string
		arch, nr uint32
		arg0     uint64
		want     uint32
	}
	rows := map[string][]row{
		"amd64": {
			{"socket(AF_UNIX)", auditArchX86_64, 41, afUnix, eacces},
			{"socket(AF_UNIX) with high bits in the argument", auditArchX86_64, 41, 1<<32 | afUnix, eacces},
			{"socket(AF_INET)", auditArchX86_64, 41, 2, retAllow},
			{"socket(AF_INET6)", auditArchX86_64, 41, 10, retAllow},
			{"socket(AF_NETLINK)", auditArchX86_64, 41, 16, retAllow},
			{"socketpair(AF_UNIX)", auditArchX86_64, 53, afUnix, retAllow},
			{"connect", auditArchX86_64, 42, 3, retAllow},
			{"x32 socket(AF_UNIX)", auditArchX86_64, x32Bit | 41, afUnix, eacces},
			{"x32 io_uring_setup", auditArchX86_64, x32Bit | 425, 0, enosys},
			{"io_uring_setup", auditArchX86_64, 425, 0, enosys},
			{"io_uring_enter", auditArchX86_64, 426, 0, enosys},
			{"io_uring_register", auditArchX86_64, 427, 0, enosys},
			{"read", auditArchX86_64, 0, afUnix, retAllow},
			{"i386 socket(AF_UNIX)", auditArchI386, 359, afUnix, eacces},
			{"i386 socket(AF_INET)", auditArchI386, 359, 2, retAllow},
			{"i386 socketcall(SYS_SOCKET)", auditArchI386, 102, sysSocketCall, eacces},
			{"i386 socketcall(SYS_SOCKETPAIR)", auditArchI386, 102, 8, retAllow},
			{"i386 io_uring_setup", auditArchI386, 425, 0, enosys},
			{"i386 write", auditArchI386, 4, 1, retAllow},
			{"aarch64 on an x86_64 filter", auditArchAarch64, 198, afUnix, enosys},
		},
		"arm64": {
			{"socket(AF_UNIX)", auditArchAarch64, 198, afUnix, eacces},
			{"socket(AF_INET)", auditArchAarch64, 198, 2, retAllow},
			{"socketpair(AF_UNIX)", auditArchAarch64, 199, afUnix, retAllow},
			{"io_uring_setup", auditArchAarch64, 425, 0, enosys},
			{"read", auditArchAarch64, 63, 0, retAllow},
			{"arm socket(AF_UNIX)", auditArchARM, 281, afUnix, eacces},
			{"arm socketcall(SYS_SOCKET)", auditArchARM, 102, sysSocketCall, eacces},
			{"arm socketpair", auditArchARM, 288, afUnix, retAllow},
			{"x86_64 on an aarch64 filter", auditArchX86_64, 41, afUnix, enosys},
		},
	}
	for arch, rs := range rows {
		if !SeccompArchSupported(arch) {
			t.Fatalf("%s not supported", arch)
		}
		prog, err := SeccompProgram(arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if got := runBPF(t, prog, r.arch, r.nr, r.arg0); got != r.want {
				t.Errorf("%s: %s = %#x, want %#x", arch, r.name, got, r.want)
			}
		}
	}
	for _, arch := range []string{"386", "riscv64", "ppc64le", "s390x", "loong64"} {
		if SeccompArchSupported(arch) {
			t.Errorf("%s claimed", arch)
		}
		if _, err := SeccompProgram(arch); err == nil {
			t.Errorf("%s: a program for an architecture nobody checked", arch)
		}
	}
}
