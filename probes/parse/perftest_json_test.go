package parse

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePerftestJSONSamples(t *testing.T) {
	tests := []struct {
		file   string
		test   string
		device string
		link   string
		gid    int
		qps    int
		unit   PerftestUnit
		row    PerftestRow
	}{
		{
			file: "perftest_json_standard_gbits.json", test: "RDMA_Write_BW_Test", device: "mlx5_3", link: "Ethernet",
			gid: 3, qps: 4, unit: UnitGb,
			row: PerftestRow{Bytes: 1048576, Iterations: 23216, BWPeak: 0, BWAverage: 97.42 * gbit, MsgRateMpps: 0.011613},
		},
		{
			file: "perftest_json_pre2401_mib.json", test: "RDMA_Write_BW_Test", device: "mlx5_1", link: "Ethernet",
			gid: 3, qps: 1, unit: UnitMiB,
			row: PerftestRow{Bytes: 65536, Iterations: 5000, BWPeak: 11030.78 * mib, BWAverage: 11030.45 * mib, MsgRateMpps: 0.176487},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := PerftestJSON(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if res.Test != tt.test || res.Device != tt.device || res.LinkType != tt.link || res.GIDIndex != tt.gid ||
				res.NumQPs != tt.qps || res.MTU != 4096 || res.Unit != tt.unit {
				t.Errorf("info = %q %q %q gid=%d qps=%d mtu=%d unit=%q", res.Test, res.Device, res.LinkType, res.GIDIndex,
					res.NumQPs, res.MTU, res.Unit)
			}
			if len(res.Rows) != 1 {
				t.Fatalf("rows = %d", len(res.Rows))
			}
			got := res.Rows[0]
			if got.Bytes != tt.row.Bytes || got.Iterations != tt.row.Iterations {
				t.Errorf("row = %+v", got)
			}
			approx(t, "BWPeak", got.BWPeak, tt.row.BWPeak)
			approx(t, "BWAverage", got.BWAverage, tt.row.BWAverage)
			approx(t, "MsgRate", got.MsgRateMpps, tt.row.MsgRateMpps)
			approx(t, "BandwidthBytesPerSecond", res.BandwidthBytesPerSecond, tt.row.BWAverage)
			if res.Reason != "" || len(res.Warnings) != 0 {
				t.Errorf("reason %q warnings %q", res.Reason, res.Warnings)
			}
		})
	}
}

func TestParsePerftestJSONLatency(t *testing.T) {
	res, err := PerftestJSON(readTestdata(t, "perftest_json_latency.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LatencyRows) != 1 || len(res.Rows) != 0 {
		t.Fatalf("latency %d bandwidth %d", len(res.LatencyRows), len(res.Rows))
	}
	got := res.LatencyRows[0]
	if got.Bytes != 2 || got.Iterations != 1000 {
		t.Errorf("row = %+v", got)
	}
	approx(t, "Min", got.Min, 1.24*usec)
	approx(t, "Avg", got.Avg, 1.27*usec)
	approx(t, "P99", got.P99, 1.37*usec)
	approx(t, "P999", got.P999, 5.19*usec)
}

func TestParsePerftestJSONExplicitUnit(t *testing.T) {
	data := readTestdata(t, "perftest_json_standard_gbits.json")
	// The caller's unit wins over inference.
	res, err := PerftestJSONUnit(data, UnitMiB)
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "BWAverage", res.Rows[0].BWAverage, 97.42*mib)
	if _, err := PerftestJSONUnit(data, PerftestUnit("kb")); err == nil {
		t.Error("an unknown unit must be rejected")
	}
}

func TestParsePerftestJSONUnitInference(t *testing.T) {
	tests := []struct {
		name    string
		results string
		want    float64
		warn    bool
	}{
		// 392.34 Gb/s of 64 KiB messages is 0.748336 Mpps.
		{"gbits", `"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 392.38, "BW_average": 392.34, "MsgRate": 0.748336`, 392.34 * gbit, false},
		// 46557.03 MiB/s of 64 KiB messages is 0.744912 Mpps.
		{"mib", `"MsgSize": 65536, "n_iterations": 1000, "BW_peak": 46567.34, "BW_average": 46557.03, "MsgRate": 0.744912`, 46557.03 * mib, false},
		// --output=bandwidth writes only bw_avg: nothing to infer from.
		{"bw_avg only", `"MsgSize": 65536, "bw_avg": 92.50`, 92.50 * mib, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := PerftestJSON([]byte(`{"test_info": {"test": "RDMA_Write_BW_Test"}, "results": {` + tt.results + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			approx(t, "BWAverage", res.Rows[0].BWAverage, tt.want)
			if (len(res.Warnings) > 0) != tt.warn {
				t.Errorf("warnings = %q", res.Warnings)
			}
		})
	}
}

func TestParsePerftestJSONLenientForms(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		// perftest's QoS path writes `sl:` unquoted inside otherwise
		// standard JSON.
		{"unquoted sl", "{\n\"test_info\": {\n\"test\": \"RDMA_Write_BW_Test\",\n\"Device\": \"mlx5_0\",\nsl: 3,\n\"GID_index\": 3\n},\n\"results\": {\n\"MsgSize\": 65536,\n\"n_iterations\": 5000,\n\"BW_peak\": 97.43,\n\"BW_average\": 97.42,\n\"MsgRate\": 0.185814\n}\n}\n"},
		// The pre-24.01 form on one line, with a trailing comma.
		{"one line", "{test_info: {test: RDMA_Write_BW_Test, Device: mlx5_0, GID_index: 3,}, results: {MsgSize: 65536, n_iterations: 5000, BW_peak: 97.43, BW_average: 97.42, MsgRate: 0.185814,}}"},
		// Truncated by a crash while writing: what was written is kept.
		{"truncated", "{\ntest_info: {\ntest: RDMA_Write_BW_Test,\nDevice: mlx5_0,\nGID_index: 3\n},\nresults: {\nMsgSize: 65536,\nn_iterations: 5000,\nBW_peak: 97.43,\nBW_average: 97.42,\nMsgRate: 0.185814"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := PerftestJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if res.Device != "mlx5_0" || res.GIDIndex != 3 || res.Unit != UnitGb || len(res.Rows) != 1 {
				t.Fatalf("res = %+v", res)
			}
			approx(t, "BWAverage", res.Rows[0].BWAverage, 97.42*gbit)
		})
	}
}

func TestParsePerftestJSONFailures(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		noResults bool
	}{
		{"empty", "", false},
		{"not json", "Couldn't connect to 10.0.0.2:18515", false},
		{"no results section", `{"test_info": {"test": "RDMA_Write_BW_Test"}}`, true},
		{"nan bandwidth", `{"results": {"MsgSize": 65536, "BW_average": "nan", "MsgRate": 0.1}}`, true},
		{"negative bandwidth", `{"results": {"MsgSize": 65536, "BW_average": -1.5, "MsgRate": 0.1}}`, true},
		// Above any port: a corrupt file, not a measurement.
		{"impossible bandwidth", `{"results": {"MsgSize": 65536, "BW_average": 1e300, "BW_peak": 0, "MsgRate": 0.1}}`, true},
		{"deep nesting", strings.Repeat("{a:", 100), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := PerftestJSON([]byte(tt.doc))
			if err == nil {
				t.Fatalf("want an error, got %+v", res)
			}
			// Not "the test program failed": it is the file that cannot be read.
			if res == nil || res.Reason != ReasonParseError {
				t.Fatalf("res = %+v", res)
			}
			if errors.Is(err, ErrNoResults) != tt.noResults {
				t.Errorf("err = %v", err)
			}
		})
	}
}
