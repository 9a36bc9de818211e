package devlinknl

import (
	"os"
	"strings"
	"testing"
)

func parseText(t *testing.T, file string) []Reporter {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseRecorded(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return got
}

func summary(reps []Reporter) string {
	var s []string
	for _, r := range reps {
		s = append(s, r.Handle()+" "+r.Name+" "+r.State.String())
	}
	return strings.Join(s, ",")
}

// Real `devlink health show` text from netdev mails (testdata/SOURCES):
// device and port handles (pci with a port index, auxiliary), the pre-5.4
// "name" spelling, non-zero counts with dump times, a pasted prompt.
func TestParseRecordedText(t *testing.T) {
	got := parseText(t, "health-text-mlx5-vnic-ports.txt")
	if want := "pci/0000:08:00.0 fw healthy,pci/0000:08:00.0 fw_fatal healthy,pci/0000:08:00.0 vnic healthy," +
		"pci/0000:08:00.0/32768 vnic healthy,pci/0000:08:00.0/32769 vnic healthy,pci/0000:08:00.0/32770 vnic healthy," +
		"pci/0000:08:00.1 fw healthy,pci/0000:08:00.1 fw_fatal healthy,pci/0000:08:00.1 vnic healthy,pci/0000:08:00.1/98304 vnic healthy"; summary(got) != want {
		t.Errorf("mlx5 vnic ports:\n got %s\nwant %s", summary(got), want)
	}
	if got[3].Port != 32768 || got[3].Bus != "pci" || got[3].Device != "0000:08:00.0" {
		t.Errorf("port reporter %+v", got[3])
	}

	got = parseText(t, "health-text-mlx5e-port-reporters.txt")
	if summary(got) != "pci/0000:00:0a.0 fw healthy,pci/0000:00:0a.0/1 tx healthy" || got[1].Port != 1 {
		t.Errorf("mlx5e port reporters %+v", got)
	}

	got = parseText(t, "health-text-auxiliary-port.txt")
	if summary(got) != "auxiliary/mlx5_core.eth.1/131071 tx healthy,auxiliary/mlx5_core.eth.1/131071 rx healthy" {
		t.Errorf("auxiliary %+v", got)
	}

	got = parseText(t, "health-text-octeontx2-nonzero.txt")
	if len(got) != 6 {
		t.Fatalf("octeontx2: %d reporters", len(got))
	}
	if r := got[4]; r.Name != "hw_nix_intr" || r.Errors != 1121 || r.Recoveries != 1121 || r.State != StateHealthy {
		t.Errorf("hw_nix_intr %+v", r)
	}
	if r := got[5]; r.Name != "hw_nix_gen" || r.Errors != 949 || r.Recoveries != 949 {
		t.Errorf("hw_nix_gen %+v", r)
	}

	got = parseText(t, "health-text-pre-2019-name.txt")
	if summary(got) != "pci/0000:04:00.0 tx healthy" || got[0].Port != -1 {
		t.Errorf("pre-2019 name: %+v", got)
	}
}

// The text and the JSON of the same reporters read the same.
func TestParseRecordedTextMatchesJSON(t *testing.T) {
	js := `{"health":{"pci/0000:18:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0}],` +
		`"pci/0000:18:00.0/65535":[{"reporter":"tx","state":"error","error":3,"recover":2,"grace_period":500}]}}`
	text := "pci/0000:18:00.0:\n  reporter fw\n    state healthy error 0 recover 0\n" +
		"pci/0000:18:00.0/65535:\n  reporter tx\n    state error error 3 recover 2 grace_period 500 auto_recover true\n"
	a, err := ParseRecorded(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseRecorded(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if summary(a) != summary(b) || a[1] != b[1] {
		t.Errorf("JSON %+v\ntext %+v", a, b)
	}
}

func TestParseRecordedTextRejects(t *testing.T) {
	for name, in := range map[string]string{
		"no handle":       "  reporter fw\n    state healthy error 0 recover 0\n",
		"no state":        "pci/0000:18:00.0:\n  reporter fw\n",
		"no recover":      "pci/0000:18:00.0:\n  reporter fw\n    state healthy error 0\n",
		"odd pairs":       "pci/0000:18:00.0:\n  reporter fw\n    state healthy error\n",
		"bad state":       "pci/0000:18:00.0:\n  reporter fw\n    state sad error 0 recover 0\n",
		"bad count":       "pci/0000:18:00.0:\n  reporter fw\n    state healthy error -1 recover 0\n",
		"pairs before":    "pci/0000:18:00.0:\n    state healthy error 0 recover 0\n",
		"bad handle":      "pci:\n  reporter fw\n    state healthy error 0 recover 0\n",
		"bad port":        "pci/0000:18:00.0/x:\n  reporter fw\n    state healthy error 0 recover 0\n",
		"twice":           "pci/a:\n  reporter fw\n    state healthy error 0 recover 0\n  reporter fw\n    state healthy error 0 recover 0\n",
		"kernel answers":  "kernel answers: Operation not supported\n",
		"control in name": "pci/a:\n  reporter f\x01w\n    state healthy error 0 recover 0\n",
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseRecorded(strings.NewReader(in)); err == nil {
				t.Fatalf("accepted: %+v", got)
			}
		})
	}
}
