package node

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The captures under testdata/pcie-topology (PROVENANCE.md there) give the
// shapes: nvidia-smi topo -m of three real boards, and NCCL's (and RCCL's)
// own reading of two trees with Broadcom PEX switches in them.

// Broadcom PEX ids as NCCL matches them (src/graph/topo.cc, getBcmGen).
// pex88 is the PEX88096 of the DGX A100 and of the MI300 board in
// rccl-topo-xml-*.xml (1000:c010, subsystem 1000:a096); the PEX89xxx
// subsystem ids are NCCL's mask (0x0xxx at the top level, 0x1xxx below),
// as no capture of a Gen5 switch's ids was found.
var (
	pex88     = PCIID{0x1000, 0xc010, 0x1000, 0xa096}
	pex89Top  = PCIID{0x1000, 0xc030, 0x1000, 0x0100}
	pex89Sub  = PCIID{0x1000, 0xc030, 0x1000, 0x1100}
	plx9797   = PCIID{0x10b5, 0x9797, 0x10b5, 0x9797}
	pex88NVID = PCIID{0x1000, 0xc010, 0x10de, 0x13b8} // NVIDIA-branded: not flattened
	pex88Zero = PCIID{0x1000, 0xc010, 0x1000, 0x0000}
)

// tree builds places the way sysfs would hold them: each switch is an
// upstream port whose downstream ports lead on, so a function below
// switches s1 (top) … sn sits at rp/s1/d1/…/sn/dn/function. The downstream
// ports, which NCCL skips, get addresses of their own in domain ffff so
// they never meet a real one.
type tree struct {
	host string
	numa int
	ids  map[string]PCIID
	dsp  int
}

func (tr *tree) place(dev string, switchesTopFirst ...string) PCIPlace {
	path := []string{fmt.Sprintf("ffff:%02x:00.0", tr.dsp)}
	tr.dsp++
	for _, s := range switchesTopFirst {
		path = append(path, s, fmt.Sprintf("ffff:%02x:00.0", tr.dsp))
		tr.dsp++
	}
	return PCIPlace{Host: tr.host, Path: append(path, dev), NUMANode: tr.numa, IDs: tr.ids}
}

func idsOf(id PCIID, addrs ...string) map[string]PCIID {
	m := map[string]PCIID{}
	for _, a := range addrs {
		m[a] = id
	}
	return m
}

// A GPU and a NIC on two sub-switches of one Broadcom PEX chip: PXB to
// nvidia-smi, which reads the tree as it is, and PIX to NCCL, which merges
// the chip's second level into its first (Gen4 since NCCL 2.9.6, Gen5 since
// 2.20.3). Any other switch, or a PEX chip with other subsystem ids (the
// NVIDIA-branded one of issue 1053), keeps its levels.
func TestRelateFlattensBroadcomSwitches(t *testing.T) {
	const top, subA, subB = "0000:31:00.0", "0000:33:00.0", "0000:40:00.0"
	for _, c := range []struct {
		name string
		ids  map[string]PCIID
		want PCIeRelation
	}{
		{"no ids read", nil, RelationPXB},
		{"PEX88xxx (Gen4)", idsOf(pex88, top, subA, subB), RelationPIX},
		{"PEX89xxx (Gen5)", map[string]PCIID{top: pex89Top, subA: pex89Sub, subB: pex89Sub}, RelationPIX},
		{"PEX89xxx sub-switch ids at the top", map[string]PCIID{top: pex89Sub, subA: pex89Sub, subB: pex89Sub}, RelationPXB},
		{"PEX89xxx top-level ids below", map[string]PCIID{top: pex89Top, subA: pex89Top, subB: pex89Top}, RelationPXB},
		{"Gen4 top over Gen5 subs", map[string]PCIID{top: pex88, subA: pex89Sub, subB: pex89Sub}, RelationPXB},
		{"PLX PEX9797", idsOf(plx9797, top, subA, subB), RelationPXB},
		{"NVIDIA-branded PEX88xxx", idsOf(pex88NVID, top, subA, subB), RelationPXB},
		{"only one sub-switch is Broadcom's", map[string]PCIID{top: pex88, subA: pex88, subB: plx9797}, RelationPXB},
	} {
		tr := &tree{host: "pci0000:30", numa: 0, ids: c.ids}
		gpu := tr.place("0000:35:00.0", top, subA)
		nic := tr.place("0000:42:00.0", top, subB)
		if got := Relate(gpu, nic); got != c.want {
			t.Errorf("%s: Relate = %v, want %v", c.name, got, c.want)
		}
		if got := Relate(nic, gpu); got != c.want {
			t.Errorf("%s, reversed: Relate = %v, want %v", c.name, got, c.want)
		}
	}

	// A third level stays a level: the chip's own two are one.
	tr := &tree{host: "pci0000:30", ids: idsOf(pex88, top, subA, subB, "0000:50:00.0")}
	deep := tr.place("0000:52:00.0", top, subA, "0000:50:00.0")
	nic := tr.place("0000:42:00.0", top, subB)
	if got := Relate(deep, nic); got != RelationPXB {
		t.Errorf("three PEX88xxx levels: %v, want PXB", got)
	}
}

// NCCL's own topology print (NCCL_DEBUG=INFO, issue 1053) of a GPU under two
// PEX88xxx levels whose subsystem ids are 1000:0000 and 10de:13b8: NCCL kept
// both levels (PCI/1000 above PCI/5000 above GPU/7000), since its Gen4 match
// wants subsystem 1000:axxx. The same tree with the DGX A100's ids has one.
func TestFlattenAgreesWithNCCLsPrint(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join("testdata", "pcie-topology", "nccl-topo-dump-pex-c010-nvidia-subsystem-issue1053.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// "+ PCI[24.0] - PCI/1000 (1000c01010000000)": NCCL's busid as a number
	// (bus 0x10 device 0 function 0) and its packed id.
	levels := regexp.MustCompile(`- PCI/([0-9a-f]+) \(([0-9a-f]{16})\)`).FindAllStringSubmatch(string(dump), -1)
	if len(levels) != 2 {
		t.Fatalf("want the two PCI levels of the capture, got %v", levels)
	}
	ids := map[string]PCIID{}
	var chainTopFirst []string
	for _, l := range levels {
		var busid, packed uint64
		fmt.Sscanf(l[1], "%x", &busid)
		fmt.Sscanf(l[2], "%x", &packed)
		addr := fmt.Sprintf("0000:%02x:%02x.%d", busid>>8, busid>>3&0x1f, busid&7)
		id := PCIID{uint16(packed >> 48), uint16(packed >> 32), uint16(packed >> 16), uint16(packed)}
		if id.ncclDevice() != packed {
			t.Fatalf("%s: packed %x, ncclDevice %x", addr, packed, id.ncclDevice())
		}
		ids[addr] = id
		chainTopFirst = append(chainTopFirst, addr)
	}
	if want := []string{"0000:10:00.0", "0000:50:00.0"}; !slices.Equal(chainTopFirst, want) {
		t.Fatalf("levels %v, want %v", chainTopFirst, want)
	}
	if ids["0000:10:00.0"] != pex88Zero || ids["0000:50:00.0"] != pex88NVID {
		t.Fatalf("ids %v", ids)
	}
	tr := &tree{host: "pci0000:00", ids: ids}
	gpu := tr.place("0000:70:00.0", chainTopFirst...)
	if got, _ := flattenBcmSwitches(gpu, gpu); !slices.Equal(got, []string{"0000:50:00.0", "0000:10:00.0"}) {
		t.Errorf("NCCL printed two levels above GPU/7000; flattened chain %v", got)
	}
	tr = &tree{host: "pci0000:00", ids: idsOf(pex88, chainTopFirst...)}
	gpu = tr.place("0000:70:00.0", chainTopFirst...)
	if got, _ := flattenBcmSwitches(gpu, gpu); !slices.Equal(got, []string{"0000:10:00.0"}) {
		t.Errorf("with subsystem 1000:a096 the two levels are one switch to NCCL; chain %v", got)
	}
}

// xmlPCI is a <pci> node of an NCCL/RCCL topology dump.
type xmlPCI struct {
	BusID     string   `xml:"busid,attr"`
	Vendor    string   `xml:"vendor,attr"`
	Device    string   `xml:"device,attr"`
	SubVendor string   `xml:"subsystem_vendor,attr"`
	SubDevice string   `xml:"subsystem_device,attr"`
	Subs      []xmlPCI `xml:"pci"`
	GPU       *struct {
		Dev string `xml:"dev,attr"`
	} `xml:"gpu"`
	Nets []struct {
		Name string `xml:"name,attr"`
	} `xml:"nic>net"`
}

// topoXML reads a topology dump into one place per GPU ("gpu0") and NIC
// ("mlx5_0"): the <pci> nesting is NCCL's own reading of sysfs before the
// flattening, each nested bridge one switch level.
func topoXML(t *testing.T, name string) map[string]PCIPlace {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pcie-topology", name))
	if err != nil {
		t.Fatal(err)
	}
	var sys struct {
		CPUs []struct {
			NUMA string   `xml:"numaid,attr"`
			PCIs []xmlPCI `xml:"pci"`
		} `xml:"cpu"`
	}
	if err := xml.Unmarshal(b, &sys); err != nil {
		t.Fatal(err)
	}
	out := map[string]PCIPlace{}
	for _, cpu := range sys.CPUs {
		var numa int
		fmt.Sscan(cpu.NUMA, &numa)
		tr := &tree{host: "pci-numa" + cpu.NUMA + ":00", numa: numa, ids: map[string]PCIID{}}
		var walk func(p xmlPCI, above []string)
		walk = func(p xmlPCI, above []string) {
			if p.GPU != nil {
				out["gpu"+p.GPU.Dev] = tr.place(p.BusID, above...)
			}
			for _, n := range p.Nets {
				out[n.Name] = tr.place(p.BusID, above...)
			}
			if len(p.Subs) == 0 {
				return
			}
			id, err := ParsePCIID(p.Vendor, p.Device, p.SubVendor, p.SubDevice)
			if err != nil {
				t.Fatalf("%s: %v", p.BusID, err)
			}
			tr.ids[p.BusID] = id
			for _, s := range p.Subs {
				walk(s, append(slices.Clone(above), p.BusID))
			}
		}
		for _, p := range cpu.PCIs {
			walk(p, nil)
		}
	}
	return out
}

// An MI300 board's RCCL dump (RCCL reads sysfs with NCCL's code): per
// socket a PEX88096 (1000:c010/1000:a096) whose sub-switches hold the GPUs,
// each behind an AMD bridge of its own (1d94:23b7), and a ConnectX-7. The
// Broadcom levels merge, the AMD bridge stays: every GPU is PXB to its
// socket's NIC, SYS to the other's; the ConnectX-4 Lx on NUMA node 5 is SYS
// to every GPU.
func TestRelateOnRCCLTopologyDump(t *testing.T) {
	pl := topoXML(t, "rccl-topo-xml-broadcom-pex88xxx-c010-mi300-issue1185.xml")
	if len(pl) != 14 {
		t.Fatalf("read %d GPUs and NICs, want 8 + 6", len(pl))
	}
	for _, c := range []struct {
		a, b string
		want PCIeRelation
	}{
		{"gpu0", "mlx5_0", RelationPXB},
		{"gpu3", "mlx5_0", RelationPXB},
		{"gpu6", "mlx5_4", RelationPXB},
		{"gpu4", "mlx5_0", RelationSYS},
		{"gpu0", "mlx5_2", RelationSYS},
	} {
		if got := Relate(pl[c.a], pl[c.b]); got != c.want {
			t.Errorf("%s-%s: %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// What the flattening did: the sub-switch 0000:bb:00.0 above GPU 6 and
	// mlx5_4 is one switch with the top level 0000:b1:00.0.
	g, n := flattenBcmSwitches(pl["gpu6"], pl["mlx5_4"])
	if !slices.Equal(g, []string{"0000:bd:00.0", "0000:b1:00.0"}) || !slices.Equal(n, []string{"0000:b1:00.0"}) {
		t.Errorf("flattened chains: gpu6 %v, mlx5_4 %v", g, n)
	}
}

// topoMatrix reads the full GPU rows of an nvidia-smi topo -m capture:
// relation by GPU and NIC column name.
func topoMatrix(t *testing.T, name string) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pcie-topology", name))
	if err != nil {
		t.Fatal(err)
	}
	dev := regexp.MustCompile(`^(GPU|NIC|mlx5_)\d+$`)
	var cols []string
	out := map[string]map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case cols == nil && dev.MatchString(f[0]) && f[0] == "GPU0" && len(f) > 1 && dev.MatchString(f[1]):
			for _, c := range f {
				if !dev.MatchString(c) {
					break
				}
				cols = append(cols, c)
			}
		case cols != nil && dev.MatchString(f[0]) && len(f) > len(cols):
			row := map[string]string{}
			for i, c := range cols {
				if !strings.HasPrefix(c, "GPU") {
					row[c] = f[1+i]
				}
			}
			out[f[0]] = row
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rows", name)
	}
	return out
}

// ncclWord is what NCCL calls a relation nvidia-smi names, on a board
// without Broadcom PEX switches (which would make some of its PXB PIX).
func ncclWord(smi string) string {
	if smi == "NODE" {
		return "PHB"
	}
	return smi
}

// Three real boards' nvidia-smi topo -m, rebuilt as PCI trees of the same
// shape (no Broadcom PEX ids): Relate gives nvidia-smi's word for every
// GPU-NIC cell of the captured rows, except NODE, which NCCL calls PHB.
func TestRelateMatchesRealTopologies(t *testing.T) {
	for _, c := range []struct {
		capture string
		places  func() map[string]PCIPlace
	}{
		// H100, 6 NICs (issue 1737): GPU0 and NIC0 share a switch, GPU2 and
		// NIC1 another; GPU1's switch has no NIC; NIC2 and NIC3 hang off other
		// host bridges of socket 0; NIC4 and NIC5 are on socket 1.
		{"topo-m-pix-node-sys-h100-nccl-issue1737.txt", func() map[string]PCIPlace {
			s0a := &tree{host: "pci0000:15", numa: 0}
			s0b := &tree{host: "pci0000:37", numa: 0}
			s0c := &tree{host: "pci0000:48", numa: 0}
			s0d := &tree{host: "pci0000:59", numa: 0}
			s0e := &tree{host: "pci0000:6a", numa: 0}
			s1 := &tree{host: "pci0000:97", numa: 1}
			return map[string]PCIPlace{
				"GPU0": s0a.place("0000:18:00.0", "0000:16:00.0"),
				"NIC0": s0a.place("0000:19:00.0", "0000:16:00.0"),
				"GPU1": s0b.place("0000:3a:00.0", "0000:38:00.0"),
				"GPU2": s0c.place("0000:4b:00.0", "0000:49:00.0"),
				"NIC1": s0c.place("0000:4c:00.0", "0000:49:00.0"),
				"NIC2": s0d.place("0000:5a:00.0"),
				"NIC3": s0e.place("0000:6b:00.0"),
				"NIC4": s1.place("0000:98:00.0"),
				"NIC5": s1.place("0000:99:00.0"),
			}
		}},
		// 16 GPUs, 10 NICs (nccl-tests issue 78): one switch with two
		// sub-switches, GPU0, GPU1 and mlx5_0 on one, GPU2, GPU3 and mlx5_1 on
		// the other; mlx5_2 and mlx5_3 on other host bridges of the socket,
		// mlx5_4 to mlx5_9 on the other socket.
		{"topo-m-pix-pxb-node-sys-16gpu-nccl-tests-issue78.txt", func() map[string]PCIPlace {
			const top, a, b = "0000:16:00.0", "0000:18:00.0", "0000:1c:00.0"
			s0 := &tree{host: "pci0000:15", numa: 0}
			s0b := &tree{host: "pci0000:3a", numa: 0}
			s1 := &tree{host: "pci0000:b0", numa: 1}
			p := map[string]PCIPlace{
				"GPU0": s0.place("0000:1a:00.0", top, a), "GPU1": s0.place("0000:1b:00.0", top, a),
				"mlx5_0": s0.place("0000:19:00.0", top, a),
				"GPU2":   s0.place("0000:1e:00.0", top, b), "GPU3": s0.place("0000:1f:00.0", top, b),
				"mlx5_1": s0.place("0000:1d:00.0", top, b),
				"mlx5_2": s0b.place("0000:3b:00.0"), "mlx5_3": s0b.place("0000:3c:00.0"),
			}
			for i := 4; i <= 9; i++ {
				p[fmt.Sprintf("mlx5_%d", i)] = s1.place(fmt.Sprintf("0000:b%d:00.0", i))
			}
			return p
		}},
		// H800, 18 NICs (DeepEP issue 145): GPU0, GPU1 and NIC0-3 below one
		// two-level switch, none of the NICs on a GPU's own sub-switch; GPU2,
		// GPU3 and NIC6-9 below another; NIC4 and NIC5 on host bridges of
		// their own; NIC10-17 on socket 1.
		{"topo-m-pxb-node-sys-h100-18nic-deepep-issue145.txt", func() map[string]PCIPlace {
			s0 := &tree{host: "pci0000:15", numa: 0}
			s0b := &tree{host: "pci0000:37", numa: 0}
			s0c := &tree{host: "pci0000:48", numa: 0}
			s1 := &tree{host: "pci0000:97", numa: 1}
			p := map[string]PCIPlace{
				"GPU0": s0.place("0000:1a:00.0", "0000:16:00.0", "0000:18:00.0"),
				"GPU1": s0.place("0000:1b:00.0", "0000:16:00.0", "0000:18:00.0"),
				"GPU2": s0b.place("0000:3c:00.0", "0000:38:00.0", "0000:3a:00.0"),
				"GPU3": s0b.place("0000:3d:00.0", "0000:38:00.0", "0000:3a:00.0"),
				"NIC4": s0c.place("0000:49:00.0"), "NIC5": s0c.place("0000:4a:00.0"),
			}
			for i := 0; i < 4; i++ {
				p[fmt.Sprintf("NIC%d", i)] = s0.place(fmt.Sprintf("0000:2%d:00.0", i), "0000:16:00.0", "0000:20:00.0")
				p[fmt.Sprintf("NIC%d", i+6)] = s0b.place(fmt.Sprintf("0000:4%d:00.0", i), "0000:38:00.0", "0000:40:00.0")
			}
			for i := 10; i <= 17; i++ {
				p[fmt.Sprintf("NIC%d", i)] = s1.place(fmt.Sprintf("0000:a%x:00.0", i))
			}
			return p
		}},
	} {
		t.Run(c.capture, func(t *testing.T) {
			pl := c.places()
			cells := 0
			for gpu, row := range topoMatrix(t, c.capture) {
				for nic, smi := range row {
					g, okG := pl[gpu]
					n, okN := pl[nic]
					if !okG || !okN {
						t.Fatalf("%s or %s not in the rebuilt tree", gpu, nic)
					}
					if got := Relate(g, n).String(); got != ncclWord(smi) {
						t.Errorf("%s-%s: Relate %s, nvidia-smi %s (NCCL %s)", gpu, nic, got, smi, ncclWord(smi))
					}
					cells++
				}
			}
			if cells < 18 {
				t.Errorf("only %d cells compared", cells)
			}
		})
	}
}

// The 16-GPU board of issue 78 as NCCL would see it were its two switch
// levels a PEX88xxx: the PXB cells become PIX, nothing else moves.
func TestRelateTopologyWithPEX88Levels(t *testing.T) {
	const top, a, b = "0000:16:00.0", "0000:18:00.0", "0000:1c:00.0"
	s0 := &tree{host: "pci0000:15", numa: 0, ids: idsOf(pex88, top, a, b)}
	gpu0 := s0.place("0000:1a:00.0", top, a)
	mlx0 := s0.place("0000:19:00.0", top, a)
	mlx1 := s0.place("0000:1d:00.0", top, b)
	if r := Relate(gpu0, mlx1); r != RelationPIX {
		t.Errorf("GPU0-mlx5_1 (nvidia-smi PXB): %v, want PIX", r)
	}
	if r := Relate(gpu0, mlx0); r != RelationPIX {
		t.Errorf("GPU0-mlx5_0: %v, want PIX", r)
	}
}

func TestParsePCIID(t *testing.T) {
	id, err := ParsePCIID("0x1000", "0xc010", "0x1000", "0xa096")
	if err != nil || id != pex88 || id.ncclDevice() != 0x1000c0101000a096 {
		t.Errorf("PEX88096: %v %x %v", id, id.ncclDevice(), err)
	}
	for _, bad := range [][4]string{
		{"1000", "0xc010", "0x1000", "0xa096"},
		{"0x1000", "0xc010", "0x1000", "0x1a096"},
		{"0x1000", "0xc010", "", "0xa096"},
		{"0x1000", "0xzz", "0x1000", "0xa096"},
	} {
		if _, err := ParsePCIID(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
