package reader

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// ttarCounters reads the counters/ and counters_ext/ files of a ttar
// excerpt: port -> "counters" or "counters_ext" -> file -> value.
func ttarCounters(t *testing.T, path string) map[string]map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "[...]" {
			break // node_exporter's exported metrics follow
		}
		p, ok := strings.CutPrefix(line, "Path: ")
		if !ok {
			continue
		}
		if !sc.Scan() || sc.Text() != "Lines: 1" || !sc.Scan() {
			t.Fatalf("%s: not a one-line file", p)
		}
		parts := strings.Split(p, "/")
		// sys/class/infiniband/mlx4_0/ports/<n>/<dir>/<file>
		if len(parts) != 8 || parts[4] != "ports" || (parts[6] != "counters" && parts[6] != node.CountersExtDir) {
			continue
		}
		port, dir := parts[5], parts[6]
		if out[port] == nil {
			out[port] = map[string]map[string]string{}
		}
		if out[port][dir] == nil {
			out[port][dir] = map[string]string{}
		}
		out[port][dir][parts[7]] = sc.Text()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// node_exporter's own mlx4 fixture (testdata/node_exporter-sys-mlx4_0.ttar.txt):
// where counters/ and counters_ext/ both have a counter and disagree, the
// larger is the one still counting: port 1's 64-bit counters/port_rcv_packets
// (6825908347, what node_exporter exports) over counters_ext's 0, port 2's
// counters_ext/port_rcv_data_64 over counters/'s 0.
func TestCountersAndCountersExtDisagree(t *testing.T) {
	files := ttarCounters(t, filepath.Join("testdata", "node_exporter-sys-mlx4_0.ttar.txt"))
	if len(files["1"]["counters"]) != 16 || len(files["1"][node.CountersExtDir]) != 8 || len(files["2"]["counters"]) != 8 {
		t.Fatalf("ttar read wrong: %v", files)
	}
	n := sysfixture.MLX4CountersExt()
	d := &n.Devices[0]
	d.Counters, d.CountersExt = files["1"]["counters"], files["1"][node.CountersExtDir]
	d.MorePorts[0].Counters, d.MorePorts[0].CountersExt = files["2"]["counters"], files["2"][node.CountersExtDir]
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, n); err != nil {
		t.Fatal(err)
	}
	r := newTestReader(t, Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Sources: []string{node.SourceRDMA}, Timeout: fixtureOptions("x").Timeout})
	snap := r.Read().Snapshot
	for _, tc := range []struct {
		port int
		name string
		want uint64
	}{
		{1, "port_rcv_packets", 6825908347}, // counters/ 6825908347, counters_ext 0
		{1, "port_xmit_packets", 6235865},   // counters/ 6235865, counters_ext 0
		{1, "port_rcv_data", 4631917},       // both 4631917 words
		{1, "port_xmit_wait", 4294967295},   // counters/ only, saturated
		{1, "unicast_rcv_packets", 61148},
		{2, "port_rcv_data", 4631917},      // counters/ 0, counters_ext 4631917
		{2, "port_xmit_data", 3733440},     // counters/ 0, counters_ext 3733440
		{2, "multicast_rcv_packets", 93},   // counters/ 0, counters_ext 93
		{2, "port_rcv_packets", 0},         // counters_ext only
		{2, "unicast_xmit_packets", 61239}, // counters/ 0, counters_ext 61239
	} {
		p := snap.Port("mlx4_0", tc.port)
		if p == nil {
			t.Fatalf("no mlx4_0 port %d", tc.port)
		}
		if v, ok := p.Counter(tc.name); !ok || v != tc.want {
			t.Errorf("port %d %s = %d, %v; want %d", tc.port, tc.name, v, ok, tc.want)
		}
	}
	if n := r.ReadErrors(node.SourceRDMA); n != 0 {
		t.Errorf("%d rdma read errors", n)
	}
	// What node_exporter exports for port 1 from the same files.
	want := "node_infiniband_port_packets_received_total{device=\"mlx4_0\",port=\"1\"} " + strconv.FormatFloat(6825908347, 'e', -1, 64)
	b, _ := os.ReadFile(filepath.Join("testdata", "node_exporter-sys-mlx4_0.ttar.txt"))
	if !strings.Contains(string(b), want) {
		t.Errorf("capture does not hold %q", want)
	}
}

// A 32-bit file that cannot be read beside a 64-bit one gives a read error
// and no value, never the 64-bit value alone (which may be the lower one).
func TestCountersExtWithUnreadable32Bit(t *testing.T) {
	n := sysfixture.MLX4CountersExt()
	n.Devices[0].Counters["port_rcv_packets"] = "garbage"
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.Write(root, n); err != nil {
		t.Fatal(err)
	}
	r := newTestReader(t, Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Sources: []string{node.SourceRDMA}, Timeout: fixtureOptions("x").Timeout})
	p := r.Read().Snapshot.Port("mlx4_0", 1)
	if v, ok := p.Counter("port_rcv_packets"); ok {
		t.Errorf("port_rcv_packets = %d beside an unreadable counters/ file", v)
	}
	if v, ok := p.Counter("port_rcv_data"); !ok || v != 12881234567890 {
		t.Errorf("port_rcv_data = %d, %v", v, ok)
	}
	if n := r.ReadErrors(node.SourceRDMA); n != 1 {
		t.Errorf("%d rdma read errors, want 1", n)
	}
}
