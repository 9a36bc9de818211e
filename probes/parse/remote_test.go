package parse

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoteGIDAddress(t *testing.T) {
	out := []byte(` local address: LID 0000 QPN 0x0108 PSN 0x8f3bc8 RKey 0x1fff00 VAddr 0x007f5e3c1fe000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:11
 remote address: LID 0000 QPN 0x0109 PSN 0x7ba2b4 RKey 0x1fff00 VAddr 0x007fb0e5fff000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:12
`)
	a, ok := RemoteGIDAddress(out)
	if !ok || a.String() != "192.168.100.12" {
		t.Fatalf("got %v %v, want the remote 192.168.100.12 (not the local GID)", a, ok)
	}
	for _, bad := range []string{
		"remote address: LID 0x02 QPN 0x0049\n",                                      // IB: no GID
		"remote address: x\n GID: 254:128:00:00:00:00:00:00:1:2:3:4:5:6:7:8\n",       // link-local IPv6
		"remote address: x\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:999:1:1:1\n", // garbage
	} {
		if a, ok := RemoteGIDAddress([]byte(bad)); ok {
			t.Errorf("%q: got %v", bad, a)
		}
	}
	// Real outputs from the testdata: none crash, IB ones have no GID.
	files, _ := filepath.Glob(filepath.Join("testdata", "perftest_*.txt"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		RemoteGIDAddress(b)
	}
}

func FuzzRemoteGIDAddress(f *testing.F) {
	f.Add([]byte("remote address: LID 0\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:12\n"))
	f.Fuzz(func(t *testing.T, b []byte) { RemoteGIDAddress(b) })
}
