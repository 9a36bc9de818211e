package parse

import (
	"slices"
	"testing"
)

// The CSV nvidia-smi prints for --query-gpu=memory.total with noheader and
// nounits: one MiB count per GPU (CONSTRUCTED from nvidia-smi's documented
// format; the sizes are real parts': H100 80GB HBM3, A10).
func TestNVIDIASMIMemoryMiB(t *testing.T) {
	got, err := NVIDIASMIMemoryMiB([]byte("81559\n81559\r\n 23028 \n\n"))
	if err != nil || !slices.Equal(got, []uint64{81559, 81559, 23028}) {
		t.Errorf("%v %v", got, err)
	}
	for _, bad := range []string{"", "\n", "[N/A]\n", "81559\n[Not Supported]\n", "No devices were found\n", "0\n", "-1\n", "81559 MiB\n", "99999999999\n",
		"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"} {
		if got, err := NVIDIASMIMemoryMiB([]byte(bad)); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}
