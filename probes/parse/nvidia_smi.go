package parse

import (
	"fmt"
	"strconv"
	"strings"
)

// maxGPUMemoryMiB bounds a GPU's memory as nvidia-smi may report it: 16 TiB,
// far above any GPU, so that a corrupt line cannot size a run.
const maxGPUMemoryMiB = 16 << 20

// NVIDIASMIMemoryMiB reads `nvidia-smi --query-gpu=memory.total
// --format=csv,noheader,nounits`: one line per GPU, its memory in MiB. A
// GPU that reports no number ("[N/A]", "[Not Supported]") or anything else
// than a number is an error, as is output without a GPU ("No devices were
// found" goes to stdout).
func NVIDIASMIMemoryMiB(out []byte) ([]uint64, error) {
	var mib []uint64
	for _, line := range splitLines(string(out)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		v, err := strconv.ParseUint(line, 10, 64)
		if err != nil || v == 0 || v > maxGPUMemoryMiB {
			if len(line) > 80 {
				line = strings.ToValidUTF8(line[:80], "") + "…"
			}
			return nil, fmt.Errorf("nvidia-smi memory.total: %q is not a GPU's memory in MiB", line)
		}
		mib = append(mib, v)
	}
	if len(mib) == 0 {
		return nil, fmt.Errorf("nvidia-smi listed no GPU")
	}
	return mib, nil
}
