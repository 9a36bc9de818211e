package node

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The kernel's own words for a card limited by the port above it (dmesg,
// testdata/pcie-link): "<avail> Gb/s available PCIe bandwidth, limited by
// <speed> <width> link at <port> (capable of <cap> Gb/s with <speed> <width>
// link)". The same link read as the exporter reads it (the card's maximum,
// the port's maximum, LinkCapability) gives the kernel's two figures, and the
// port is the limit, not the card. (In the H100 capture the port named is a
// Gen4 switch's, whose downstream port above the GPU is Gen4 as well.)
func TestLinkCapabilityMatchesKernelLimitedBy(t *testing.T) {
	re := regexp.MustCompile(`(\S+): ([0-9.]+) Gb/s available PCIe bandwidth, limited by ([0-9.]+ GT/s(?: PCIe)?) x(\d+) link at (\S+) \(capable of ([0-9.]+) Gb/s with ([0-9.]+ GT/s(?: PCIe)?) x(\d+) link\)`)
	var lines int
	for _, name := range []string{"dmesg-gen5-gpu-limited-by-gen4-switch-h100-ml-engineering.txt", "dmesg-lspci-cx6dx-gen4-nic-in-gen3-x8-slot-l2fwd-nv-issue6.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "pcie-link", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			lines++
			avail, _ := strconv.ParseFloat(m[2], 64)
			capable, _ := strconv.ParseFloat(m[6], 64)
			portSpeed, err1 := ParsePCIeSpeed(m[3])
			cardSpeed, err2 := ParsePCIeSpeed(m[7])
			portWidth, _ := strconv.Atoi(m[4])
			cardWidth, _ := strconv.Atoi(m[8])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: %v %v", m[0], err1, err2)
			}
			f := &PCIFunction{Address: m[1], MaxSpeedGTs: cardSpeed, MaxWidth: cardWidth,
				Upstream: &PCIPort{Address: m[5], MaxSpeedGTs: portSpeed, MaxWidth: portWidth}}
			if got := PCIeBandwidth(cardSpeed, cardWidth) * 8 / 1e9; got != capable {
				t.Errorf("%s: card capable of %v Gb/s, kernel says %v", m[1], got, capable)
			}
			if got := f.LinkCapabilityBandwidth() * 8 / 1e9; got != avail {
				t.Errorf("%s: link capability %v Gb/s, kernel says %v available", m[1], got, avail)
			}
			if !f.UpstreamLimits() {
				t.Errorf("%s: the port above (%s) limits the link, UpstreamLimits says no", m[1], m[5])
			}
		}
	}
	if lines != 3 {
		t.Errorf("%d 'limited by' lines, want the 3 of the captures", lines)
	}
}

func TestLinkCapability(t *testing.T) {
	for _, c := range []struct {
		name     string
		f        PCIFunction
		speed    float64
		width    int
		upLimits bool
	}{
		{"no port above", PCIFunction{MaxSpeedGTs: 32, MaxWidth: 16}, 32, 16, false},
		{"Gen5 card, Gen4 slot", PCIFunction{MaxSpeedGTs: 32, MaxWidth: 16, Upstream: &PCIPort{MaxSpeedGTs: 16, MaxWidth: 16}}, 16, 16, true},
		{"x16 card, x8 slot", PCIFunction{MaxSpeedGTs: 32, MaxWidth: 16, Upstream: &PCIPort{MaxSpeedGTs: 32, MaxWidth: 8}}, 32, 8, true},
		{"Gen4 card, Gen5 slot", PCIFunction{MaxSpeedGTs: 16, MaxWidth: 16, Upstream: &PCIPort{MaxSpeedGTs: 32, MaxWidth: 16}}, 16, 16, false},
		{"port's capability unknown", PCIFunction{MaxSpeedGTs: 32, MaxWidth: 16, Upstream: &PCIPort{}}, 32, 16, false},
		{"card's capability unknown", PCIFunction{Upstream: &PCIPort{MaxSpeedGTs: 16, MaxWidth: 16}}, 16, 16, false},
	} {
		s, w := c.f.LinkCapability()
		if s != c.speed || w != c.width || c.f.UpstreamLimits() != c.upLimits {
			t.Errorf("%s: %v x%d, upstream limits %v; want %v x%d, %v", c.name, s, w, c.f.UpstreamLimits(), c.speed, c.width, c.upLimits)
		}
	}
}
