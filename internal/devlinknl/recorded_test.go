package devlinknl

import (
	"os"
	"strings"
	"testing"
)

func TestParseRecordedMLX5(t *testing.T) {
	f, err := os.Open("testdata/mlx5-cx7-tx-recovered.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseRecorded(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Handle()+" "+r.Name)
	}
	want := "pci/0000:18:00.0 fw,pci/0000:18:00.0 fw_fatal,pci/0000:18:00.0/65535 tx,pci/0000:18:00.0/65535 rx,pci/0000:18:00.0/65535 vnic"
	if strings.Join(names, ",") != want {
		t.Fatalf("reporters %q", names)
	}
	tx := got[2]
	if tx.State != StateHealthy || tx.Errors != 3 || tx.Recoveries != 3 || tx.Port != 65535 {
		t.Fatalf("tx = %+v", tx)
	}
}

func TestParseRecordedOldNameKey(t *testing.T) {
	f, err := os.Open("testdata/old-iproute2-name-key.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseRecorded(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "tx" || got[0].State != StateError || got[0].Errors != 12 || got[0].Recoveries != 11 || got[0].Port != -1 {
		t.Fatalf("got %+v", got)
	}
}

func TestParseRecordedRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":       "pci/0000:18:00.0:\n  reporter fw",
		"no health":      `{"dev":{}}`,
		"bad handle":     `{"health":{"0000:18:00.0":[]}}`,
		"bad port":       `{"health":{"pci/0000:18:00.0/x":[]}}`,
		"bad state":      `{"health":{"pci/a":[{"reporter":"tx","state":"sad","error":0,"recover":0}]}}`,
		"no count":       `{"health":{"pci/a":[{"reporter":"tx","state":"error","error":1}]}}`,
		"negative count": `{"health":{"pci/a":[{"reporter":"tx","state":"error","error":-1,"recover":0}]}}`,
		"string count":   `{"health":{"pci/a":[{"reporter":"tx","state":"error","error":"1","recover":0}]}}`,
		"no name":        `{"health":{"pci/a":[{"state":"error","error":1,"recover":0}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := ParseRecorded(strings.NewReader(in)); err == nil {
				t.Fatalf("accepted: %+v", got)
			}
		})
	}
	// No devlink instance at all is a valid, empty answer.
	got, err := ParseRecorded(strings.NewReader(`{"health":{}}`))
	if err != nil || len(got) != 0 {
		t.Fatalf("empty: %+v, %v", got, err)
	}
}

func FuzzParseRecorded(f *testing.F) {
	for _, p := range []string{"testdata/mlx5-cx7-tx-recovered.json", "testdata/old-iproute2-name-key.json",
		"testdata/health-text-mlx5-vnic-ports.txt", "testdata/health-text-octeontx2-nonzero.txt", "testdata/health-text-pre-2019-name.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := ParseRecorded(strings.NewReader(string(in)))
		if err != nil {
			if got != nil {
				t.Fatal("result and error together")
			}
			return
		}
		for _, r := range got {
			for _, s := range []string{r.Bus, r.Device, r.Name} {
				if checkName("x", s) != nil {
					t.Fatalf("accepted a bad name %q", s)
				}
			}
			if r.State != StateHealthy && r.State != StateError {
				t.Fatalf("state %d", r.State)
			}
		}
	})
}
