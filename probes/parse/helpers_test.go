package parse

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mib and gbit are spelled out here instead of reusing the package
// constants, so a wrong constant in the code cannot make its test agree.
const (
	mib  = 1048576.0
	gbit = 125000000.0
	gb   = 1e9
	usec = 1e-6
)

func approx(t *testing.T, what string, got, want float64) {
	t.Helper()
	if want == 0 && got == 0 {
		return
	}
	if math.Abs(got-want) > 1e-9*math.Max(math.Abs(want), math.Abs(got)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// samples lists the testdata files with the given prefix and extension.
func samples(tb testing.TB, prefix, ext string) []string {
	tb.Helper()
	matches, err := filepath.Glob(filepath.Join("testdata", prefix+"*"+ext))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, m := range matches {
		names = append(names, filepath.Base(m))
	}
	return names
}

// validReasons are the reasons an output can be classified with.
var validReasons = map[string]bool{
	"": true, ReasonConnectRefused: true, ReasonTimeout: true, ReasonNoDevice: true, ReasonGIDIndex: true,
	ReasonRetryExceeded: true, ReasonWrongResults: true, ReasonBelowThreshold: true,
	ReasonExecError: true, ReasonQPConnectTimeout: true, ReasonIncompleteOutput: true, ReasonParseError: true,
	ReasonNotToolOutput: true,
}

func TestEverySampleHasASource(t *testing.T) {
	all, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	var count int
	for _, f := range all {
		if info, err := os.Stat(f); err != nil || info.IsDir() || strings.HasSuffix(f, ".source") {
			continue
		}
		count++
		src := strings.TrimSuffix(f, filepath.Ext(f)) + ".source"
		data, err := os.ReadFile(src)
		if err != nil {
			t.Errorf("%s has no %s", f, src)
			continue
		}
		text := string(data)
		if !strings.HasPrefix(text, "# source of "+filepath.Base(f)) || !(strings.Contains(text, "REAL") || strings.Contains(text, "CONSTRUCTED")) {
			t.Errorf("%s must start with a header line and say whether the sample is REAL or CONSTRUCTED", src)
		}
	}
	if count == 0 {
		t.Fatal("no samples in testdata")
	}
}
