// Command aepforms answers the structured questions AI agents ask over the
// Agent Event Protocol. All behaviour lives in internal/app.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/aepforms/aepforms/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(app.ExitCode(err))
}
