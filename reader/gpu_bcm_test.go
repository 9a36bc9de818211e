package reader

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
)

// twoLevelSwitchNode is the shape of the 16-GPU board of nccl-tests issue 78
// (node/testdata/pcie-topology): one switch with two sub-switches below a
// root port, each sub-switch with a GPU and a NIC, every port of the switch
// carrying the ids given (vendor, device, subsystem vendor, subsystem
// device).
func twoLevelSwitchNode(ids [4]string) sysfixture.Node {
	const rp, top = "0000:15:01.0", "0000:16:00.0"
	chain := func(parts ...string) string { return strings.Join(append([]string{rp, top}, parts...), "/") }
	subA := []string{"0000:17:00.0", "0000:18:00.0"}
	subB := []string{"0000:17:01.0", "0000:1c:00.0"}
	n := sysfixture.HealthyCX7(2)
	n.Devices[0].PCIAddress, n.Devices[0].RootPort = "0000:1b:00.0", chain(append(subA, "0000:19:01.0")...)
	n.Devices[1].PCIAddress, n.Devices[1].RootPort = "0000:1f:00.0", chain(append(subB, "0000:1d:01.0")...)
	bridge := func(c string) sysfixture.Bridge {
		return sysfixture.Bridge{Chain: c, Vendor: ids[0], Device: ids[1], SubsystemVendor: ids[2], SubsystemDevice: ids[3],
			Speed: "16.0 GT/s PCIe", Width: 16, NoACS: true}
	}
	g := &sysfixture.GPUSide{NUMA: map[string]int{}}
	g.Bridges = []sysfixture.Bridge{
		{Chain: rp, Vendor: "0x8086", Device: "0x347a", Speed: "16.0 GT/s PCIe", Width: 16},
		bridge(chain()), bridge(chain(subA[0])), bridge(chain(subB[0])), bridge(chain(subA...)), bridge(chain(subB...)),
		bridge(chain(append(subA, "0000:19:00.0")...)), bridge(chain(append(subA, "0000:19:01.0")...)),
		bridge(chain(append(subB, "0000:1d:00.0")...)), bridge(chain(append(subB, "0000:1d:01.0")...)),
	}
	for _, gpu := range []struct{ addr, chain string }{
		{"0000:1a:00.0", chain(append(subA, "0000:19:00.0")...)},
		{"0000:1e:00.0", chain(append(subB, "0000:1d:00.0")...)},
	} {
		g.GPUs = append(g.GPUs, sysfixture.GPUFunction{Address: gpu.addr, Chain: gpu.chain, DeviceID: "0x20b0", Class: "0x030200",
			SubsystemID: "0x134f", Driver: "nvidia", CurSpeed: "16.0 GT/s PCIe", MaxSpeed: "16.0 GT/s PCIe", CurWidth: 16, MaxWidth: 16})
	}
	n.GPU = g
	return n
}

// The switch ids reach Relate through sysfs: a GPU and a NIC on the two
// sub-switches of a PEX88096 (the DGX A100's ids, nccl issue 1505) are PIX
// to NCCL, which flattens the chip's two levels; on a PLX switch they stay
// PXB, as nvidia-smi shows that board.
func TestGPUSourceFlattensBroadcomSwitches(t *testing.T) {
	for _, c := range []struct {
		name  string
		ids   [4]string
		cross node.PCIeRelation
	}{
		{"PEX88096", [4]string{"0x1000", "0xc010", "0x1000", "0xa096"}, node.RelationPIX},
		{"PLX PEX9797", [4]string{"0x10b5", "0x9797", "0x10b5", "0x9797"}, node.RelationPXB},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "node")
			if err := sysfixture.Write(root, twoLevelSwitchNode(c.ids)); err != nil {
				t.Fatal(err)
			}
			o := Options{SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"), Sources: []string{node.SourceRDMA, node.SourceGPU}}
			st := newTestReader(t, o).Read().Snapshot.GPU
			if st == nil || len(st.GPUs) != 2 || len(st.NICs) != 2 {
				t.Fatalf("GPU state: %+v", st)
			}
			if id := st.GPUs[0].Place.IDs["0000:16:00.0"]; id.Vendor == 0 {
				t.Errorf("switch ids not read: %v", st.GPUs[0].Place.IDs)
			}
			// The root port has no subsystem files here: an id that does not
			// read is left out, and that bridge is flattened by nobody.
			if _, ok := st.GPUs[0].Place.IDs["0000:15:01.0"]; ok {
				t.Errorf("root port without subsystem ids: %v", st.GPUs[0].Place.IDs)
			}
			if r := node.Relate(st.GPUs[0].Place, st.NICs[0].Place); r != node.RelationPIX {
				t.Errorf("GPU and NIC on one sub-switch: %v, want PIX", r)
			}
			if r := node.Relate(st.GPUs[0].Place, st.NICs[1].Place); r != c.cross {
				t.Errorf("GPU and NIC on two sub-switches: %v, want %v", r, c.cross)
			}
		})
	}
}
