package node

import "testing"

func TestPCIOfHandle(t *testing.T) {
	for in, want := range map[string]string{
		"pci/0000:18:00.0":       "0000:18:00.0",
		"pci/0000:18:00.0/65535": "0000:18:00.0",
		"netdevsim/netdevsim1":   "",
		"pci":                    "",
	} {
		if got := PCIOfHandle(in); got != want {
			t.Errorf("PCIOfHandle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNeighbourNames(t *testing.T) {
	for _, c := range []struct {
		n          LLDPNeighbor
		sw, swPort string
	}{
		{LLDPNeighbor{ChassisName: "leaf-3", ChassisID: "b8:ce:f6:13:00:00", PortID: "Ethernet12", PortIDType: "ifname", PortDescr: "etp2"}, "leaf-3", "Ethernet12"},
		{LLDPNeighbor{ChassisName: "leaf-3", PortID: "swp12", PortIDType: "local"}, "leaf-3", "swp12"},
		// A MAC port ID says nothing on a faceplate: the description does.
		{LLDPNeighbor{ChassisID: "b8:ce:f6:13:00:00", PortID: "b8:ce:f6:13:00:0c", PortIDType: "mac", PortDescr: "Ethernet12"}, "b8:ce:f6:13:00:00", "Ethernet12"},
		{LLDPNeighbor{ChassisID: "b8:ce:f6:13:00:00", PortID: "b8:ce:f6:13:00:0c", PortIDType: "mac"}, "b8:ce:f6:13:00:00", "b8:ce:f6:13:00:0c"},
	} {
		if sw, p := c.n.Switch(), c.n.SwitchPort(); sw != c.sw || p != c.swPort {
			t.Errorf("%+v: %q %q, want %q %q", c.n, sw, p, c.sw, c.swPort)
		}
	}
}
