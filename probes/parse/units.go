package parse

import (
	"fmt"
	"math"
	"strings"
)

// PerftestUnit is the bandwidth unit perftest printed in its table header.
type PerftestUnit string

// perftest labels: "MB" until 24.04 and "MiB" since 24.07 are the same 2^20
// factor (only the label was corrected); "Gb" is --report_gbits, 10^9 bits.
const (
	UnitMB  PerftestUnit = "MB/sec"
	UnitMiB PerftestUnit = "MiB/sec"
	UnitGb  PerftestUnit = "Gb/sec"
)

const (
	bytesPerMiB    = 1 << 20
	bytesPerGbit   = 1e9 / 8
	bytesPerNCCLGB = 1e9 // nccl-tests divides by 1e9, not 2^30
	secondsPerUsec = 1e-6
)

// Ceilings above which a printed bandwidth cannot be a measurement: it is a corrupt
// line, a wrong unit or a parser slip, and the run must not pass on it. They sit well
// above anything real so that no healthy run ever meets them.
const (
	// maxPortBitsPerSecond is the fastest network port that exists: 1.6 Tb/s (IEEE
	// 802.3dj 1.6TbE; InfiniBand XDR and ConnectX-8 are 800 Gb/s per port).
	maxPortBitsPerSecond = 1.6e12
	// maxPerftestBytesPerSecond: a perftest run drives one port of one device, at most
	// both directions of it (-b adds them up) and, with the dual-port option, two ports.
	maxPerftestBytesPerSecond = 2 * 2 * maxPortBitsPerSecond / 8 // 800 GB/s
	// maxNCCLBusBytesPerSecond: nccl-tests' bus bandwidth is per rank and stays below
	// the slowest hardware on the path (doc/PERFORMANCE.md): a node's NICs (16 ports of
	// 1.6 Tb/s would be 3.2 TB/s, four times a node with eight 800G NICs) or NVLink
	// (NVLink 5 moves 900 GB/s per GPU and direction; NVLS all-reduce shows a little
	// more than the link).
	maxNCCLBusBytesPerSecond = 16 * maxPortBitsPerSecond / 8 // 3.2 TB/s
)

// BytesPerSecond converts a bandwidth printed in unit u to bytes per second.
func (u PerftestUnit) BytesPerSecond(v float64) (float64, error) {
	switch u {
	case UnitMB, UnitMiB:
		return v * bytesPerMiB, nil
	case UnitGb:
		return v * bytesPerGbit, nil
	}
	return 0, fmt.Errorf("unknown perftest bandwidth unit %q", string(u))
}

// parsePerftestUnit maps the text inside "BW average[...]" to a unit.
func parsePerftestUnit(s string) (PerftestUnit, bool) {
	switch strings.TrimSpace(s) {
	case "MB/sec", "MB":
		return UnitMB, true
	case "MiB/sec", "MiB":
		return UnitMiB, true
	case "Gb/sec", "Gb":
		return UnitGb, true
	}
	return "", false
}

// ncclGBToBytesPerSecond converts nccl-tests "GB/s" (10^9 bytes) to bytes/s.
func ncclGBToBytesPerSecond(v float64) float64 { return v * bytesPerNCCLGB }

func usecToSeconds(v float64) float64 { return v * secondsPerUsec }

// finite reports whether v can be exported as a metric value.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func allFiniteNonNegative(vs ...float64) bool {
	for _, v := range vs {
		if !finite(v) || v < 0 {
			return false
		}
	}
	return true
}
