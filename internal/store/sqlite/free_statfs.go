//go:build linux || darwin

package sqlite

import "syscall"

// freeBytes is how many bytes an unprivileged process may still write on
// the file system holding dir; ok is false where it cannot be told.
func freeBytes(dir string) (free uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true //nolint:gosec,unconvert // block counts and sizes are never negative; types differ by OS
}
