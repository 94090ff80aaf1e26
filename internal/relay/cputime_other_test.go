//go:build !unix

package relay_test

import "time"

// cpuTime is unknown here; the CPU-based metric then reads 0.
func cpuTime() time.Duration { return 0 }
