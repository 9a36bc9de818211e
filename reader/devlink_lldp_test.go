package reader

import (
	"os"
	"path/filepath"
	"testing"

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
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: `{"lldp":{"interface":[
		{"eno1":{"chassis":{"mgmt-sw-1":{"id":{"type":"mac","value":"00:00:5e:00:53:01"}}},"port":{"id":{"type":"ifname","value":"ge-0/0/7"}}}},
		{"ens1f0np0":{"chassis":{"leaf-1":{"id":{"type":"mac","value":"0c:42:a1:00:00:01"}}},"port":{"id":{"type":"ifname","value":"Ethernet0"},"descr":"gpu-07 rail 0"}}}]}}`})
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

func TestLLDPNoNeighbourIsARead(t *testing.T) {
	o := fixtureOptions("mlx5-8x400g-healthy", node.SourceLLDP)
	o.ReplayDir = replayCopy(t, map[string]string{lldpReplayFile: "{\n  \"lldp\": {\n    \n  }\n}\n"})
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
