package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/agent"
)

// runDemoAgent is `aepforms demo-agent`: the demo agent against a relay.
func runDemoAgent(ctx context.Context, args []string, env Env, _ io.Reader, _, stderr io.Writer) error {
	d := agent.DefaultConfig()
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: aepforms demo-agent [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Connects to a relay's /socket as a control-capable emitter and asks form,")
		fmt.Fprintln(stderr, "permission, input and other requests, one session per scenario.")
		fmt.Fprintln(stderr)
		fmt.Fprintf(stderr, "scenarios: all, %s\n\n", strings.Join(agent.AllScenarios(), ", "))
		fs.PrintDefaults()
	}
	f := declareDemoAgent(fs, d)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return agentUsageErr(stderr, "unexpected argument %q", fs.Arg(0))
	}
	tokenSet := false
	fs.Visit(func(fl *flag.Flag) { tokenSet = tokenSet || fl.Name == "token" })
	if !tokenSet {
		*f.token = env("AEP_TOKEN")
	}
	c, err := agentCapture(*f.capture)
	if err != nil {
		return agentUsageErr(stderr, "--capture: %v", err)
	}

	cfg := d
	cfg.RelayURL = *f.relayURL
	cfg.Token = *f.token
	cfg.Scenarios = agentScenarioList(*f.scenarios)
	cfg.Every = *f.every
	if *f.maxPending < 1 {
		return agentUsageErr(stderr, "--max-pending %d: at least 1", *f.maxPending)
	}
	cfg.MaxExtra = *f.maxPending
	cfg.Agent = *f.name
	cfg.AckWindow = *f.ackWindow
	cfg.Capture = c
	cfg.RejectRate = *f.rejectRate
	cfg.NeverAck = *f.neverAck
	cfg.Pending = *f.pending
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.Token == "" {
		cfg.Logger.Warn("no token (--token or AEP_TOKEN): a relay that requires one refuses the agent, and one without a token refuses every command toward it")
	}

	err = agent.New(cfg).Run(ctx)
	if errors.Is(err, agent.ErrConfig) || errors.Is(err, agent.ErrUnknownScenario) {
		return agentUsageErr(stderr, "%v", err)
	}
	return err
}

// demoAgentFlags is what demo-agent's flags give.
type demoAgentFlags struct {
	relayURL, token, scenarios, name, capture *string
	every, ackWindow                          *time.Duration
	maxPending, pending                       *int
	rejectRate                                *float64
	neverAck                                  *bool
}

// declareDemoAgent declares demo-agent's flags with d's defaults.
func declareDemoAgent(fs *flag.FlagSet, d agent.Config) demoAgentFlags {
	return demoAgentFlags{
		relayURL:   fs.String("relay", d.RelayURL, "relay base URL; the agent connects to {relay}/socket"),
		token:      fs.String("token", "", "relay bearer token (env AEP_TOKEN)"),
		scenarios:  fs.String("scenario", "all", "scenario to run, or a comma-separated list, or all"),
		every:      fs.Duration("every", d.Every, "after the set, ask one more question this often; 0 = never"),
		maxPending: fs.Int("max-pending", d.MaxExtra, "most of the --every questions left pending; an older one is dismissed first (serve --demo sets it from --demo-max-pending)"),
		name:       fs.String("agent", d.Agent, "agent identity (hello identity.agent and every event's agent)"),
		ackWindow:  fs.Duration("ack-window", d.AckWindow, "ack window declared in hello (capabilities.control.ack_window_ms)"),
		capture:    fs.String("capture", d.Capture.String(), "capture level the events declare: metadata, redacted or full"),
		rejectRate: fs.Float64("reject-rate", 0, "fraction (0..1) of valid answers refused (reasons refused and busy alternate), to exercise a UI's refusal paths"),
		neverAck:   fs.Bool("never-ack", false, "record commands but never acknowledge or execute them (exercises a sender's ack-window timeout)"),
		pending:    fs.Int("pending", 0, "after the set, ask this many more deploy forms at once, in ten sessions: thousands of waiting questions to see the page at scale (serve keeps --max-pending, 5000 by default)"),
	}
}

// agentCapture accepts the levels an agent can ask at.
func agentCapture(s string) (aep.Capture, error) {
	c, err := aep.ParseCapture(s)
	if err != nil || s == "" {
		return 0, fmt.Errorf("unknown level %q (want metadata, redacted or full)", s)
	}
	if c == aep.CaptureNone {
		return 0, errors.New("none cannot carry a request's kind and prompt (want metadata, redacted or full)")
	}
	return c, nil
}

// agentScenarioList splits a comma-separated --scenario value, dropping empty items.
func agentScenarioList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// agentUsageErr prints a command-line problem and returns ErrUsage (exit 2).
func agentUsageErr(stderr io.Writer, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(stderr, "aepforms demo-agent: %s\n", msg)
	return fmt.Errorf("%w: %s", ErrUsage, strconv.Quote(msg))
}
