package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-exporter/roce_exporter/probes"
)

// probe parse reports NCCL's transport and fails a run that used sockets,
// on real NCCL_DEBUG=INFO excerpts in front of a real healthy table.
func TestProbeParseNCCLTransport(t *testing.T) {
	read := func(names ...string) []byte {
		var b []byte
		for _, n := range names {
			d, err := os.ReadFile(filepath.Join("..", "..", "probes", "parse", "testdata", n))
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, d...)
		}
		return b
	}
	out, _ := parseProbeOutput(probes.KindNCCL, read("nccl_info_gdrdma_nccl707.txt", "nccl_oke_2x8_a100_healthy.txt"), 256<<20)
	if out.Reason != "" || out.NCCLTransport == nil || out.NCCLTransport.GDRDMAChannels != 12 {
		t.Errorf("GDRDMA run: reason %q transport %+v", out.Reason, out.NCCLTransport)
	}
	out, _ = parseProbeOutput(probes.KindNCCL, read("nccl_info_socket_fallback_nccl1232.txt", "nccl_oke_2x8_a100_healthy.txt"), 256<<20)
	if out.Reason != probes.ReasonSocketFallback || out.BandwidthBytesPerSecond == nil {
		t.Errorf("socket run: reason %q", out.Reason)
	}
	out, _ = parseProbeOutput(probes.KindNCCL, read("nccl_oke_2x8_a100_healthy.txt"), 256<<20)
	if out.Reason != "" || out.NCCLTransport != nil {
		t.Errorf("no INFO lines: reason %q transport %+v", out.Reason, out.NCCLTransport)
	}
}
