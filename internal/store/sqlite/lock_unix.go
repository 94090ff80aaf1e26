//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// lockFile takes an exclusive flock on path (created 0600), without
// waiting. The lock is the open file's: it ends when the file is closed
// or the process ends, however it ends, so a crash leaves no stale lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("answer journal lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, explain(ErrLocked, err, "answer journal %s is in use by another aepforms (it holds %s)", strings.TrimSuffix(path, ".lock"), path)
		}
		return nil, fmt.Errorf("answer journal lock %s: %w", path, err)
	}
	return f, nil
}

// links is how many names (hard links) the file fi describes has.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) //nolint:unconvert // uint16 on darwin
	}
	return 1
}

func unlockFile(f *os.File) error {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}
