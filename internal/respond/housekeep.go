package respond

import (
	"encoding/json"
	"strconv"
	"time"
)

// askRoster wants a roster request sent; it never blocks.
func (cn *conn) askRoster() {
	select {
	case cn.ask <- struct{}{}:
	default:
	}
}

// housekeep sends roster requests when asked and every RosterInterval,
// pings the relay every PingInterval, and drops the connection when
// nothing arrived for SilenceTimeout. It returns when done closes.
func (cn *conn) housekeep() {
	cfg := cn.c.cfg
	tick := time.NewTicker(min(cfg.PingInterval, cfg.SilenceTimeout))
	defer tick.Stop()
	rosterTick, stopRoster := cfg.Tick(cfg.RosterInterval)
	defer stopRoster()
	// Roster requests are at least RosterCoalesce apart: an ask that comes
	// sooner arms burst, and every ask until it fires is answered by the
	// one request sent then.
	pace := pacer{every: cfg.RosterCoalesce}
	var burst *time.Timer
	var burstC <-chan time.Time
	defer func() {
		if burst != nil {
			burst.Stop()
		}
	}()
	request := func() {
		if cn.requestRoster() {
			pace.sent(time.Now())
		}
	}
	for {
		select {
		case <-cn.done:
			return
		case <-cn.ask:
			if burstC != nil {
				continue // the armed request answers this ask too
			}
			if wait := pace.wait(time.Now()); wait > 0 {
				burst = time.NewTimer(wait)
				burstC = burst.C
				continue
			}
			request()
			continue
		case <-burstC:
			burst, burstC = nil, nil
			request()
			continue
		case <-rosterTick:
			request()
			continue
		case <-tick.C:
		}
		cn.mu.Lock()
		silent := time.Since(cn.last)
		cn.mu.Unlock()
		if silent >= cfg.SilenceTimeout {
			cn.c.log.Warn("relay silent; reconnecting", "silent", silent.Round(time.Millisecond))
			cn.ws.CloseNow()
			return
		}
		t := json.RawMessage(strconv.FormatInt(time.Now().UnixMilli(), 10))
		if err := cn.write(pingFrame{Type: "ping", T: t}); err != nil {
			cn.c.log.Debug("ping not written", "err", err)
		}
	}
}

// requestRoster sends a roster request unless the relay has no roster or
// one is in flight (requests are coalesced); it reports whether it sent one.
func (cn *conn) requestRoster() bool {
	if !cn.roster {
		return false
	}
	id := cn.c.roster.next(cn.c.cfg.DialTimeout)
	if id == "" {
		return false
	}
	if err := cn.write(idFrame{Type: "roster", ID: id}); err != nil {
		cn.c.log.Debug("roster request not written", "err", err)
	}
	return true
}

// pacer keeps requests at least every apart.
type pacer struct {
	every time.Duration
	last  time.Time // when the last request was sent; zero: never
}

// wait is how long an ask made at now must wait before its request may be
// sent: zero when it may go at once.
func (p *pacer) wait(now time.Time) time.Duration {
	if p.last.IsZero() {
		return 0
	}
	return max(0, p.every-now.Sub(p.last))
}

// sent records a request sent at now.
func (p *pacer) sent(now time.Time) { p.last = now }
