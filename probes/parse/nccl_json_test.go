package parse

import (
	"errors"
	"strings"
	"testing"
)

func TestParseNCCLJSONSamples(t *testing.T) {
	res, err := NCCLJSON(readTestdata(t, "nccl_json_v3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.NRanks != 16 || len(res.Devices) != 16 || res.NCCLVersion != "2.27.3" || res.Collective != "all_reduce_perf" {
		t.Errorf("nranks=%d devices=%d nccl=%q collective=%q", res.NRanks, len(res.Devices), res.NCCLVersion, res.Collective)
	}
	if d := res.Devices[9]; d.Rank != 9 || d.Host != "gpu-b" || d.Device != 1 {
		t.Errorf("device 9 = %+v", d)
	}
	if len(res.Rows) != 3 || res.Reason != "" || res.OutOfBoundsFailed || res.AvgBusBandwidthFailed {
		t.Fatalf("rows=%d reason=%q oob=%v avgFailed=%v", len(res.Rows), res.Reason, res.OutOfBoundsFailed, res.AvgBusBandwidthFailed)
	}
	row := findRow(t, res, 4294967296)
	if row.Count != 1073741824 || row.Type != "float" || row.RedOp != "sum" || row.Root != -1 {
		t.Errorf("row = %+v", row)
	}
	checkMeasurement(t, "out-of-place", row.OutOfPlace, NCCLMeasurement{TimeSeconds: 18462.70 * usec,
		AlgBWBytesPerSecond: 232.63 * gb, BusBWBytesPerSecond: 436.18 * gb, Wrong: 0, MaxError: -1})
	checkMeasurement(t, "in-place", row.InPlace, NCCLMeasurement{TimeSeconds: 18441.33 * usec,
		AlgBWBytesPerSecond: 232.90 * gb, BusBWBytesPerSecond: 436.69 * gb, Wrong: 0, MaxError: -1})
	approx(t, "avg bus bandwidth", res.AvgBusBandwidthBytesPerSecond, 432.431667*gb)
}

func TestParseNCCLJSONNullAndNaN(t *testing.T) {
	res, err := NCCLJSON(readTestdata(t, "nccl_json_nocheck_nan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("rows = %d", len(res.Rows))
	}
	row := res.Rows[0]
	// "nan" out-of-place is reported as absent, not as a measured zero.
	checkMeasurement(t, "out-of-place", row.OutOfPlace, NCCLMeasurement{Wrong: -1, MaxError: -1})
	// nwrong null (-c 0) is "not reported".
	checkMeasurement(t, "in-place", row.InPlace, NCCLMeasurement{TimeSeconds: 61.52 * usec,
		AlgBWBytesPerSecond: 136.356306 * gb, BusBWBytesPerSecond: 136.356306 * gb, Wrong: -1, MaxError: -1})
	// Only the in-place numbers were measured; they are the row's bus
	// bandwidth, not the absent out-of-place zero.
	approx(t, "bus bandwidth by size", res.BusBandwidthBySize()[row.SizeBytes], 136.356306*gb)
	// One device entry per process × ngpus 2.
	if res.NRanks != 2 || !res.AvgBusBandwidthFailed || res.NCCLVersion != "2.28.7" {
		t.Errorf("nranks=%d avgFailed=%v nccl=%q", res.NRanks, res.AvgBusBandwidthFailed, res.NCCLVersion)
	}
	// The transport error in "errors" is more specific than the missed
	// minimum bandwidth.
	if res.Reason != ReasonRetryExceeded || len(res.Errors) != 1 {
		t.Errorf("reason=%q errors=%q", res.Reason, res.Errors)
	}
}

// TestParseNCCLJSONOutOfPlaceOnly: a row whose in-place numbers are NaN is
// judged on its out-of-place ones, not on an absent zero.
func TestParseNCCLJSONOutOfPlaceOnly(t *testing.T) {
	doc := `{"version":3,"results":[{"size":1073741824,"count":268435456,"type":"float","redop":"sum","root":"    -1",` +
		`"out_of_place":{"time":9187.8,"alg_bw":116.87,"bus_bw":219.12,"nwrong":0},` +
		`"in_place":{"time":"nan","alg_bw":"nan","bus_bw":"nan","nwrong":0}}],` +
		`"out_of_bounds":{"count":0,"okay":true},"average_bus_bandwidth":{"bandwidth":219.12,"okay":"unchecked"}}`
	res, err := NCCLJSON([]byte(doc))
	if err != nil || res.Reason != "" {
		t.Fatalf("err %v reason %q", err, res.Reason)
	}
	lm, ok := res.LargeMessageBusBandwidth(256 << 20)
	if !ok || lm.SizeBytes != 1<<30 {
		t.Errorf("large message = %+v", lm)
	}
	approx(t, "large-message busbw", lm.BytesPerSecond, 219.12*gb)
}

// TestParseNCCLJSONIncompleteAndImpossible: a file without the average
// (written last) is a cut run; an impossible bus bandwidth is unreadable.
func TestParseNCCLJSONIncompleteAndImpossible(t *testing.T) {
	row := func(busbw string) string {
		return `{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":20.5,"alg_bw":0.05,"bus_bw":0.09,"nwrong":0},` +
			`"in_place":{"time":19.5,"alg_bw":0.05,"bus_bw":` + busbw + `,"nwrong":0}}`
	}
	for _, tc := range []struct{ name, doc, reason string }{
		{"no average", `{"version":3,"results":[` + row("0.10") + `],"out_of_bounds":{"count":0,"okay":true}}`, ReasonIncompleteOutput},
		{"impossible row", `{"version":3,"results":[` + row("1e300") + `],"average_bus_bandwidth":{"bandwidth":0.1,"okay":true}}`, ReasonParseError},
		{"impossible average", `{"version":3,"results":[` + row("0.10") + `],"average_bus_bandwidth":{"bandwidth":1e300,"okay":true}}`, ReasonParseError},
		{"whole", `{"version":3,"results":[` + row("0.10") + `],"average_bus_bandwidth":{"bandwidth":0.1,"okay":"unchecked"}}`, ""},
		{"not nccl-tests", `{"hello":"world"}`, ReasonNotToolOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := NCCLJSON([]byte(tc.doc))
			if res.Reason != tc.reason {
				t.Errorf("reason %q, want %q (errors %q)", res.Reason, tc.reason, res.Errors)
			}
		})
	}
}

func TestParseNCCLJSONVariants(t *testing.T) {
	row := func(nwrong string) string {
		return `{"size":1024,"count":256,"type":"float","redop":"sum","root":ROOT,"out_of_place":{"time":20.5,"alg_bw":0.05,"bus_bw":0.09,"nwrong":` +
			nwrong + `},"in_place":{"cpu_time":19.5,"alg_bw":0.05,"bus_bw":0.10,"nwrong":` + nwrong + `}}`
	}
	tests := []struct {
		name   string
		doc    string
		reason string
		root   int
	}{
		{"numeric root and real booleans", `{"version":2,"results":[` + strings.Replace(row("0"), "ROOT", "3", 1) +
			`],"out_of_bounds":{"count":0,"okay":true},"average_bus_bandwidth":{"bandwidth":0.1,"okay":true}}`, "", 3},
		{"wrong elements", `{"version":3,"results":[` + strings.Replace(row("2"), "ROOT", `"    -1"`, 1) +
			`],"out_of_bounds":{"count":2,"okay":"false"}}`, ReasonWrongResults, -1},
		{"min bandwidth missed", `{"version":3,"results":[` + strings.Replace(row("0"), "ROOT", `"    -1"`, 1) +
			`],"average_bus_bandwidth":{"bandwidth":0.1,"okay":false}}`, ReasonBelowThreshold, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := NCCLJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tt.reason || len(res.Rows) != 1 || res.Rows[0].Root != tt.root {
				t.Fatalf("reason=%q rows=%+v", res.Reason, res.Rows)
			}
			// -C writes cpu_time instead of time.
			approx(t, "in-place time", res.Rows[0].InPlace.TimeSeconds, 19.5*usec)
		})
	}
}

func TestParseNCCLJSONFailures(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		noResults bool
	}{
		{"empty", "", false},
		{"text", "# nThread 1 nGpus 1", false},
		{"truncated", `{"version":3,"results":[{"size":8`, false},
		{"bad number", `{"results":[{"size":"eight"}]}`, false},
		{"no results", `{"version":3,"results":[],"errors":["NET/IB : No device found."]}`, true},
		{"only nan rows", `{"results":[{"size":8,"count":2,"out_of_place":{"time":"nan","alg_bw":"nan","bus_bw":"nan"}}]}`, true},
		{"negative size", `{"results":[{"size":-8,"count":2,"in_place":{"time":1,"alg_bw":1,"bus_bw":1}}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := NCCLJSON([]byte(tt.doc))
			if err == nil || res == nil || res.Reason == "" {
				t.Fatalf("want an error and a reason, got %v %+v", err, res)
			}
			if errors.Is(err, ErrNoResults) != tt.noResults {
				t.Errorf("err = %v", err)
			}
		})
	}
	res, _ := NCCLJSON([]byte(`{"version":3,"results":[],"errors":["NET/IB : No device found."]}`))
	if res.Reason != ReasonNoDevice {
		t.Errorf("errors list must be classified: %q", res.Reason)
	}
}
