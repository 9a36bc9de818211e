package reader

const wrap32 = uint64(1) << 32

// wrapExtender turns a 32-bit hardware counter into a monotonic 64-bit one
// across reads, so that rate() over the exported value stays right.
type wrapExtender struct {
	last uint64
	high uint64 // 2^32 times the number of wraps seen
	seen bool
}

// extend returns the 64-bit value of a raw reading. A drop from the upper
// half of the range is a wrap; a drop from the lower half is a reset
// (driver reload), which Prometheus' rate() already handles.
func (w *wrapExtender) extend(raw uint64) uint64 {
	if raw >= wrap32 {
		w.last, w.seen = raw, true
		return w.high + raw
	}
	if w.seen && raw < w.last {
		if w.last >= wrap32/2 {
			w.high += wrap32
		} else {
			w.high = 0
		}
	}
	w.last, w.seen = raw, true
	return w.high + raw
}
