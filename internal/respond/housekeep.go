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
	for {
		select {
		case <-cn.done:
			return
		case <-cn.ask:
			cn.requestRoster()
			continue
		case <-rosterTick:
			cn.requestRoster()
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
// one is in flight (requests are coalesced).
func (cn *conn) requestRoster() {
	if !cn.roster {
		return
	}
	if id := cn.c.roster.next(cn.c.cfg.DialTimeout); id != "" {
		if err := cn.write(idFrame{Type: "roster", ID: id}); err != nil {
			cn.c.log.Debug("roster request not written", "err", err)
		}
	}
}
