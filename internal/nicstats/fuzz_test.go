package nicstats

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func addFixtures(f *testing.F, glob string) {
	paths, err := filepath.Glob(filepath.Join("testdata", glob))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseStatistics(f *testing.F) {
	addFixtures(f, "*-ethtool-S.txt")
	f.Add([]byte("NIC statistics:\n     [0]: rx_bytes: 1\n     x: : 2\n"))
	f.Add([]byte("NIC statistics:\n:\n : \n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		st, err := ParseStatistics(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(st.Names) == 0 || len(st.Names) != len(st.Values) || st.Skipped < 0 {
			t.Fatalf("inconsistent result: %d names, %d values, %d skipped", len(st.Names), len(st.Values), st.Skipped)
		}
		for _, n := range st.Names {
			if n == "" || n != strings.TrimSpace(n) || strings.ContainsAny(n, "\n") {
				t.Fatalf("bad name %q", n)
			}
		}
		// Whatever the names, a mapping must be buildable and applicable.
		m := NewMapping(st.Names)
		if !m.Matches(st.Names) {
			t.Fatal("mapping does not match its own table")
		}
		if err := m.Each(st.Values, func(e Entry, v uint64) {
			if st.Names[e.Index] != e.Raw || st.Values[e.Index] != v {
				t.Fatalf("entry %q/%d does not point at its value", e.Raw, e.Index)
			}
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseDriverInfo(f *testing.F) {
	addFixtures(f, "*-ethtool-i.txt")
	f.Add([]byte("driver: x\nbus-info: a:b:c\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		di, err := ParseDriverInfo(bytes.NewReader(in))
		if err != nil {
			return
		}
		if di.Driver == "" {
			t.Fatal("accepted a document without a driver")
		}
	})
}

func FuzzParsePause(f *testing.F) {
	addFixtures(f, "*-ethtool-a.txt")
	f.Add([]byte("Pause parameters for eth0:\nRX: on\nTX: off\nRX negotiated: on\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParsePause(bytes.NewReader(in))
		if err != nil {
			return
		}
		if !bytes.Contains(in, []byte("Pause parameters for ")) || strings.Contains(p.Interface, ":") {
			t.Fatalf("accepted %q as %+v", in, p)
		}
	})
}
