// Command benchserve is cmd/aepforms with a CPU profile a benchmark can
// take of a stretch of its run: SIGUSR1 starts profiling into the file
// named by AEPFORMS_BENCH_SERVE_CPUPROFILE, SIGUSR2 stops and writes it.
// BenchmarkPushFleet builds it in place of cmd/aepforms when that
// variable is set, and profiles serve over its samples only (not the
// browsers' connects).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/aepforms/aepforms/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if path := os.Getenv("AEPFORMS_BENCH_SERVE_CPUPROFILE"); path != "" {
		go profileOnSignal(path)
	}
	err := app.Run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	os.Exit(app.ExitCode(err))
}

// profileOnSignal profiles between each SIGUSR1 and the next SIGUSR2
// into path (each stretch overwrites the last).
func profileOnSignal(path string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	var f *os.File
	for s := range sig {
		switch {
		case s == syscall.SIGUSR1 && f == nil:
			var err error
			if f, err = os.Create(path); err != nil {
				fmt.Fprintln(os.Stderr, "benchserve:", err)
				continue
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "benchserve:", err)
				f.Close()
				f = nil
			}
		case s == syscall.SIGUSR2 && f != nil:
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "benchserve:", err)
			}
			f = nil
		}
	}
}
