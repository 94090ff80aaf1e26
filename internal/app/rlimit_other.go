//go:build !unix

package app

// raiseOpenFiles has no open-files limit to raise on this system.
func raiseOpenFiles() (soft, hard uint64, ok bool) { return 0, 0, false }
