//go:build crashpoints

package crashpoint

import "os"

// Hit kills the process with SIGKILL when the environment variable Env
// names point: a real crash, with no deferred function, flush or close
// run after it. The environment is read at each hit (no init side
// effect), which only this test build pays for.
func Hit(point string) {
	if os.Getenv(Env) != point {
		return
	}
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Kill() // SIGKILL on unix
	}
	if err != nil {
		panic("crashpoint " + point + ": " + err.Error())
	}
	select {} // the signal is on its way: run nothing more
}

// Hold blocks for good when the environment variable Env names point:
// the process waits there for a later point of the same window to kill
// it (SentNo303: the 303 is held while the command is written).
func Hold(point string) {
	if os.Getenv(Env) == point {
		select {}
	}
}
