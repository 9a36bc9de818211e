package sysfixture

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Module is a CMIS 400G module in a NIC's cage, as `ethtool -m` reads it.
type Module struct {
	// Identifier is 0x19 (OSFP) or 0x1e (QSFP112: "QSFP+ or later with
	// CMIS").
	Identifier          byte
	Vendor, PN, Rev, SN string
	TempC, Vcc          float64
	// Per media lane, in mW and mA.
	RxPowerMW, TxPowerMW, BiasMA []float64
}

// DefaultModule is the OSFP 400GBASE-SR4 optic of a ConnectX-7 OSFP card
// (NVIDIA MMA4Z00-NS400), healthy: 4 lanes around +0.4 dBm received.
func DefaultModule(rail int) *Module {
	return &Module{
		Identifier: 0x19, Vendor: "NVIDIA", PN: "MMA4Z00-NS400", Rev: "A5",
		SN:    fmt.Sprintf("MT2330FT%05d", 1207+rail),
		TempC: 44.5 + 0.75*float64(rail), Vcc: 3.2912,
		RxPowerMW: []float64{1.0965, 1.1220, 1.0471, 1.0715},
		TxPowerMW: []float64{1.3183, 1.2882, 1.3490, 1.3032},
		BiasMA:    []float64{7.912, 8.104, 7.856, 8.020},
	}
}

// QSFP112Module is the same optic in the QSFP112 form factor.
func QSFP112Module(rail int) *Module {
	m := DefaultModule(rail)
	m.Identifier, m.PN = 0x1e, "MMA1Z00-NS400"
	return m
}

func put16(b []byte, off int, v float64) { binary.BigEndian.PutUint16(b[off:], uint16(math.Round(v))) }

// pages lays the module out as CMIS 5 defines it: lower page, upper pages
// 00h (identity), 01h (which monitors exist), 02h (thresholds) and 11h
// (lane monitors). The thresholds are real modules' published ones:
// temperature, Vcc, Tx and Rx power of an Arista QDD-400G-XDR4 (`ethtool
// -m` on netdev, Oct 2024), laser bias of a Teraspek SR4 (a VCSEL's mA
// range, AsterNOS transceiver documentation).
func (m *Module) pages() (lower []byte, upper map[byte][]byte) {
	lower = make([]byte, 128)
	lower[0] = m.Identifier
	lower[1] = 0x50 // CMIS 5.0
	lower[3] = 0x03 << 1
	binary.BigEndian.PutUint16(lower[14:], uint16(int16(math.Round(m.TempC*256))))
	put16(lower, 16, m.Vcc*1e4)
	lower[85] = 0x01                          // multimode fibre
	lower[86], lower[87] = 0x4f, 0x03         // 400GAUI-4 C2M / 400GBASE-SR4
	lower[88] = 4<<4 | byte(len(m.RxPowerMW)) // host lanes / media lanes
	lower[89] = 0x01
	p0 := make([]byte, 128)
	p0[0] = m.Identifier
	copy(p0[1:17], fmt.Sprintf("%-16s", m.Vendor))
	copy(p0[17:20], []byte{0x00, 0x02, 0xc9})
	copy(p0[20:36], fmt.Sprintf("%-16s", m.PN))
	copy(p0[36:38], fmt.Sprintf("%-2s", m.Rev))
	copy(p0[38:54], fmt.Sprintf("%-16s", m.SN))
	copy(p0[54:62], "230726  ")
	p0[75] = 0x0c // MPO 1x12
	p1 := make([]byte, 128)
	p1[159-128] = 0x03 // temperature and Vcc monitored
	p1[160-128] = 0x07 // bias, Tx and Rx power monitored, bias x1
	p2 := make([]byte, 128)
	thr := func(off int, vals [4]float64, scale float64, signed bool) {
		for i, v := range vals {
			if signed {
				binary.BigEndian.PutUint16(p2[off+2*i:], uint16(int16(math.Round(v*scale))))
			} else {
				put16(p2, off+2*i, v*scale)
			}
		}
	}
	thr(0, [4]float64{75, -5, 70, 0}, 256, true)                    // temperature
	thr(8, [4]float64{3.63, 3.05, 3.465, 3.135}, 1e4, false)        // Vcc
	thr(48, [4]float64{3.5481, 0.4074, 2.8184, 0.5129}, 1e4, false) // Tx power, 0.1 uW
	thr(56, [4]float64{10, 2, 8.5, 3}, 500, false)                  // bias, 2 uA
	thr(64, [4]float64{3.5481, 0.1288, 2.8184, 0.2042}, 1e4, false) // Rx power
	p11 := make([]byte, 128)
	for i := range m.RxPowerMW {
		put16(p11, 154-128+2*i, m.TxPowerMW[i]*1e4)
		put16(p11, 170-128+2*i, m.BiasMA[i]*500)
		put16(p11, 186-128+2*i, m.RxPowerMW[i]*1e4)
	}
	return lower, map[byte][]byte{0x00: p0, 0x01: p1, 0x02: p2, 0x11: p11}
}

// hexDump prints data as ethtool's dump_hex does.
func hexDump(b *strings.Builder, data []byte, offset int) {
	b.WriteString("Offset\t\tValues\n------\t\t------")
	for i, v := range data {
		if i%16 == 0 {
			fmt.Fprintf(b, "\n0x%04x:\t\t", i+offset)
		}
		fmt.Fprintf(b, "%02x ", v)
	}
	b.WriteString("\n")
}

// ethtoolModule renders the module capture: `ethtool -m <if> hex on` (the
// lower page over netlink), then one `page N offset 0x80 hex on` per upper
// page, each after the command that printed it.
func ethtoolModule(netdev string, m *Module) string {
	lower, upper := m.pages()
	var b strings.Builder
	fmt.Fprintf(&b, "$ ethtool -m %s hex on\n", netdev)
	hexDump(&b, lower, 0)
	for _, pg := range []byte{0x00, 0x01, 0x02, 0x11} {
		fmt.Fprintf(&b, "$ ethtool -m %s page 0x%02x offset 0x80 hex on\n", netdev, pg)
		hexDump(&b, upper[pg], 0x80)
	}
	return b.String()
}

// ethtoolShowFEC renders `ethtool -I --show-fec <if>` of an mlx5 port in
// RS-FEC: mlx5 reports the per-lane corrected and uncorrectable blocks.
func ethtoolShowFEC(netdev string, corrected, uncorrectable uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FEC parameters for %s:\nSupported/Configured FEC encodings: Auto\nActive FEC encoding: RS\nStatistics:\n", netdev)
	counter := func(name string, total uint64) {
		fmt.Fprintf(&b, "  %s: %d\n", name, total)
		lanes := []uint64{total / 4, total / 4, total / 4, total - 3*(total/4)}
		for i, l := range lanes {
			fmt.Fprintf(&b, "    Lane %d: %d\n", i, l)
		}
	}
	counter("corrected_blocks", corrected)
	counter("uncorrectable_blocks", uncorrectable)
	return b.String()
}

// ethtoolLink renders the "Link detected" part of `ethtool <if>`, with
// the driver's reason for a link that is down (ethtool's wording).
func ethtoolLink(netdev string, up bool, reason string) string {
	s := fmt.Sprintf("Settings for %s:\n\tLink detected: yes\n", netdev)
	if !up {
		s = fmt.Sprintf("Settings for %s:\n\tLink detected: no", netdev)
		if reason != "" {
			s += " (" + reason + ")"
		}
		s += "\n"
	}
	return s
}
