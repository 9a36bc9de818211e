package node

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"leaf-1":                            "leaf-1",
		"leaf\x1b[2J\x1b[31m-1":             "leaf-1",
		"sw\x1b]0;owned\x07itch":            "switch",
		"sw\x1b]2;t\x1b\\itch":              "switch",
		"a\tb\nc\rd\x00e\x7ff\u009bg\x1bch": "a b c defgh",
		"ünïcode ✓":                         "ünïcode ✓",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrintableName(t *testing.T) {
	for in, want := range map[string]string{
		"ens1f0np0":    "ens1f0np0",
		"e\x1b[2Jx":    `e\x1b[2Jx`,
		`a\b` + "\x07": `a\\b\x07`,
		"c1\u009b":     `c1\xc2\x9b`,
		"v\xff\x1b":    `v\xff\x1b`,
		`e\x1b[2Jx`:    `e\\x1b[2Jx`, // the text, not the byte: another name
	} {
		if got := PrintableName(in); got != want {
			t.Errorf("PrintableName(%q) = %q, want %q", in, got, want)
		}
	}
}
