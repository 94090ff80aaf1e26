package app

import (
	"context"
	"errors"
	"io"
)

// runDemoAgent is a placeholder until its subcommand lands (delete this file then).
func runDemoAgent(context.Context, []string, Env, io.Reader, io.Writer, io.Writer) error {
	return errors.New("not built yet")
}
