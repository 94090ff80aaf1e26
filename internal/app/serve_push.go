package app

import (
	"flag"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/webpush"
)

// pushConfig is what reaches the operator unasked: the open pages' push
// stream (its heartbeat, the batch counts' pace) and Web Push to their
// devices.
type pushConfig struct {
	heartbeat  time.Duration
	batchEvery time.Duration
	// Web Push: the VAPID subject that turns it on, the testing-only
	// loopback allowance, and whether notifications leave the
	// question's text out.
	vapidSubject      string
	pushAllowLoopback bool
	pushHideText      bool
	pushEvery         time.Duration // the least time between two pushes to one device
	pushSubTimeout    time.Duration // how long a page waits for the browser's push service to subscribe
	pushMaxDevices    int           // --push-max-devices
}

func (c *pushConfig) register(fs *flag.FlagSet, e envDefaults) {
	fs.DurationVar(&c.heartbeat, "heartbeat", e.dur("AEPFORMS_HEARTBEAT", 15*time.Second), "browser push heartbeat interval (env AEPFORMS_HEARTBEAT)")
	fs.DurationVar(&c.batchEvery, "batch-push-interval", e.dur("AEPFORMS_BATCH_PUSH_INTERVAL", time.Second), "send each inbox page the 'Answer several at once' counts at most this often; the changes of a burst go as one (env AEPFORMS_BATCH_PUSH_INTERVAL)")
	fs.StringVar(&c.vapidSubject, "vapid-subject", e.env("AEPFORMS_VAPID_SUBJECT"), "turns on Web Push notifications to the operators' devices: a mailto: or https: address push services can contact about this server, e.g. mailto:ops@example.com (env AEPFORMS_VAPID_SUBJECT)")
	fs.DurationVar(&c.pushEvery, "push-every", e.dur("AEPFORMS_PUSH_EVERY", 10*time.Second), "at most one push to a device this often; questions arriving meanwhile go out as one \"N new questions\" (env AEPFORMS_PUSH_EVERY)")
	fs.DurationVar(&c.pushSubTimeout, "push-subscribe-timeout", e.dur("AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT", 15*time.Second), "how long the page waits for the browser's push service to subscribe a device before it says the service did not answer (env AEPFORMS_PUSH_SUBSCRIBE_TIMEOUT)")
	fs.IntVar(&c.pushMaxDevices, "push-max-devices", e.integer("AEPFORMS_PUSH_MAX_DEVICES", 20), "most devices one operator keeps subscribed to notifications; a new one replaces their oldest (env AEPFORMS_PUSH_MAX_DEVICES)")
	fs.BoolVar(&c.pushHideText, "push-hide-text", e.boolean("AEPFORMS_PUSH_HIDE_TEXT"), "notifications say only that a question waits, never its text (lock screens) (env AEPFORMS_PUSH_HIDE_TEXT)")
	// Testing only, never a flag: lets pushes go to an http: endpoint on
	// loopback (a fake push service in a test).
	c.pushAllowLoopback = e.env("AEPFORMS_PUSH_ALLOW_LOOPBACK") == "1"
}

func (c *pushConfig) check(*flag.FlagSet, envDefaults) error {
	if err := notNegative("--heartbeat", c.heartbeat); err != nil {
		return err
	}
	if err := notNegative("--batch-push-interval", c.batchEvery); err != nil {
		return err
	}
	if err := atLeastOne("--push-max-devices", c.pushMaxDevices); err != nil {
		return err
	}
	if err := positive("--push-subscribe-timeout", c.pushSubTimeout); err != nil {
		return err
	}
	if err := positive("--push-every", c.pushEvery); err != nil {
		return err
	}
	if c.vapidSubject != "" {
		if err := webpush.CheckSubject(c.vapidSubject); err != nil {
			return fmt.Errorf("%w: --vapid-subject %q: a mailto: address or an https: URL, like mailto:ops@example.com", ErrUsage, c.vapidSubject)
		}
	}
	return nil
}
