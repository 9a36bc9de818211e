package node

import "testing"

func TestRoCEActiveMTU(t *testing.T) {
	// iboe_get_mtu: 96 bytes of RoCE headers, rounded down to an IB MTU; 0 when not even 256 fits.
	for mtu, want := range map[int]int{9000: 4096, 4192: 4096, 4191: 2048, 4096: 2048, 1500: 1024, 1120: 1024, 1119: 512, 1100: 512, 352: 256, 351: 0, 300: 0} {
		if got := RoCEActiveMTU(mtu); got != want {
			t.Errorf("RoCEActiveMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}
