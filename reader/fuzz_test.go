package reader

import (
	"bufio"
	"strings"
	"testing"
)

func FuzzParseIPAddr(f *testing.F) {
	f.Add("ens1f0np0        UP             192.168.100.11/24 fe80::1/64\n")
	f.Add("2: ens1f0np0    inet 192.168.100.11/24 brd 192.168.100.255 scope global ens1f0np0\n")
	f.Fuzz(func(t *testing.T, s string) {
		parseIPAddr(bufioScanner(s))
	})
}

func bufioScanner(s string) *bufio.Scanner { return bufio.NewScanner(strings.NewReader(s)) }
