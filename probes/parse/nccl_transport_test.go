package parse

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func transportOf(t *testing.T, file string) Transport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return NCCLTransport(string(b))
}

// Real NCCL_DEBUG=INFO excerpts from public issues (see the .source files).
func TestParseNCCLTransportReal(t *testing.T) {
	gdr := transportOf(t, "nccl_info_gdrdma_nccl707.txt")
	if gdr.Network != "IB" || gdr.NetChannels != 12 || gdr.GDRDMAChannels != 12 || gdr.SocketFallback() || gdr.NoGDRDMA() {
		t.Errorf("nccl#707 (IB with GDRDMA): %+v", gdr)
	}
	roce := transportOf(t, "nccl_info_roce_dgxh100_nccl_tests185.txt")
	if roce.Network != "IB" || !slices.Equal(roce.HCAs, []string{"mlx5_10:1/RoCE", "mlx5_11:1/RoCE"}) || roce.SocketFallback() || !roce.Reported() {
		t.Errorf("nccl-tests#185 (DGX H100 RoCE): %+v", roce)
	}
	sock := transportOf(t, "nccl_info_socket_fallback_nccl1232.txt")
	if sock.Network != "Socket" || sock.SocketChannels != 9 || sock.NetChannels != 9 || !sock.SocketFallback() || sock.NoGDRDMA() {
		t.Errorf("nccl#1232 (NET/Socket channels, SHM not counted): %+v", sock)
	}
	using := transportOf(t, "nccl_info_using_network_socket_nccl1053.txt")
	if using.Network != "Socket" || !using.SocketFallback() || !slices.Equal(using.GDRDisabled, []string{"lo"}) {
		t.Errorf("nccl#1053 (Using network Socket): %+v", using)
	}
	ext := transportOf(t, "nccl_info_ibext_no_gdr_nccl1814.txt")
	if ext.Network != "IBext_v8" || ext.NetChannels != 12 || ext.GDRDMAChannels != 0 || !ext.NoGDRDMA() || ext.SocketFallback() {
		t.Errorf("nccl#1814 (IBext_v8 without GDRDMA): %+v", ext)
	}
}

func TestParseNCCLTransportNothing(t *testing.T) {
	for _, text := range []string{"", "# nccl-tests version 2.13.9\n#  Rank  0 Group  0 Pid 1 on h device  0\n", "garbage via NET/IB/0/GDRDMA\n"} {
		if tr := NCCLTransport(text); tr.Reported() || tr.SocketFallback() || tr.NoGDRDMA() {
			t.Errorf("%q: %+v", text, tr)
		}
	}
	// Old NCCL that also lists its bootstrap socket: NET/Socket : Using is
	// not a fallback when the channels run over IB.
	tr := NCCLTransport("h:1:2 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>\nh:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>\nh:1:3 [0] NCCL INFO Ring 00 : 3 -> 0 [receive] via NET/IB/0\nh:1:3 [0] NCCL INFO Channel 00 : 3[3] -> 0[0] [receive] via NET/IB/0/GDRDMA\n")
	if tr.SocketFallback() || tr.Network != "IB" || tr.GDRDMAChannels != 1 || !slices.Equal(tr.HCAs, []string{"mlx5_0:1/IB"}) {
		t.Errorf("IB with bootstrap socket: %+v", tr)
	}
}

func FuzzParseNCCLTransport(f *testing.F) {
	for _, name := range []string{"nccl_info_gdrdma_nccl707.txt", "nccl_info_socket_fallback_nccl1232.txt", "nccl_info_roce_dgxh100_nccl_tests185.txt"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		tr := NCCLTransport(text)
		if tr.SocketChannels > tr.NetChannels || tr.GDRDMAChannels > tr.NetChannels {
			t.Fatalf("inconsistent counts: %+v", tr)
		}
	})
}
