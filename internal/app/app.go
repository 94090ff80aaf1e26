// Package app is the only place that reads flags and environment and wires
// the parts of aepforms together. Run is importable so tests start any
// subcommand in-process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// ErrUsage marks a command-line error; the process exits 2.
var ErrUsage = errors.New("app: usage")

// exitError carries a specific exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode maps Run's error to a process exit status: 0 for nil, 2 for a
// usage error, the carried status for an exit error, 1 otherwise.
func ExitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, ErrUsage), errors.Is(err, flag.ErrHelp):
		return 2
	}
	return 1
}

// Env reads one environment variable; os.Getenv fits.
type Env func(string) string

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, env Env, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the operator UI (with the embedded relay unless --relay names one)", runServe},
		{"relay", "run the embedded AEP 0.1 relay alone", runRelay},
		{"demo-agent", "run the demo agent that asks real form questions", runDemoAgent},
		{"operator", "add a named operator: operator add NAME (prints their secret once)", runOperator},
		{"version", "print the version", runVersion},
	}
}

// Run runs the subcommand named by args[0]. It returns when the command is
// done or ctx ends (SIGINT/SIGTERM in main).
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return ErrUsage
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], Env(getenv), stdin, stdout, stderr)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			if err != nil && !errors.Is(err, ErrUsage) {
				fmt.Fprintf(stderr, "aepforms %s: %v\n", c.name, err)
			}
			return err
		}
	}
	fmt.Fprintf(stderr, "aepforms: unknown command %q\n\n", args[0])
	usage(stderr)
	return ErrUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: aepforms <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'aepforms <command> -h' for a command's flags.")
}

// Version returns the module version recorded in the binary, or "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func runVersion(_ context.Context, _ []string, _ Env, _ io.Reader, stdout, _ io.Writer) error {
	fmt.Fprintf(stdout, "aepforms %s (AEP 0.1)\n", Version())
	return nil
}
