package dcbnl

// Netlink attribute layout for building test input by hand
// (include/uapi/linux/netlink.h: NLA_HDRLEN, NLA_ALIGN).
const nlaHeaderLen = 4

func nlaAlign(n int) int { return (n + 3) &^ 3 }

// Mask and PrioritiesForDSCP read decoded state the way the tests check
// it; nothing outside the tests needs them.

// Mask returns pfc_en as the kernel encodes it.
func (p *PFC) Mask() uint8 {
	var m uint8
	for i, on := range p.Enabled {
		if on {
			m |= 1 << i
		}
	}
	return m
}

// PrioritiesForDSCP returns the priorities the APP table assigns to a DSCP
// value, in table order. More than one is legal (802.1Q leaves it to the
// device); none means the device default applies.
func (i *IEEE) PrioritiesForDSCP(dscp uint8) []uint8 {
	var out []uint8
	for _, a := range i.Apps {
		if a.Selector == selDSCP && a.Protocol == uint16(dscp) {
			out = append(out, a.Priority)
		}
	}
	return out
}
