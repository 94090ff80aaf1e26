package app

import "log/slog"

// fdReserve is the open files kept aside from both connection caps: the
// journal, the log, the relay connections of the feed and respond path,
// pushes to browsers' push services.
const fdReserve = 128

// connBudgets raises the open-files limit and fits the relay's connection
// cap beside the UI's: the UI keeps its whole cap, and the relay gets what
// the limit leaves after it and fdReserve (at least 16), so no crowd on the
// relay's port can take the descriptors the UI needs. relayCap 0 means no
// embedded relay. It logs both limits and returns the relay's cap to use.
func connBudgets(logger *slog.Logger, uiCap, relayCap int) int {
	soft, hard, ok := raiseOpenFiles()
	if !ok {
		return relayCap
	}
	logger.Info("open files limit", "soft", soft, "hard", hard, "ui_max_conns", uiCap, "relay_max_conns", relayCap)
	if relayCap == 0 {
		if uint64(uiCap+fdReserve) > soft {
			logger.Warn("the open files limit is below --max-conns plus a reserve: connections may fail with \"too many open files\"", "soft", soft, "max_conns", uiCap)
		}
		return 0
	}
	fit := fitRelayCap(soft, uiCap, relayCap)
	if fit < relayCap {
		logger.Warn("the open files limit leaves the embedded relay fewer connections than AEP_MAX_CONNS: its cap is lowered so the UI keeps its own", "soft", soft, "relay_max_conns", fit)
	}
	return fit
}

// fitRelayCap is the relay's connection cap under a soft open-files
// limit: relayCap, or what the limit leaves after the UI's cap and
// fdReserve when that is less (at least 16).
func fitRelayCap(soft uint64, uiCap, relayCap int) int {
	room := int64(soft) - int64(uiCap) - fdReserve
	if int64(relayCap) <= room {
		return relayCap
	}
	return int(max(room, 16))
}
