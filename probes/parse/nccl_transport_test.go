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

// host returns the report of one host, failing the test when the lines
// did not name it.
func host(t *testing.T, tr Transport, name string) HostTransport {
	t.Helper()
	for _, h := range tr.Hosts {
		if h.Host == name {
			return h
		}
	}
	t.Fatalf("no host %q in %+v", name, tr.Hosts)
	return HostTransport{}
}

func hostNames(tr Transport) []string {
	var names []string
	for _, h := range tr.Hosts {
		names = append(names, h.Host)
	}
	return names
}

// Real NCCL_DEBUG=INFO excerpts from public issues (see the .source files).
func TestParseNCCLTransportReal(t *testing.T) {
	gdr := transportOf(t, "nccl_info_gdrdma_nccl707.txt")
	if gdr.Network != "IB" || gdr.NetChannels != 12 || gdr.GDRDMAChannels != 12 || gdr.SocketFallback() || host(t, gdr, "10-90-43-152").GDRDMAChannels != 12 {
		t.Errorf("nccl#707 (IB with GDRDMA): %+v", gdr)
	}
	roce := transportOf(t, "nccl_info_roce_dgxh100_nccl_tests185.txt")
	if roce.Network != "IB" || !slices.Equal(roce.HCAs, []string{"mlx5_10:1/RoCE", "mlx5_11:1/RoCE"}) || roce.SocketFallback() || !roce.Reported() ||
		!slices.Equal(hostNames(roce), []string{"dgxh100-4", "dgxh100-3"}) {
		t.Errorf("nccl-tests#185 (DGX H100 RoCE): %+v", roce)
	}
	sock := transportOf(t, "nccl_info_socket_fallback_nccl1232.txt")
	if sock.Network != "Socket" || sock.SocketChannels != 9 || sock.NetChannels != 9 || !sock.SocketFallback() || sock.GDRDMAChannels != 0 ||
		host(t, sock, "node0").SocketChannels != 3 || host(t, sock, "node2").RDMAChannels() != 0 {
		t.Errorf("nccl#1232 (NET/Socket channels behind a launcher's [rank] prefix, SHM not counted): %+v", sock)
	}
	using := transportOf(t, "nccl_info_using_network_socket_nccl1053.txt")
	if using.Network != "Socket" || !using.SocketFallback() || !slices.Equal(using.GDRDisabled, []string{"lo"}) || host(t, using, "axa").NoNICGDR() {
		t.Errorf("nccl#1053 (Using network Socket; its 'HCA' lo is no RDMA NIC): %+v", using)
	}
	ext := transportOf(t, "nccl_info_ibext_no_gdr_nccl1814.txt")
	if ext.Network != "IBext_v8" || ext.NetChannels != 12 || ext.GDRDMAChannels != 0 || ext.SocketFallback() || host(t, ext, "hostname-test").RDMAChannels() != 12 {
		t.Errorf("nccl#1814 (IBext_v8 without GDRDMA): %+v", ext)
	}
}

// Channel lines NCCL and its plugins print today: plugin names with
// spaces, PXN's proxy rank, the new aws-ofi-nccl name.
func TestParseNCCLTransportPluginsAndPXN(t *testing.T) {
	aws := transportOf(t, "nccl_info_aws_libfabric_no_gdr_daekeun.txt")
	if aws.Network != "AWS Libfabric" || aws.NetChannels != 8 || aws.GDRDMAChannels != 0 || aws.SocketFallback() {
		t.Errorf("AWS Libfabric (a plugin name with a space): %+v", aws)
	}
	for _, name := range []string{"compute-gpu-st-distributed-ml-1", "compute-gpu-st-distributed-ml-2"} {
		if h := host(t, aws, name); h.Network != "AWS Libfabric" || h.RDMAChannels() != 4 || h.GDRDMAChannels != 0 {
			t.Errorf("%s: %+v", name, h)
		}
	}

	pxn := transportOf(t, "nccl_info_pxn_rdma_plugin_v6_nccl_tests321.txt")
	if pxn.Network != "NCCL RDMA Plugin v6" || pxn.NetChannels != 32 || pxn.GDRDMAChannels != 32 || pxn.SocketFallback() ||
		!slices.Equal(pxn.HCAs, []string{"mlx5_bond_6:1/RoCE", "mlx5_bond_7:1/RoCE"}) || !slices.Equal(hostNames(pxn), []string{"vm-host40", "vm-host38"}) {
		t.Errorf("nccl-tests#321 (PXN 'via NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared'): %+v", pxn)
	}
	for _, name := range []string{"vm-host38", "vm-host40"} {
		if h := host(t, pxn, name); h.GDRDMAChannels != 16 || h.NetChannels != 16 {
			t.Errorf("%s: %+v", name, h)
		}
	}

	p5e := transportOf(t, "nccl_tests_p5e_2x8_h200_libfabric_gdrdma_daekeun.txt")
	if p5e.Network != "Libfabric" || p5e.NetChannels != 512 || p5e.GDRDMAChannels != 512 || p5e.SocketFallback() || len(p5e.Hosts) != 2 {
		t.Errorf("p5e (aws-ofi-nccl 1.16 'Libfabric', table interleaved): %+v", p5e)
	}
	// The same file is a complete nccl-tests run.
	b, _ := os.ReadFile(filepath.Join("testdata", "nccl_tests_p5e_2x8_h200_libfabric_gdrdma_daekeun.txt"))
	res, err := parseNCCLText(string(b))
	if err != nil || !res.HasAverage || res.AvgBusBandwidthBytesPerSecond != 127.29e9 || len(res.Rows) != 32 || res.Reason != "" {
		t.Errorf("p5e table: err %v, %d rows, avg %v, reason %q", err, len(res.Rows), res.AvgBusBandwidthBytesPerSecond, res.Reason)
	}
}

// Merged virtual NICs list their members, not "={".
func TestParseNCCLTransportMergedNICs(t *testing.T) {
	tr := transportOf(t, "nccl_info_merged_vnic_ibext_nccl_tests373.txt")
	want := []string{"mlx5_2:1/RoCE", "mlx5_3:1/RoCE", "mlx5_0:1/RoCE", "mlx5_1:1/RoCE"}
	if !slices.Equal(tr.HCAs, want) || len(tr.MergedNICs) != 2 || !slices.Equal(tr.MergedNICs[0], want[:2]) || !slices.Equal(tr.MergedNICs[1], want[2:]) {
		t.Errorf("nccl-tests#373 merged NICs: HCAs %q merged %q", tr.HCAs, tr.MergedNICs)
	}
	if tr.Network != "IBext_v8" || tr.NetChannels != 4 || tr.GDRDMAChannels != 0 || tr.SocketFallback() {
		t.Errorf("nccl-tests#373: %+v", tr)
	}
	// NCCL >= 2.24 prints rail and plane after the port (src/transport/net_ib/init.cc).
	one := NCCLTransport("h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1:0/RoCE [1]mlx5_1:1::1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n")
	if !slices.Equal(one.HCAs, []string{"mlx5_0:1:0/RoCE", "mlx5_1:1::1/RoCE"}) || len(one.MergedNICs) != 0 {
		t.Errorf("rail and plane: %+v", one)
	}
}

// GCP's FastSocket plugin moves data over TCP exactly like NET/Socket.
func TestParseNCCLTransportFastSocket(t *testing.T) {
	for _, f := range []string{"nccl_info_fastsocket_plugin_nccl1519.txt", "nccl_info_fastsocket_plugin_gcp_nccl1267.txt"} {
		if tr := transportOf(t, f); tr.Network != "FastSocket" || !tr.SocketFallback() || !tr.Reported() {
			t.Errorf("%s: %+v", f, tr)
		}
	}
	// Its channels and its "Using network" line, as NCCL prints them for any
	// net (src/transport/net.cc, src/init.cc).
	tr := NCCLTransport("h1:1:2 [0] NCCL INFO Using network FastSocket\nh1:1:3 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/FastSocket/0\n")
	if tr.Network != "FastSocket" || tr.SocketChannels != 1 || !tr.SocketFallback() || host(t, tr, "h1").RDMAChannels() != 0 {
		t.Errorf("FastSocket channels: %+v", tr)
	}
	// The ml-engineering example: no host prefix, no Using network line; the
	// interface list of a plugin is not an HCA list, the NET/IB line is.
	doc := transportOf(t, "nccl_info_fastsocket_ib_using_ml_engineering.txt")
	if len(doc.HCAs) != 8 || doc.HCAs[0] != "mlx5_0:1/IB" || doc.HCAs[7] != "mlx5_7:1/IB" || doc.SocketFallback() {
		t.Errorf("ml-engineering: %+v", doc)
	}
	// Both socket captures from more hosts.
	four := transportOf(t, "nccl_info_socket_4hosts_nccl634.txt")
	if !four.SocketFallback() || four.SocketChannels != 14 || !slices.Equal(hostNames(four), []string{"gcn5", "gcn3", "gcn4", "gcn6"}) {
		t.Errorf("nccl#634: %+v", four)
	}
	if dgx := transportOf(t, "nccl_info_socket_dgxa100_nccl676.txt"); dgx.Network != "Socket" || !dgx.SocketFallback() {
		t.Errorf("nccl#676: %+v", dgx)
	}
	// A plugin that is not TCP is no fallback, loaded or used.
	if ib := NCCLTransport("h:1:2 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n"); ib.Network != "NCCL RDMA Plugin v6" || ib.SocketFallback() {
		t.Errorf("RDMA plugin: %+v", ib)
	}
}

// GPUDirect per host, NCCL's two different messages read for what they mean.
func TestParseNCCLTransportGPUDirectPerHost(t *testing.T) {
	// One host without the peer-memory module: its ranks lack /GDRDMA while
	// the other host's have it.
	mixed := transportOf(t, "nccl_info_mixed_gdr_nv_peer_mem_nccl_tests152.txt")
	if g32, g37 := host(t, mixed, "gpu32"), host(t, mixed, "gpu37"); g32.GDRDMAChannels != 2 || g37.GDRDMAChannels != 0 || g37.RDMAChannels() != 2 {
		t.Errorf("nccl-tests#152: gpu32 %+v gpu37 %+v", g32, g37)
	}
	// Pre-2.13 per-NIC line "(no module)" on one host of two.
	nomod := transportOf(t, "nccl_info_gdr_no_module_2host_nccl899.txt")
	if h := host(t, nomod, "21346d5cefce"); !h.NoNICGDR() || h.GDRDMAChannels != 0 || !slices.Equal(h.NICGDRDisabled, []string{"mlx5_1", "mlx5_2", "mlx5_3"}) || h.GDROffByDistance() {
		t.Errorf("nccl#899 21346d5cefce: %+v", h)
	}
	if h := host(t, nomod, "6a5a91752e39"); h.NoNICGDR() || h.RDMAChannels() != 5 {
		t.Errorf("nccl#899 6a5a91752e39 printed no per-NIC line: %+v", h)
	}
	// The per-NIC line for every HCA, no channel lines: still a host without GPUDirect.
	nic := transportOf(t, "nccl_info_gdr_nic_disabled_nccl1537.txt")
	if h := host(t, nic, "hostname1"); !h.NoNICGDR() || h.GDROffByDistance() || nic.NetChannels != 0 || !slices.Equal(nic.GDRDisabled, []string{"mlx5_0", "mlx5_1"}) {
		t.Errorf("nccl#1537: %+v", nic)
	}
	// The topology decision: off by NCCL's own distance rule.
	dist := transportOf(t, "nccl_info_gdr_distance_disabled_nccl1657.txt")
	if h := host(t, dist, "aigc-maas-instance-leader-0"); !h.GDROffByDistance() || !slices.Equal(h.DistanceDisabled, []string{"6 > 4"}) || h.NoNICGDR() || len(dist.GDRDisabled) != 0 {
		t.Errorf("nccl#1657: %+v", dist)
	}
	// NCCL_NET_GDR_LEVEL=SYS on a PHB board: enabled by distance, per NIC, and on the channels.
	forced := transportOf(t, "nccl_info_gdr_forced_sys_phb_nccl_tests350.txt")
	h := host(t, forced, "n013")
	if h.GDROffByDistance() || h.NoNICGDR() || !slices.Equal(h.DistanceEnabled, []string{"6 <= 7", "7 <= 7"}) || h.GDRDMAChannels != 6 ||
		!slices.Equal(h.NICGDREnabled, []string{"mlx5_0", "mlx5_2"}) || !slices.Equal(forced.HCAs, []string{"mlx5_0:1/RoCE", "mlx5_2:1/IB"}) {
		t.Errorf("nccl-tests#350: %+v", forced)
	}
	// NCCL_NET_GDR_LEVEL as each host's NCCL read it.
	if h := host(t, forced, "n013"); h.GDRLevel != "SYS" || h.GDRLevelBelow("PXB") {
		t.Errorf("nccl-tests#350 level SYS: %+v", h)
	}
	pxn := transportOf(t, "nccl_info_pxn_rdma_plugin_v6_nccl_tests321.txt")
	if h := host(t, pxn, "vm-host38"); h.GDRLevel != "PIX" || !h.GDRLevelBelow("PXB") || h.GDRLevelBelow("PIX") {
		t.Errorf("nccl-tests#321 level PIX: %+v", h)
	}
	for level, below := range map[string]bool{"LOC": true, "1": true, "2": false, "0": true, "loc": true, "pxb": false, "PHB": false, "": false, "bogus": false, "9": false} {
		if got := (HostTransport{GDRLevel: level}).GDRLevelBelow("PXB"); got != below {
			t.Errorf("level %q below PXB: %v", level, got)
		}
	}
	// Every release's wording of the distance decision (NCCL-SOURCE-FACTS: 2.3 to 2.29).
	for _, line := range []string{
		"h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 0 / HCA mlx5_0 (distance 4 >= 2)",
		"h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 (distance 4 >= 2)",
		"h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 5 > 4)",
		"h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 3 / HCA 1a00000 (distance 8 > 5)",
		"h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU/0-1b000 (rank 3) - NET/0-1a000 (distance 8 > 5)",
	} {
		if h := NCCLTransport(line + "\n").Hosts; len(h) != 1 || !h[0].GDROffByDistance() || h[0].NoNICGDR() {
			t.Errorf("%q: %+v", line, h)
		}
	}
}

func TestParseNCCLTransportNothing(t *testing.T) {
	for _, text := range []string{"", "# nccl-tests version 2.13.9\n#  Rank  0 Group  0 Pid 1 on h device  0\n", "garbage via NET/IB/0/GDRDMA\n",
		// nccl#897's fragments: no NCCL INFO line, nothing NCCL reported.
		"9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n9[1a000] -> 2[6b000] [receive] via NET/IB/1\n"} {
		if tr := NCCLTransport(text); tr.Reported() || tr.SocketFallback() || tr.GDRDMAChannels != 0 {
			t.Errorf("%q: %+v", text, tr)
		}
	}
	// Old NCCL that also lists its bootstrap socket: NET/Socket : Using is
	// not a fallback when the channels run over IB.
	tr := NCCLTransport("h:1:2 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>\nh:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>\nh:1:3 [0] NCCL INFO Ring 00 : 3 -> 0 [receive] via NET/IB/0\nh:1:3 [0] NCCL INFO Channel 00 : 3[3] -> 0[0] [receive] via NET/IB/0/GDRDMA\n")
	if tr.SocketFallback() || tr.Network != "IB" || tr.GDRDMAChannels != 1 || !slices.Equal(tr.HCAs, []string{"mlx5_0:1/IB"}) {
		t.Errorf("IB with bootstrap socket: %+v", tr)
	}
	// A "(PCI)" GPUDirect mode still counts; "/Shared" alone does not.
	tr = NCCLTransport("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA(PCI)/Shared\nh:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0/Shared\n")
	if tr.GDRDMAChannels != 1 || tr.NetChannels != 2 {
		t.Errorf("GDRDMA(PCI): %+v", tr)
	}
}

func FuzzParseNCCLTransport(f *testing.F) {
	for _, name := range []string{"nccl_info_gdrdma_nccl707.txt", "nccl_info_socket_fallback_nccl1232.txt", "nccl_info_roce_dgxh100_nccl_tests185.txt",
		"nccl_info_pxn_rdma_plugin_v6_nccl_tests321.txt", "nccl_info_merged_vnic_ibext_nccl_tests373.txt", "nccl_info_gdr_forced_sys_phb_nccl_tests350.txt"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		tr := NCCLTransport(text)
		if tr.SocketChannels > tr.NetChannels || tr.GDRDMAChannels > tr.NetChannels {
			t.Fatalf("inconsistent counts: %+v", tr)
		}
		var net, sock, gdr int
		for _, h := range tr.Hosts {
			net, sock, gdr = net+h.NetChannels, sock+h.SocketChannels, gdr+h.GDRDMAChannels
			if h.RDMAChannels() < 0 || h.GDRDMAChannels > h.NetChannels {
				t.Fatalf("inconsistent host: %+v", h)
			}
		}
		if net != tr.NetChannels || sock != tr.SocketChannels || gdr != tr.GDRDMAChannels {
			t.Fatalf("hosts do not add up: %+v", tr)
		}
	})
}
