package inbox

// fifo is a map bounded to max entries (and, with a size function, to
// maxBytes of values) that evicts the oldest insertion first. Deleted entries leave a stale queue slot that is skipped (and
// compacted away) later; generations keep a re-inserted key from being
// evicted by its old slot.
type fifo[K comparable, V any] struct {
	max     int
	m       map[K]fifoItem[V]
	q       []fifoSlot[K]
	gen     uint64
	onEvict func(K, V) // optional; called for evictions, not for deletes

	// size, when set, weighs a value; the entries' total (bytes) is kept
	// within maxBytes by evicting the oldest, as for the count.
	size     func(V) int64
	maxBytes int64
	bytes    int64
}

type fifoItem[V any] struct {
	v   V
	gen uint64
}

type fifoSlot[K comparable] struct {
	k   K
	gen uint64
}

func newFIFO[K comparable, V any](max int, onEvict func(K, V)) *fifo[K, V] {
	return &fifo[K, V]{max: max, m: make(map[K]fifoItem[V]), onEvict: onEvict}
}

func (f *fifo[K, V]) get(k K) (V, bool) {
	it, ok := f.m[k]
	return it.v, ok
}

func (f *fifo[K, V]) has(k K) bool {
	_, ok := f.m[k]
	return ok
}

func (f *fifo[K, V]) len() int { return len(f.m) }

// weigh bounds the fifo's values to maxBytes as weighed by size.
func (f *fifo[K, V]) weigh(maxBytes int64, size func(V) int64) *fifo[K, V] {
	f.maxBytes, f.size = maxBytes, size
	return f
}

func (f *fifo[K, V]) sizeOf(v V) int64 {
	if f.size == nil {
		return 0
	}
	return f.size(v)
}

func (f *fifo[K, V]) over() bool {
	return len(f.m) > f.max || (f.size != nil && f.bytes > f.maxBytes)
}

// put stores v under k. An existing key keeps its place in the queue.
func (f *fifo[K, V]) put(k K, v V) {
	if it, ok := f.m[k]; ok {
		f.bytes += f.sizeOf(v) - f.sizeOf(it.v)
		it.v = v
		f.m[k] = it
	} else {
		f.gen++
		f.m[k] = fifoItem[V]{v: v, gen: f.gen}
		f.q = append(f.q, fifoSlot[K]{k: k, gen: f.gen})
		f.bytes += f.sizeOf(v)
	}
	for f.over() && len(f.q) > 0 {
		s := f.q[0]
		f.q[0] = fifoSlot[K]{}
		f.q = f.q[1:]
		if it, ok := f.m[s.k]; ok && it.gen == s.gen {
			delete(f.m, s.k)
			f.bytes -= f.sizeOf(it.v)
			if f.onEvict != nil {
				f.onEvict(s.k, it.v)
			}
		}
	}
	if len(f.q) > 2*f.max+16 {
		f.compact()
	}
}

func (f *fifo[K, V]) delete(k K) {
	if it, ok := f.m[k]; ok {
		f.bytes -= f.sizeOf(it.v)
		delete(f.m, k)
	}
}

// compact drops stale queue slots so the queue stays within about twice
// the live entries.
func (f *fifo[K, V]) compact() {
	live := make([]fifoSlot[K], 0, len(f.m))
	for _, s := range f.q {
		if it, ok := f.m[s.k]; ok && it.gen == s.gen {
			live = append(live, s)
		}
	}
	f.q = live
}
