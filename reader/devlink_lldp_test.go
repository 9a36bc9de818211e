package reader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/node"
)

func replayCopy(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDevlinkReplay(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceDevlink, node.SourceRDMA)
	o.ReplayDir = replayCopy(t, map[string]string{devlinkReplayFile: `{"health":{
		"pci/0000:2a:00.0/65535":[{"reporter":"tx","state":"error","error":4,"recover":3},{"reporter":"rx","state":"healthy","error":0,"recover":0}],
		"pci/0000:18:00.0":[{"reporter":"fw_fatal","state":"healthy","error":0,"recover":0},{"reporter":"fw","state":"healthy","error":1,"recover":1}]}}`})
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceDevlink]; st != node.SourceOK {
		t.Fatalf("status %s: %v", st, res.Sources)
	}
	got := res.Snapshot.HealthReporters
	if len(got) != 4 {
		t.Fatalf("got %d reporters", len(got))
	}
	if got[0].Handle != "pci/0000:18:00.0" || got[0].Name != "fw" || got[0].PCIAddress != "0000:18:00.0" {
		t.Errorf("first %+v", got[0])
	}
	tx := got[3]
	if tx.Name != "tx" || tx.Healthy || tx.Errors != 4 || tx.Recoveries != 3 || tx.PCIAddress != "0000:2a:00.0" {
		t.Errorf("tx %+v", tx)
	}
	if d := res.Snapshot.DeviceOfPCI(node.PCIOfHandle(tx.Handle)); d == nil || d.Name != "mlx5_1" {
		t.Errorf("tx reporter's RDMA device: %+v", d)
	}
}

func TestDevlinkAbsentWithoutCapture(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceDevlink)
	o.ReplayDir = replayCopy(t, nil)
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceDevlink]; st != node.SourceAbsent || res.Snapshot.HealthReporters != nil {
		t.Fatalf("status %s, reporters %v", st, res.Snapshot.HealthReporters)
	}
}

func TestDevlinkCorruptCaptureFails(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceDevlink)
	o.ReplayDir = replayCopy(t, map[string]string{devlinkReplayFile: `{"health":{"pci/x":[{"reporter":"tx","state":"??"}]}}`})
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceDevlink]; st != node.SourceFailed {
		t.Fatalf("status %s", st)
	}
}

func TestLLDPReplayKeepsRoCEInterfaces(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: `{"lldp":[{"interface":[
		{"name":"eno1","chassis":[{"id":[{"type":"mac","value":"00:00:5e:00:53:01"}],"name":[{"value":"mgmt-sw-1"}]}],"port":[{"id":[{"type":"ifname","value":"ge-0/0/7"}]}]},
		{"name":"ens1f0np0","chassis":[{"id":[{"type":"mac","value":"0c:42:a1:00:00:01"}],"name":[{"value":"leaf-1"}]}],"port":[{"id":[{"type":"ifname","value":"Ethernet0"}],"descr":[{"value":"gpu-07 rail 0"}]}]}]}]}`})
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceLLDP]; st != node.SourceOK {
		t.Fatalf("status %s: %v", st, res.Sources)
	}
	got := res.Snapshot.LLDP
	if len(got) != 1 || got["ens1f0np0"] == nil {
		t.Fatalf("neighbours %v", got)
	}
	if n := got["ens1f0np0"]; n.Switch() != "leaf-1" || n.SwitchPort() != "Ethernet0" || n.PortDescr != "gpu-07 rail 0" {
		t.Errorf("neighbour %+v", n)
	}
}

// One neighbour that cannot be read (here a switch name with a newline)
// costs its own port: the others are kept, the source still reads, and the
// bad one is one read error per answer, not one per scrape.
func TestLLDPBadNeighbourCostsOnlyItsPort(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: `{"lldp":[{"interface":[
		{"name":"ens1f0np0","chassis":[{"id":[{"type":"mac","value":"0c:42:a1:00:00:01"}],"name":[{"value":"leaf-1"}]}],"port":[{"id":[{"type":"ifname","value":"Ethernet0"}]}]},
		{"name":"ens2f0np0","chassis":[{"id":[{"type":"mac","value":"0c:42:a1:00:00:02"}],"name":[{"value":"leaf-2\nEthernet99"}]}],"port":[{"id":[{"type":"ifname","value":"Ethernet4"}]}]},
		{"name":"eno1","chassis":[{"id":[{"type":"mac","value":"0c:42:a1:00:00:03"}],"name":[{"value":"mgmt\nsw"}]}]}]}]}`})
	r := newTestReader(t, o)
	for range 3 {
		res := r.Read()
		if st := res.Snapshot.Sources[node.SourceLLDP]; st != node.SourceOK {
			t.Fatalf("status %s: %v", st, res.Sources)
		}
		got := res.Snapshot.LLDP
		if len(got) != 1 || got["ens1f0np0"] == nil || got["ens1f0np0"].Switch() != "leaf-1" {
			t.Fatalf("neighbours %v", got)
		}
	}
	// eno1 is no RoCE interface: its neighbour is not the exporter's business.
	if n := r.ReadErrors(node.SourceLLDP); n != 1 {
		t.Errorf("read errors = %d, want 1 (ens2f0np0, counted once)", n)
	}
}

// A capture of `lldpcli -f json` is refused with what to capture instead.
func TestLLDPReplayRefusesJSONFormat(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: `{"lldp":{"interface":{"ens1f0np0":{"chassis":{"leaf-1":{"id":{"type":"mac","value":"1"}}}}}}}`})
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceLLDP]; st != node.SourceFailed {
		t.Fatalf("status %s", st)
	}
	for _, s := range res.Sources {
		if s.Name == node.SourceLLDP && (s.Err == nil || !strings.Contains(s.Err.Error(), "-f json0")) {
			t.Errorf("error %v does not say to capture -f json0", s.Err)
		}
	}
}

func TestLLDPNoNeighbourIsARead(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: "{\n  \"lldp\": [\n    {\n      \n    }\n  ]\n}\n"})
	res := newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceLLDP]; st != node.SourceOK || res.Snapshot.LLDP == nil || len(res.Snapshot.LLDP) != 0 {
		t.Fatalf("status %s, neighbours %v", st, res.Snapshot.LLDP)
	}
	o.ReplayDir = replayCopy(t, nil)
	res = newTestReader(t, o).Read()
	if st := res.Snapshot.Sources[node.SourceLLDP]; st != node.SourceAbsent || res.Snapshot.LLDP != nil {
		t.Fatalf("without a capture: status %s, neighbours %v", st, res.Snapshot.LLDP)
	}
}

// operstateFS serves the fixture's sysfs with one interface's operstate
// replaced.
type operstateFS struct {
	OSFS
	iface, state string
}

type textAttr string

func (t textAttr) PreadAt0(buf []byte) (int, error) { return copy(buf, t), nil }
func (textAttr) Close() error                       { return nil }

func (f *operstateFS) OpenAttr(path string) (AttrFile, error) {
	if strings.HasSuffix(path, "/"+f.iface+"/operstate") {
		return textAttr(f.state + "\n"), nil
	}
	return f.OSFS.OpenAttr(path)
}

// lldpd forgets a dead link's neighbour after its TTL; the source keeps it
// while the link is down, and drops it once the link is up without one.
func TestLLDPKeepsTheNeighbourOfADownLink(t *testing.T) {
	const one = `{"lldp":[{"interface":[{"name":"ens1f0np0","chassis":[{"id":[{"type":"mac","value":"0c:42:a1:00:00:01"}],"name":[{"value":"leaf-1"}]}],"port":[{"id":[{"type":"ifname","value":"Ethernet0"}]}]}]}]}`
	const none = `{"lldp":[{}]}`
	dir := replayCopy(t, map[string]string{lldpReplayFile: one})
	fsys := &operstateFS{iface: "ens1f0np0", state: "up"}
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir, o.FS = dir, fsys
	r := newTestReader(t, o)
	if n := r.Read().Snapshot.LLDP["ens1f0np0"]; n == nil || n.LinkDown {
		t.Fatalf("first read: %+v", n)
	}
	write := func(content string) {
		t.Helper()
		p := filepath.Join(dir, lldpReplayFile)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		// The replay cache keys on size and mtime: make the change visible.
		later := time.Now().Add(time.Duration(len(content)) * time.Second)
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	fsys.state = "down"
	write(none)
	n := r.Read().Snapshot.LLDP["ens1f0np0"]
	if n == nil || !n.LinkDown || n.Switch() != "leaf-1" || n.SwitchPort() != "Ethernet0" {
		t.Fatalf("link down, lldpd forgot the neighbour: %+v", n)
	}
	fsys.state = "up"
	if n := r.Read().Snapshot.LLDP["ens1f0np0"]; n != nil {
		t.Fatalf("link up without a neighbour: kept %+v", n)
	}
}
