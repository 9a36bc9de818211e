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
	// GCP's FastSocket plugin is TCP too (nccl#1519).
	out, _ = parseProbeOutput(probes.KindNCCL, read("nccl_info_fastsocket_plugin_nccl1519.txt", "nccl_oke_2x8_a100_healthy.txt"), 256<<20)
	if out.Reason != probes.ReasonSocketFallback || out.NCCLTransport == nil || out.NCCLTransport.Network != "FastSocket" {
		t.Errorf("FastSocket run: reason %q transport %+v", out.Reason, out.NCCLTransport)
	}
	// A complete real run whose plugin name has no "IB" in it (aws-ofi-nccl
	// 1.16: "Libfabric"), every channel GPUDirect, per host.
	out, _ = parseProbeOutput(probes.KindNCCL, read("nccl_tests_p5e_2x8_h200_libfabric_gdrdma_daekeun.txt"), 256<<20)
	if out.Reason != "" || out.NCCLTransport == nil || out.NCCLTransport.Network != "Libfabric" || len(out.NCCLTransport.Hosts) != 2 ||
		out.BandwidthBytesPerSecond == nil || *out.BandwidthBytesPerSecond != 485.90e9 {
		t.Errorf("p5e run: reason %q transport %+v", out.Reason, out.NCCLTransport)
	}
	out, _ = parseProbeOutput(probes.KindNCCL, read("nccl_oke_2x8_a100_healthy.txt"), 256<<20)
	if out.Reason != "" || out.NCCLTransport != nil {
		t.Errorf("no INFO lines: reason %q transport %+v", out.Reason, out.NCCLTransport)
	}
}
