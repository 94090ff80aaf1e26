package app

import (
	"context"
	"errors"
	"io"
)

// runServe is a placeholder until its subcommand lands (delete this file then).
func runServe(context.Context, []string, Env, io.Reader, io.Writer, io.Writer) error {
	return errors.New("not built yet")
}
