package parse

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, prefix, ext string) {
	f.Helper()
	names := samples(f, prefix, ext)
	if len(names) == 0 {
		f.Fatalf("no %s*%s seeds in testdata", prefix, ext)
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func checkPerftestInvariants(t *testing.T, res *PerftestResult, err error) {
	t.Helper()
	if res == nil {
		t.Fatalf("nil result (err %v)", err)
	}
	if !validReasons[res.Reason] {
		t.Fatalf("unknown reason %q", res.Reason)
	}
	hasRows := len(res.Rows)+len(res.LatencyRows) > 0
	if (err == nil) != hasRows {
		t.Fatalf("err %v with %d rows", err, len(res.Rows)+len(res.LatencyRows))
	}
	if err != nil && res.Reason == "" {
		t.Fatalf("failure without a reason: %v", err)
	}
	for _, r := range res.Rows {
		if !allFiniteNonNegative(r.BWPeak, r.BWAverage, r.MsgRateMpps) || !plausiblePerftest(r.BWPeak, r.BWAverage) {
			t.Fatalf("invalid row %+v", r)
		}
	}
	if res.Impossible && res.Reason == "" {
		t.Fatal("an impossible bandwidth passed")
	}
	for _, r := range res.LatencyRows {
		if !allFiniteNonNegative(r.Min, r.Max, r.Typical, r.Avg, r.Stdev, r.P99, r.P999) {
			t.Fatalf("invalid latency row %+v", r)
		}
	}
	if len(res.Warnings) > maxMessages || len(res.Errors) > maxMessages {
		t.Fatalf("unbounded messages: %d warnings, %d errors", len(res.Warnings), len(res.Errors))
	}
}

func checkNCCLInvariants(t *testing.T, res *NCCLResult, err error) {
	t.Helper()
	if res == nil {
		t.Fatalf("nil result (err %v)", err)
	}
	if !validReasons[res.Reason] {
		t.Fatalf("unknown reason %q", res.Reason)
	}
	if err != nil && res.Reason == "" {
		t.Fatalf("failure without a reason: %v", err)
	}
	if err == nil && len(res.Rows) == 0 {
		t.Fatal("success without rows")
	}
	for _, r := range res.Rows {
		for _, m := range []NCCLMeasurement{r.OutOfPlace, r.InPlace} {
			if !allFiniteNonNegative(m.TimeSeconds, m.AlgBWBytesPerSecond, m.BusBWBytesPerSecond) || m.Wrong < -1 ||
				m.BusBWBytesPerSecond > maxNCCLBusBytesPerSecond {
				t.Fatalf("invalid measurement %+v", m)
			}
		}
	}
	if !allFiniteNonNegative(res.AvgBusBandwidthBytesPerSecond) || res.AvgBusBandwidthBytesPerSecond > maxNCCLBusBytesPerSecond {
		t.Fatalf("invalid average %v", res.AvgBusBandwidthBytesPerSecond)
	}
	// A success is a whole run: its summary printed, every number possible.
	if res.Reason == "" && (!res.Complete || res.Impossible) {
		t.Fatalf("success of a cut or corrupt run: complete %v impossible %v", res.Complete, res.Impossible)
	}
	lm, ok := res.LargeMessageBusBandwidth(256 << 20)
	if ok != (len(res.Rows) > 0) || !allFiniteNonNegative(lm.BytesPerSecond) {
		t.Fatalf("large-message bus bandwidth %+v ok %v with %d rows", lm, ok, len(res.Rows))
	}
	if len(res.Warnings) > maxMessages || len(res.Errors) > maxMessages {
		t.Fatalf("unbounded messages: %d warnings, %d errors", len(res.Warnings), len(res.Errors))
	}
}

func FuzzParsePerftest(f *testing.F) {
	addSeeds(f, "perftest_", ".txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Perftest(bytes.NewReader(data))
		checkPerftestInvariants(t, res, err)
	})
}

func FuzzParsePerftestJSON(f *testing.F) {
	addSeeds(f, "perftest_json", ".json")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := PerftestJSON(data)
		if err != nil && !errors.Is(err, ErrNoResults) {
			if res == nil || res.Reason != ReasonParseError {
				t.Fatalf("decode error must come with parse_error: %v %+v", err, res)
			}
			return
		}
		checkPerftestInvariants(t, res, err)
	})
}

func FuzzParseNCCL(f *testing.F) {
	addSeeds(f, "nccl_", ".txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := NCCL(bytes.NewReader(data))
		checkNCCLInvariants(t, res, err)
	})
}

func FuzzParseNCCLJSON(f *testing.F) {
	addSeeds(f, "nccl_json", ".json")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := NCCLJSON(data)
		checkNCCLInvariants(t, res, err)
	})
}
