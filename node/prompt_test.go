package node

import (
	"reflect"
	"testing"
)

func TestPromptCommand(t *testing.T) {
	for _, tc := range []struct {
		line, tool string
		args       []string
		ok         bool
	}{
		{"$ sudo ethtool -m enP2s1f1np1 hex on", "ethtool", []string{"-m", "enP2s1f1np1", "hex", "on"}, true},
		{"# ethtool -m eth1 hex on offset 256", "ethtool", []string{"-m", "eth1", "hex", "on", "offset", "256"}, true},
		{"[root@gpu01 ~]# ethtool -m eth1 hex on", "ethtool", []string{"-m", "eth1", "hex", "on"}, true},
		{"root@lg-cmc-gpu-tf-prod-008:~# mlnx_qos -i ens4np0", "mlnx_qos", []string{"-i", "ens4np0"}, true},
		{"$mlnx_qos -i eth2", "mlnx_qos", []string{"-i", "eth2"}, true},
		{"user@h:~$ sudo -E /usr/sbin/ethtool -m eth0", "ethtool", []string{"-m", "eth0"}, true},
		{"~# ./devlink health", "devlink", []string{"health"}, true},
		{"ethtool -m eth0 hex on", "ethtool", []string{"-m", "eth0", "hex", "on"}, true},
		{"> # ethtool  -m eth2", "ethtool", nil, false}, // a quoted mail line: two prompt words
		{"Cannot get Module EEPROM data: run ethtool again", "ethtool", nil, false},
		{"0x0000:		03 04 07 10", "ethtool", nil, false},
		{"$ sudo ethtool -m eth0", "mlnx_qos", nil, false},
	} {
		args, ok := PromptCommand(tc.line, tc.tool)
		if ok != tc.ok || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("PromptCommand(%q, %q) = %q, %v; want %q, %v", tc.line, tc.tool, args, ok, tc.args, tc.ok)
		}
	}
}
