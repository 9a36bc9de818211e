package node

import (
	"reflect"
	"testing"
)

func TestParseProcLimitsMemlock(t *testing.T) {
	// fs/proc/base.c proc_pid_limits, as on Linux 6.x.
	text := []byte(`Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            1024                 524288               files     
Max locked memory         8388608              8388608              bytes     
Max address space         unlimited            unlimited            bytes     
`)
	soft, hard, err := ParseProcLimitsMemlock(text)
	if err != nil || soft != 8<<20 || hard != 8<<20 {
		t.Errorf("%v %v %v", soft, hard, err)
	}
	soft, hard, err = ParseProcLimitsMemlock([]byte("Max locked memory         unlimited            unlimited            bytes\n"))
	if err != nil || soft != Unlimited || hard != Unlimited {
		t.Errorf("unlimited: %v %v %v", soft, hard, err)
	}
	for _, bad := range []string{"", "Max locked memory\n", "Max locked memory  lots  lots  bytes\n"} {
		if _, _, err := ParseProcLimitsMemlock([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestHasCapability(t *testing.T) {
	// CapEff of root (all 41 capabilities), and of a process with only
	// CAP_NET_RAW (bit 13).
	if !HasCapability([]byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"), CapIPCLock) {
		t.Error("root lacks CAP_IPC_LOCK")
	}
	if HasCapability([]byte("CapEff:\t0000000000002000\n"), CapIPCLock) || HasCapability([]byte("CapEff:\tnothex\n"), CapIPCLock) || HasCapability(nil, CapIPCLock) {
		t.Error("CAP_IPC_LOCK where there is none")
	}
}

func TestParseLimitsConf(t *testing.T) {
	// RHEL's /etc/security/limits.d/rdma.conf and lines of limits.conf(5).
	got := ParseLimitsConf("rdma.conf", []byte(`# configuration for rdma tuning
*       soft    memlock         unlimited
*       hard    memlock         unlimited
@rdma   -       memlock         infinity
ftp     hard    nproc           0
bob     soft    memlock         65536   # KiB
carol   hard    memlock         -1
broken  soft    memlock
dave    maybe   memlock         1
eve     soft    memlock         12abc
`))
	want := []MemlockSetting{
		{File: "rdma.conf", Line: 2, Domain: "*", Type: "soft", Soft: Unlimited},
		{File: "rdma.conf", Line: 3, Domain: "*", Type: "hard", Hard: Unlimited},
		{File: "rdma.conf", Line: 4, Domain: "@rdma", Type: "-", Soft: Unlimited, Hard: Unlimited},
		{File: "rdma.conf", Line: 6, Domain: "bob", Type: "soft", Soft: 64 << 20},
		{File: "rdma.conf", Line: 7, Domain: "carol", Type: "hard", Hard: Unlimited},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParseSystemdMemlock(t *testing.T) {
	for text, want := range map[string]*MemlockSetting{
		"[Manager]\n#DefaultLimitMEMLOCK=8M\n":                                         nil,
		"[Manager]\nDefaultLimitMEMLOCK=infinity\n":                                    {File: "f", Line: 2, Soft: Unlimited, Hard: Unlimited},
		"[Manager]\nDefaultLimitMEMLOCK=64M:infinity\n":                                {File: "f", Line: 2, Soft: 64 << 20, Hard: Unlimited},
		"[Manager]\nDefaultLimitMEMLOCK=infinity\nDefaultLimitMEMLOCK=\n":              nil,
		"[Unit]\nDefaultLimitMEMLOCK=infinity\n":                                       nil,
		"[Manager]\nDefaultLimitNOFILE=1024\n  DefaultLimitMEMLOCK = 2G \n; comment\n": {File: "f", Line: 3, Soft: 2 << 30, Hard: 2 << 30},
	} {
		got, err := ParseSystemdMemlock("f", []byte(text))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v %v, want %+v", text, got, err, want)
		}
	}
	if _, err := ParseSystemdMemlock("f", []byte("[Manager]\nDefaultLimitMEMLOCK=lots\n")); err == nil {
		t.Error("a bad size is no error")
	}
}

func TestMemlockValueString(t *testing.T) {
	for v, want := range map[MemlockValue]string{Unlimited: "unlimited", 8 << 20: "8 MiB", 64 << 10: "64 KiB", 2 << 30: "2 GiB", 1000: "1000 bytes"} {
		if got := v.String(); got != want {
			t.Errorf("%d: %q, want %q", uint64(v), got, want)
		}
	}
}
