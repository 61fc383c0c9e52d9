package tools

import "syscall"

// searchFD is a file opened for grep without the bookkeeping of *os.File
// (no poller registration, no finalizer): grep opens tens of thousands.
type searchFD int

func openSearch(p string) (searchFD, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			return searchFD(fd), err
		}
	}
}

func (f searchFD) read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func (f searchFD) close() { syscall.Close(int(f)) }
