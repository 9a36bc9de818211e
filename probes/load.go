package probes

import (
	"fmt"
	"strings"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

// The bounds of the window the load gate judges a port on before a run: the
// collection just before the run and the one before that (the exporter's
// pipeline collects at every scrape, every 15 to 60 s, and once at start).
//
//   - At least minLoadWindow: a shorter window measures a burst rather than a
//     load (the gate sampled 1 s when it read the node itself), and the
//     pipeline hands back a collection only milliseconds older when a scrape
//     has just read the node.
//   - At most maxLoadWindow: twice the slowest usual scrape interval, so one
//     missed scrape still leaves a window. A longer average dilutes traffic
//     that started within it (a job at full rate for the last 30 s shows as
//     5% over ten minutes, under the 10% default limit), so beyond it the
//     gate judges the run's own interval instead.
const (
	minLoadWindow = time.Second
	maxLoadWindow = 2 * time.Minute
)

// ackShare bounds the acknowledgements a one-way RDMA transfer gets back on
// the other direction, as a share of its own bytes: one 62-byte RoCE ACK per
// 1024-byte packet (the smallest RoCE MTU) would be 6%.
const ackShare = 0.1

// traffic is bytes per direction of the local ports.
type traffic struct{ tx, rx float64 }

// loadGate keeps the probes off ports that carry real traffic
// (probes.max_port_utilization): a probe there would disturb the job and
// report a false regression.
type loadGate struct{ limit float64 }

// on: a limit of 1 (or none) never skips.
func (g loadGate) on() bool { return g.limit > 0 && g.limit < 1 }

// usableWindow says whether a snapshot and its previous collection are far
// enough apart, and close enough, to tell how busy the ports were just
// before it.
func usableWindow(s *node.Snapshot) bool {
	if s == nil || s.Previous == nil {
		return false
	}
	w := s.Time.Sub(s.Previous.Time)
	return w >= minLoadWindow && w <= maxLoadWindow
}

// portTraffic is what the device's rated port moved from one snapshot to
// the next, and the port's rate in bytes per second; false when it cannot
// tell (no rate, no data counters, the port vanished, a counter reset: no
// evidence of load).
func portTraffic(from, to *node.Snapshot, device string) (traffic, float64, bool) {
	cur := ratedPort(to, device)
	if cur == nil || from == nil {
		return traffic{}, 0, false
	}
	prev := from.Port(device, cur.Number)
	if prev == nil {
		return traffic{}, 0, false
	}
	rx0, tx0, ok0 := prev.DataBytes()
	rx1, tx1, ok1 := cur.DataBytes()
	if !ok0 || !ok1 || rx1 < rx0 || tx1 < tx0 {
		return traffic{}, 0, false
	}
	return traffic{tx: float64(tx1 - tx0), rx: float64(rx1 - rx0)}, cur.RateBitsPerSecond / 8, true
}

// busyBefore returns why a run must stand aside, judged on the window from
// before's previous collection to before: a device whose busier direction
// used more than the limit of its rate. "" when none did.
func (g loadGate) busyBefore(before *node.Snapshot, devices []string) string {
	seconds := before.Time.Sub(before.Previous.Time).Seconds()
	for _, dev := range devices {
		moved, rate, ok := portTraffic(before.Previous, before, dev)
		if !ok {
			continue
		}
		if u := max(moved.tx, moved.rx) / seconds / rate; u > g.limit {
			return fmt.Sprintf("%s already carries %.0f%% of its rate (limit %.0f%%)", dev, u*100, g.limit*100)
		}
	}
	return ""
}

// busyDuring returns why a run's result is set aside: over the run (before
// to after), the devices' busier direction carried more than the limit of
// their rate besides own, the most the run itself moved. "" when not, or
// when it cannot tell.
func (g loadGate) busyDuring(before, after *node.Snapshot, devices []string, own traffic) string {
	seconds := after.Time.Sub(before.Time).Seconds()
	if seconds <= 0 {
		return ""
	}
	var moved traffic
	var rate float64
	for _, dev := range devices {
		m, r, ok := portTraffic(before, after, dev)
		if !ok {
			continue
		}
		moved.tx, moved.rx, rate = moved.tx+m.tx, moved.rx+m.rx, rate+r
	}
	if rate <= 0 {
		return ""
	}
	other := max(moved.tx-own.tx, moved.rx-own.rx, 0)
	if u := other / seconds / rate; u > g.limit {
		return fmt.Sprintf("%s carried %.0f%% of its rate besides the probe's own traffic while it ran (limit %.0f%%)",
			strings.Join(devices, ","), u*100, g.limit*100)
	}
	return ""
}
