package app

import (
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/aepforms/aepforms/internal/respond"
)

// upstreamConfig is the relay the UI reads and answers through: the
// embedded one or another, its token, and the feed's and the respond
// path's timings.
type upstreamConfig struct {
	relayURL   string // external relay; "" starts the embedded one
	relayHost  string
	relayPort  int
	relayToken string
	tokenFile  string
	// tokenPath is the file the relay token was read from or minted
	// into ("" when it was given by flag or env): the empty page names it.
	tokenPath   string
	agentName   string
	feedSilence time.Duration
	ackWindow   time.Duration
	rosterIntvl time.Duration
	// respondBackoff caps the respond path's reconnect wait
	// (--respond-backoff-max): an answer queued while the relay is away
	// waits on it.
	respondBackoff time.Duration
}

func (c *upstreamConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.StringVar(&c.relayURL, "relay", e.env("AEP_RELAY"), "external AEP relay base URL, e.g. http://127.0.0.1:8787 (env AEP_RELAY); empty starts the embedded relay")
	fs.StringVar(&c.relayHost, "relay-host", e.str("AEP_HOST", "127.0.0.1"), "embedded relay bind address (env AEP_HOST)")
	fs.IntVar(&c.relayPort, "relay-port", e.integer("AEP_PORT", 8787), "embedded relay port (env AEP_PORT); 0 picks a free port")
	fs.StringVar(&c.relayToken, "token", "", "relay bearer token (env AEP_TOKEN); with the embedded relay and none set, one is minted once, written to --token-file and reused (the log names the file, never the token); with an external relay and none, the UI is watch-only and says so on every card")
	fs.StringVar(&c.tokenFile, "token-file", e.str("AEPFORMS_TOKEN_FILE", defaultTokenFile(e.env)), "where a minted relay token is kept, mode 0600; a file readable by others is refused (env AEPFORMS_TOKEN_FILE)")
	fs.StringVar(&c.agentName, "agent", e.str("AEPFORMS_AGENT", "aepforms"), "identity this UI sends commands as: {agent}/{operator name} when the operator gave a name (env AEPFORMS_AGENT)")
	fs.DurationVar(&c.feedSilence, "feed-silence", e.dur("AEPFORMS_FEED_SILENCE", 60*time.Second), "reconnect the relay feed after this long without a byte: twice the spec's 30s ping bound (env AEPFORMS_FEED_SILENCE)")
	fs.DurationVar(&c.ackWindow, "ack-window", e.dur("AEPFORMS_ACK_WINDOW", 0), "wait this long for an agent's ack; 0 uses the agent's declared window, else 10s (env AEPFORMS_ACK_WINDOW)")
	fs.DurationVar(&c.rosterIntvl, "roster-interval", e.dur("AEPFORMS_ROSTER_INTERVAL", 30*time.Second), "re-read the relay's roster (which agents are connected and take answers) this often, besides the moments it changes; a card's \"connected\" is at most this stale (env AEPFORMS_ROSTER_INTERVAL)")
	fs.DurationVar(&c.respondBackoff, "respond-backoff-max", e.dur("AEPFORMS_RESPOND_BACKOFF_MAX", respond.DefaultBackoffMax), "the longest wait between the respond path's attempts to reconnect to the relay; answers queued while it is away wait on it (env AEPFORMS_RESPOND_BACKOFF_MAX)")
}

func (c *upstreamConfig) check(_ *flag.FlagSet, e envDefaults) error {
	if c.relayToken == "" {
		c.relayToken = e.env("AEP_TOKEN")
	}
	if err := notNegative("--ack-window", c.ackWindow); err != nil {
		return err
	}
	if err := notNegative("--feed-silence", c.feedSilence); err != nil {
		return err
	}
	if err := positive("--respond-backoff-max", c.respondBackoff); err != nil {
		return err
	}
	if err := positive("--roster-interval", c.rosterIntvl); err != nil {
		return err
	}
	if c.relayURL != "" {
		u, err := url.Parse(c.relayURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: --relay must be an http(s) URL like http://127.0.0.1:8787, got %q", ErrUsage, c.relayURL)
		}
	}
	return nil
}
