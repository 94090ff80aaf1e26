package app

// Placeholders while the subcommands are being built in parallel; each is
// replaced by its own file (relay.go, agent.go, serve.go).

import (
	"context"
	"errors"
	"io"
)

func runServe(context.Context, []string, Env, io.Reader, io.Writer, io.Writer) error {
	return errors.New("serve is not built yet")
}

func runRelay(context.Context, []string, Env, io.Reader, io.Writer, io.Writer) error {
	return errors.New("relay is not built yet")
}

func runDemoAgent(context.Context, []string, Env, io.Reader, io.Writer, io.Writer) error {
	return errors.New("demo-agent is not built yet")
}
