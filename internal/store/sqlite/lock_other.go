//go:build !unix

package sqlite

import (
	"fmt"
	"os"
)

// lockFile, where flock does not exist, only creates the lock file: the
// one-process rule is not enforced there. aepforms is built and tested
// on Linux and macOS.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("answer journal lock %s: %w", path, err)
	}
	return f, nil
}

func unlockFile(f *os.File) error { return f.Close() }

// links cannot be told here: a file counts as having one name.
func links(os.FileInfo) uint64 { return 1 }
