//go:build unix

package app

import "syscall"

// raiseOpenFiles raises the soft open-files limit (RLIMIT_NOFILE) to the
// hard one, so the connection caps, not the kernel, decide who waits; it
// returns both limits as they are afterwards (ok false: unknown). The Go
// runtime does the same at start on most systems; this makes it sure and
// tells what came of it.
func raiseOpenFiles() (soft, hard uint64, ok bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, false
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		} else {
			_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	return uint64(lim.Cur), uint64(lim.Max), true
}
