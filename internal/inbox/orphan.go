package inbox

import "github.com/aepforms/aepforms/internal/aep"

// orphan is a lifecycle event (or ack) whose request, or whose linking
// event, has not been seen yet. It waits under every key that could
// resolve it and is applied again when one of them becomes known.
type orphan struct {
	ev   *aep.Event
	keys []subjKey
}

// orphanSize is what a held event weighs against Options.MaxOrphanBytes:
// its raw bytes (the decoded event holds about as much again, bounded
// with them).
func orphanSize(o orphan) int64 { return int64(len(o.ev.Raw())) + 256 }

// hold buffers e until a card or link appears under one of keys.
func (in *Inbox) hold(e *aep.Event, keys []subjKey) {
	if len(keys) == 0 {
		return
	}
	k := e.Key()
	if in.orphans.has(k) {
		return
	}
	for _, sk := range keys {
		in.orphanIdx[sk] = append(in.orphanIdx[sk], k)
	}
	in.orphans.put(k, orphan{ev: e, keys: keys})
}

// unindexOrphan drops an orphan from the index (on eviction or release).
func (in *Inbox) unindexOrphan(k aep.Key, o orphan) {
	for _, sk := range o.keys {
		list := in.orphanIdx[sk]
		kept := list[:0]
		for _, x := range list {
			if x != k {
				kept = append(kept, x)
			}
		}
		if len(kept) == 0 {
			delete(in.orphanIdx, sk)
		} else {
			in.orphanIdx[sk] = kept
		}
	}
}

// wake schedules the orphans waiting under sk to be applied again.
func (in *Inbox) wake(sk subjKey) {
	if _, ok := in.orphanIdx[sk]; ok {
		in.drainQ = append(in.drainQ, sk)
	}
}

// drain applies again every orphan woken in this transaction, and those
// their application wakes in turn.
func (in *Inbox) drain() {
	for len(in.drainQ) > 0 {
		sk := in.drainQ[0]
		in.drainQ = in.drainQ[1:]
		keys := append([]aep.Key(nil), in.orphanIdx[sk]...)
		for _, k := range keys {
			o, ok := in.orphans.get(k)
			if !ok {
				continue
			}
			in.orphans.delete(k)
			in.unindexOrphan(k, o)
			in.dispatch(o.ev)
		}
	}
	in.drainQ = in.drainQ[:0]
}
