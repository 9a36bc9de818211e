//go:build linux

package ethnl

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/mdlayher/genetlink"
	"golang.org/x/sys/unix"

	"github.com/roce-exporter/roce_exporter/internal/nlconn"
)

// Asks this kernel for the loopback's link state and FEC: the requests
// must be well formed (lo has a link; it has no FEC, which the kernel
// says with EOPNOTSUPP, not EINVAL).
func TestLiveKernel(t *testing.T) {
	c := New(nlconn.FamilyConfig{})
	defer c.Close()
	if _, err := net.InterfaceByName("lo"); err != nil {
		t.Skip(err)
	}
	ls, err := c.Linkstate("lo")
	if errors.Is(err, ErrNoFamily) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !ls.LinkKnown || !ls.Link {
		t.Errorf("lo link = %+v", ls)
	}
	if _, err := c.FEC("lo"); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("FEC(lo) = %v, want EOPNOTSUPP", err)
	}
	if _, err := c.ModuleEEPROM("lo", 0, 0, 0, 128); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("ModuleEEPROM(lo) = %v, want EOPNOTSUPP", err)
	}
	if _, err := c.Linkstate("no-such-if0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("Linkstate(missing) = %v, want ENODEV", err)
	}
}

// The numbers counted off ethtool_netlink.h are the ones x/sys/unix
// generates from it.
func TestNumbersMatchTheKernelHeader(t *testing.T) {
	for name, c := range map[string][2]int{
		"LINKSTATE_GET":            {msgLinkstateGet, unix.ETHTOOL_MSG_LINKSTATE_GET},
		"FEC_GET":                  {msgFECGet, unix.ETHTOOL_MSG_FEC_GET},
		"MODULE_EEPROM_GET":        {msgModuleEEPROMGet, unix.ETHTOOL_MSG_MODULE_EEPROM_GET},
		"LINKSTATE_GET_REPLY":      {msgLinkstateGetReply, unix.ETHTOOL_MSG_LINKSTATE_GET_REPLY},
		"FEC_GET_REPLY":            {msgFECGetReply, unix.ETHTOOL_MSG_FEC_GET_REPLY},
		"MODULE_EEPROM_GET_REPLY":  {msgModuleEEPROMGetReply, unix.ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY},
		"A_HEADER_DEV_NAME":        {aHeaderDevName, unix.ETHTOOL_A_HEADER_DEV_NAME},
		"A_HEADER_FLAGS":           {aHeaderFlags, unix.ETHTOOL_A_HEADER_FLAGS},
		"FLAG_STATS":               {flagStats, unix.ETHTOOL_FLAG_STATS},
		"A_LINKSTATE_LINK":         {aLinkstateLink, unix.ETHTOOL_A_LINKSTATE_LINK},
		"A_LINKSTATE_EXT_STATE":    {aLinkstateExtState, unix.ETHTOOL_A_LINKSTATE_EXT_STATE},
		"A_LINKSTATE_EXT_SUBSTATE": {aLinkstateExtSubstate, unix.ETHTOOL_A_LINKSTATE_EXT_SUBSTATE},
		"A_LINKSTATE_EXT_DOWN_CNT": {aLinkstateExtDownCnt, unix.ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %d here, %d in the header", name, c[0], c[1])
		}
	}
}

// A socket whose first dial fails is dialled again once the back-off has
// passed, and then answers.
func TestRecoversAfterFailedFirstDial(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	dials := 0
	c := New(nlconn.FamilyConfig{
		Retry: nlconn.Policy{Now: func() time.Time { return now }},
		Dial: func() (*genetlink.Conn, error) {
			dials++
			if dials == 1 {
				return nil, unix.EMFILE
			}
			return genetlink.Dial(nil)
		},
	})
	defer c.Close()
	if _, err := c.Linkstate("lo"); !errors.Is(err, unix.EMFILE) || !errors.Is(err, nlconn.ErrNotDialled) {
		t.Fatalf("first request: %v", err)
	}
	if _, err := c.Linkstate("lo"); !errors.Is(err, nlconn.ErrNotDialled) || dials != 1 {
		t.Fatalf("within the back-off: %v, %d dials", err, dials)
	}
	now = now.Add(nlconn.FirstWait)
	ls, err := c.Linkstate("lo")
	if errors.Is(err, ErrNoFamily) {
		t.Skip(err)
	}
	if err != nil || !ls.Link {
		t.Fatalf("after the back-off: %+v, %v", ls, err)
	}
}
