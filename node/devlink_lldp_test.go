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

func TestDevlinkInfoFirmware(t *testing.T) {
	for _, tc := range []struct {
		name                string
		running, stored     map[string]string
		component, run, sto string
		storedKnown         bool
	}{
		{"mlx5", map[string]string{"fw.version": "28.41.1000", "fw": "28.41.1000"}, map[string]string{"fw.version": "28.43.1014", "fw": "28.43.1014"}, "fw", "28.41.1000", "28.43.1014", true},
		{"mlx5 old", map[string]string{"fw.version": "16.26.0100"}, map[string]string{"fw.version": "16.26.0100"}, "fw.version", "16.26.0100", "16.26.0100", true},
		{"mlx5 unreadable stored", map[string]string{"fw": "22.41.0188"}, map[string]string{"fw": "255.255.65535"}, "fw", "22.41.0188", "", false},
		{"mlx5 zero stored", map[string]string{"fw": "22.41.0188"}, map[string]string{"fw": "0.0.0000"}, "fw", "22.41.0188", "", false},
		{"bnxt", map[string]string{"fw": "216.1.216.0", "fw.roce": "216.1.16.0"}, nil, "fw", "216.1.216.0", "", false},
		{"ice", map[string]string{"fw.mgmt": "6.1.2", "fw.undi": "1.2992.0"}, map[string]string{"fw.undi": "1.2992.0"}, "fw.mgmt", "6.1.2", "", false},
		{"roce only", map[string]string{"fw.roce": "216.1.16.0"}, nil, "", "", "", false},
	} {
		i := &DevlinkInfo{Running: tc.running, Stored: tc.stored}
		c, v := i.Firmware()
		s, ok := i.StoredFirmware()
		if c != tc.component || v != tc.run || s != tc.sto || ok != tc.storedKnown {
			t.Errorf("%s: %q %q stored %q %v; want %q %q stored %q %v", tc.name, c, v, s, ok, tc.component, tc.run, tc.sto, tc.storedKnown)
		}
	}
}

// Every operational MAU type name of lldpd's table (src/lib/atoms/port.c)
// that carries a speed, in its spellings, and the ones that do not.
func TestLLDPMAUSpeed(t *testing.T) {
	for mau, want := range map[string]int{
		"400GbaseDR4 - 400GBASE-R PCS/PMA over 4-lane single-mode fiber PMD":          400000,
		"100GbaseCR4 - 100GBASE-R PCS/PMA over 4 lane shielded copper balanced cable": 100000,
		"10GbaseT - Four-pair Category 6A or better, full duplex mode only":           10000,
		"1000BaseTFD - Four-pair Category 5 UTP, full duplex mode":                    1000,
		"1000baseKX - 1000BASE-KX PCS/PMA over an electrical backplane":               1000,
		"10GigBaseSR - R PCS/PMA, 850 nm serial PMD":                                  10000,
		"2p5GigT - 2.5GBASE-T PCS/PMA over 4 twisted pairs of Category 5e":            2500,
		"2p5GbaseX - 2.5GBASE-X PCS/PMA over 1 lane":                                  2500,
		"5GigT - 5GBASE-T PCS/PMA over 4 twisted pairs of Category 5e":                5000,
		"10GpassXR - 10GPASS-XR: 10 Gb/s EPoC over coax":                              10000,
		"25GbaseCR - 25GBASE-R PCS/PMA over shielded balanced copper cable":           25000,
		"10baseT1L - 10BASE-T1L Single balanced pair PHY including MDI, Long reach":   10,
		"unknown": -1,
		"10G1GbasePRXD1 - One single-mode fiber EPON OLT": -1,
		"2BaseTL - Voice grade UTP copper":                2,
		"":                                                -1,
	} {
		got, ok := (&LLDPMACPHY{MAU: mau}).SpeedMbps()
		if want < 0 && ok || want >= 0 && (!ok || got != want) {
			t.Errorf("%q: %d %v, want %d", mau, got, ok, want)
		}
	}
}
