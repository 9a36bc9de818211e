package parse

import (
	"errors"
	"strings"
	"testing"
)

func parseNCCLFile(t *testing.T, name string) (*NCCLResult, error) {
	t.Helper()
	return NCCL(strings.NewReader(string(readTestdata(t, name))))
}

func findRow(t *testing.T, res *NCCLResult, size uint64) NCCLRow {
	t.Helper()
	for _, r := range res.Rows {
		if r.SizeBytes == size {
			return r
		}
	}
	t.Fatalf("no row for %d bytes", size)
	return NCCLRow{}
}

func checkMeasurement(t *testing.T, what string, got, want NCCLMeasurement) {
	t.Helper()
	approx(t, what+" time", got.TimeSeconds, want.TimeSeconds)
	approx(t, what+" algbw", got.AlgBWBytesPerSecond, want.AlgBWBytesPerSecond)
	approx(t, what+" busbw", got.BusBWBytesPerSecond, want.BusBWBytesPerSecond)
	if got.Wrong != want.Wrong {
		t.Errorf("%s wrong = %d, want %d", what, got.Wrong, want.Wrong)
	}
	approx(t, what+" max error", got.MaxError, want.MaxError)
}

func TestParseNCCLSamples(t *testing.T) {
	tests := []struct {
		file        string
		rows        int
		nranks      int
		version     string
		ncclVersion string
		collective  string
		avgBusBW    float64
		oob         int64
		oobFailed   bool
		reason      string
		row         NCCLRow // one row, as printed × 1e9 / × 1e-6
	}{
		{
			file: "nccl_old_allreduce_error_column_superbench.txt", rows: 34, nranks: 8, avgBusBW: 68.4048 * gb,
			row: NCCLRow{SizeBytes: 8589934592, Count: 2147483648, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 63896 * usec, AlgBWBytesPerSecond: 134.44 * gb, BusBWBytesPerSecond: 235.26 * gb, Wrong: -1, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 63959 * usec, AlgBWBytesPerSecond: 134.30 * gb, BusBWBytesPerSecond: 235.03 * gb, Wrong: -1, MaxError: -1}},
		},
		{
			// The stored copy stops after three rows: no summary, a cut run.
			file: "nccl_old_error_float_npkit19.txt", rows: 3, nranks: 4, reason: ReasonIncompleteOutput,
			row: NCCLRow{SizeBytes: 8, Count: 2, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 40.17 * usec, Wrong: -1, MaxError: 1e-07},
				InPlace:    NCCLMeasurement{TimeSeconds: 62.08 * usec, Wrong: -1, MaxError: 0}},
		},
		{
			file: "nccl_wrong_results_out_of_bounds_failed.txt", rows: 27, nranks: 2, avgBusBW: 3.02663 * gb,
			oob: 108, oobFailed: true, reason: ReasonWrongResults,
			row: NCCLRow{SizeBytes: 2097152, Count: 524288, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 311.5 * usec, AlgBWBytesPerSecond: 6.73 * gb, BusBWBytesPerSecond: 6.73 * gb, Wrong: 1048580, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 311.3 * usec, AlgBWBytesPerSecond: 6.74 * gb, BusBWBytesPerSecond: 6.74 * gb, Wrong: 1048580, MaxError: -1}},
		},
		{
			file: "nccl_2183_two_nodes_gh200.txt", rows: 28, nranks: 8, version: "2.18.3", ncclVersion: "2.30.4",
			collective: "all_reduce_perf", avgBusBW: 17.8617 * gb,
			row: NCCLRow{SizeBytes: 134217728, Count: 134217728, Type: "int8", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 2309.49 * usec, AlgBWBytesPerSecond: 58.12 * gb, BusBWBytesPerSecond: 101.70 * gb, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 2182.20 * usec, AlgBWBytesPerSecond: 61.51 * gb, BusBWBytesPerSecond: 107.63 * gb, Wrong: 0, MaxError: -1}},
		},
		{
			// A healthy 2x8 A100 run (Oracle OKE guide) over the default
			// 8 B - 8 GiB sweep.
			file: "nccl_oke_2x8_a100_healthy.txt", rows: 31, nranks: 16, avgBusBW: 66.4834 * gb,
			row: NCCLRow{SizeBytes: 8589934592, Count: 2147483648, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 67689 * usec, AlgBWBytesPerSecond: 126.90 * gb, BusBWBytesPerSecond: 237.94 * gb, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 67811 * usec, AlgBWBytesPerSecond: 126.68 * gb, BusBWBytesPerSecond: 237.52 * gb, Wrong: 0, MaxError: -1}},
		},
		{
			// Open MPI --tag-output prefixes; no header above the table. The
			// stored copy stops after three rows.
			file: "nccl_tagged_output_pr503.txt", rows: 3, reason: ReasonIncompleteOutput,
			row: NCCLRow{SizeBytes: 32, Count: 8, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 22.25 * usec, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 13.34 * usec, Wrong: 0, MaxError: -1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := parseNCCLFile(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != tt.rows || res.NRanks != tt.nranks || res.Version != tt.version ||
				res.NCCLVersion != tt.ncclVersion || res.Collective != tt.collective {
				t.Errorf("rows=%d nranks=%d version=%q nccl=%q collective=%q", len(res.Rows), res.NRanks, res.Version,
					res.NCCLVersion, res.Collective)
			}
			approx(t, "avg bus bandwidth", res.AvgBusBandwidthBytesPerSecond, tt.avgBusBW)
			if res.OutOfBoundsCount != tt.oob || res.OutOfBoundsFailed != tt.oobFailed || res.Duplicated {
				t.Errorf("oob=%d failed=%v duplicated=%v", res.OutOfBoundsCount, res.OutOfBoundsFailed, res.Duplicated)
			}
			if res.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", res.Reason, tt.reason)
			}
			got := findRow(t, res, tt.row.SizeBytes)
			if got.Count != tt.row.Count || got.Type != tt.row.Type || got.RedOp != tt.row.RedOp || got.Root != tt.row.Root {
				t.Errorf("row = %+v", got)
			}
			checkMeasurement(t, "out-of-place", got.OutOfPlace, tt.row.OutOfPlace)
			checkMeasurement(t, "in-place", got.InPlace, tt.row.InPlace)
		})
	}
}

func TestParseNCCLWrongCounts(t *testing.T) {
	res, err := parseNCCLFile(t, "nccl_wrong_results_out_of_bounds_failed.txt")
	if err != nil {
		t.Fatal(err)
	}
	if w := findRow(t, res, 8).OutOfPlace.Wrong; w != 4 {
		t.Errorf("8-byte row wrong = %d, want 4", w)
	}
	// %g prints 268435456 as 2.68435e+08.
	if w := findRow(t, res, 536870912).InPlace.Wrong; w != 268435000 {
		t.Errorf("512 MiB row wrong = %d, want 268435000", w)
	}
}

func TestParseNCCLDevices(t *testing.T) {
	res, err := parseNCCLFile(t, "nccl_2183_two_nodes_gh200.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices) != 8 {
		t.Fatalf("devices = %d", len(res.Devices))
	}
	if d := res.Devices[5]; d.Rank != 5 || d.Host != "gpu-1-2" || d.Device != 1 {
		t.Errorf("rank 5 = %+v", d)
	}
}

func TestParseNCCLDuplicatedRuns(t *testing.T) {
	tests := []struct {
		file   string
		nranks int
	}{
		{"nccl_duplicated_header_issue213.txt", 4},
		{"nccl_duplicated_rank0_issue306.txt", 8},
		{"nccl_duplicated_summary_issue27.txt", 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, _ := parseNCCLFile(t, tt.file)
			if res == nil || !res.Duplicated {
				t.Fatalf("duplicated output not detected: %+v", res)
			}
			if res.Reason != ReasonExecError || res.NRanks != tt.nranks {
				t.Errorf("reason %q nranks %d", res.Reason, res.NRanks)
			}
		})
	}
}

func TestParseNCCLDuplicatedWithRows(t *testing.T) {
	// Two single-process runs of the same binary, interleaved by mpirun.
	one := "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#\n# Using devices\n#  Rank  0 Group  0 Pid  1000 on   node-a device  0 [0x1a] NVIDIA H100\n#\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"           8             2     float     sum      -1     6.51    0.00    0.00      0     0.25    0.03    0.00      0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n"
	res, err := NCCL(strings.NewReader(one + one))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicated || res.NRanks != 1 || res.Reason != ReasonExecError {
		t.Errorf("duplicated=%v nranks=%d reason=%q", res.Duplicated, res.NRanks, res.Reason)
	}
	single, err := NCCL(strings.NewReader(one))
	if err != nil {
		t.Fatal(err)
	}
	if single.Duplicated || single.Reason != "" {
		t.Errorf("a single run is not duplicated: %v %q", single.Duplicated, single.Reason)
	}
}

func TestParseNCCLWarnings(t *testing.T) {
	res, err := parseNCCLFile(t, "nccl_warn_interleaved_issue131.txt")
	if !errors.Is(err, ErrNoResults) {
		t.Fatalf("err = %v", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "Could not find a path for pattern 4") {
		t.Errorf("warnings = %q", res.Warnings)
	}
	if res.NCCLVersion != "2.16.5" || res.NRanks != 2 || res.Duplicated {
		t.Errorf("nccl %q nranks %d duplicated %v", res.NCCLVersion, res.NRanks, res.Duplicated)
	}

	res, _ = parseNCCLFile(t, "nccl_warn_status12_nccl1698.txt")
	if res.Reason != ReasonRetryExceeded || len(res.Warnings) != 2 {
		t.Errorf("reason %q warnings %d", res.Reason, len(res.Warnings))
	}
}

// ncclSummary is the closing summary of a clean run.
const ncclSummary = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 31.14 \n#\n"

func TestParseNCCLWarnInsideTable(t *testing.T) {
	out := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"     1048576        262144     float     sum      -1    74.78   14.02   24.54      0    76.17   13.77   24.09      0\n" +
		"node1:1234:1300 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[0] [send] via NET/IB/3/GDRDMA\n" +
		"\nnode1:1234:1301 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got async event : port error\n\n" +
		"     2097152        524288     float     sum      -1    93.48   22.43   39.26      0    96.10   21.82   38.19      0\n" +
		ncclSummary
	res, err := NCCL(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(res.Warnings) != 1 || res.Reason != "" {
		t.Fatalf("rows %d warnings %q reason %q", len(res.Rows), res.Warnings, res.Reason)
	}
	approx(t, "busbw", res.Rows[1].InPlace.BusBWBytesPerSecond, 38.19*gb)
}

func TestParseNCCLNumberFormats(t *testing.T) {
	header := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	tests := []struct {
		name string
		row  string
		want NCCLRow
	}{
		{
			// getFloatStr switches to %.1e when the time no longer fits.
			name: "exponent time",
			row:  " 17179869184    4294967296     float     sum      -1  1.2e+05  143.17  268.44      0  1.2e+05  143.20  268.50      0",
			want: NCCLRow{SizeBytes: 17179869184, Count: 4294967296, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 0.12, AlgBWBytesPerSecond: 143.17 * gb, BusBWBytesPerSecond: 268.44 * gb, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 0.12, AlgBWBytesPerSecond: 143.20 * gb, BusBWBytesPerSecond: 268.50 * gb, Wrong: 0, MaxError: -1}},
		},
		{
			name: "validation off",
			row:  "    33554432       8388608     float     sum      -1    374.3   89.65  156.89    N/A    372.8   90.00  157.50    N/A",
			want: NCCLRow{SizeBytes: 33554432, Count: 8388608, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 374.3 * usec, AlgBWBytesPerSecond: 89.65 * gb, BusBWBytesPerSecond: 156.89 * gb, Wrong: -1, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 372.8 * usec, AlgBWBytesPerSecond: 90.00 * gb, BusBWBytesPerSecond: 157.50 * gb, Wrong: -1, MaxError: -1}},
		},
		{
			// -S appends "%21s" of "YYYY-mm-dd HH:MM:SS".
			name: "timestamp column",
			row:  "     8388608       2097152     float     sum      -1    162.0   51.79   90.63      0    160.0   52.44   91.77      0  2025-05-22 07:36:17",
			want: NCCLRow{SizeBytes: 8388608, Count: 2097152, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 162.0 * usec, AlgBWBytesPerSecond: 51.79 * gb, BusBWBytesPerSecond: 90.63 * gb, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 160.0 * usec, AlgBWBytesPerSecond: 52.44 * gb, BusBWBytesPerSecond: 91.77 * gb, Wrong: 0, MaxError: -1}},
		},
		{
			name: "broadcast root",
			row:  "     4194304       1048576     float    none       0    81.47   51.48   51.48      0    80.30   52.23   52.23      0",
			want: NCCLRow{SizeBytes: 4194304, Count: 1048576, Type: "float", RedOp: "none", Root: 0,
				OutOfPlace: NCCLMeasurement{TimeSeconds: 81.47 * usec, AlgBWBytesPerSecond: 51.48 * gb, BusBWBytesPerSecond: 51.48 * gb, Wrong: 0, MaxError: -1},
				InPlace:    NCCLMeasurement{TimeSeconds: 80.30 * usec, AlgBWBytesPerSecond: 52.23 * gb, BusBWBytesPerSecond: 52.23 * gb, Wrong: 0, MaxError: -1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, withHeader := range []bool{true, false} {
				in := tt.row + "\n"
				if withHeader {
					in = header + in
				}
				res, err := NCCL(strings.NewReader(in))
				if err != nil {
					t.Fatalf("header=%v: %v", withHeader, err)
				}
				got := res.Rows[0]
				if got.SizeBytes != tt.want.SizeBytes || got.Count != tt.want.Count || got.Type != tt.want.Type ||
					got.RedOp != tt.want.RedOp || got.Root != tt.want.Root {
					t.Errorf("header=%v row = %+v", withHeader, got)
				}
				checkMeasurement(t, "out-of-place", got.OutOfPlace, tt.want.OutOfPlace)
				checkMeasurement(t, "in-place", got.InPlace, tt.want.InPlace)
			}
		})
	}
}

func TestParseNCCLOldLayouts(t *testing.T) {
	// Real header and rows of the old (<= 2.11) reduce_perf and
	// all_gather_perf from microsoft/superbenchmark's test data: reduce has
	// a root but no #wrong, all_gather has neither redop nor root.
	reduce := "#       size         count    type   redop    root     time   algbw   busbw  error     time   algbw   busbw  error\n" +
		"           0             0   float     sum       0    36.90    0.00    0.00    N/A    36.47    0.00    0.00    N/A\n" +
		"     8388608       2097152   float     sum       0    94.72   88.57   88.57    N/A    94.06   89.19   89.19    N/A\n"
	res, err := NCCL(strings.NewReader(reduce))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[1].Root != 0 || res.Rows[1].RedOp != "sum" {
		t.Fatalf("reduce rows = %+v", res.Rows)
	}
	approx(t, "reduce busbw", res.Rows[1].InPlace.BusBWBytesPerSecond, 89.19*gb)

	gather := "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n" +
		"  8589934592     268435456   float    33646  255.31  223.39    N/A    32669  262.94  230.07    N/A\n"
	res, err = NCCL(strings.NewReader(gather))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Rows[0]
	if got.RedOp != "" || got.Root != -1 || got.Count != 268435456 {
		t.Fatalf("all_gather row = %+v", got)
	}
	approx(t, "all_gather time", got.OutOfPlace.TimeSeconds, 33646*usec)
	approx(t, "all_gather busbw", got.InPlace.BusBWBytesPerSecond, 230.07*gb)
}

func TestParseNCCLPerIterationColumns(t *testing.T) {
	// -I 1 adds i_min i_max i_p99 i_cv% after each placement (util.cu).
	out := "# %10s  size  count  type  redop  root  time  algbw  busbw  #wrong  i_min  i_max  i_p99  i_cv%  time  algbw  busbw  #wrong  i_min  i_max  i_p99  i_cv%\n"
	out = strings.Replace(out, "%10s  ", "", 1)
	out += "   134217728      33554432     float     sum      -1   1162.2  115.49  202.11       0   1150.1   1190.3   1188.0     0.82   1162.5  115.46  202.05       0   1151.0   1189.9   1187.5     0.80\n"
	res, err := NCCL(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "in-place time", res.Rows[0].InPlace.TimeSeconds, 1162.5*usec)
	approx(t, "in-place busbw", res.Rows[0].InPlace.BusBWBytesPerSecond, 202.05*gb)
}

func TestParseNCCLRejectsBadRows(t *testing.T) {
	for _, row := range []string{
		"     8388608       2097152     float     sum      -1    162.0   nan   90.63      0    160.0   52.44   91.77      0",
		"     8388608       2097152     float     sum      -1    162.0   51.79   -90.63      0    160.0   52.44   91.77      0",
		"     8388608       2097152     float     sum      x1    162.0   51.79   90.63      0    160.0   52.44   91.77      0",
	} {
		res, err := NCCL(strings.NewReader(row + "\n"))
		if !errors.Is(err, ErrNoResults) || len(res.Warnings) != 1 {
			t.Errorf("%q: err %v warnings %q", row, err, res.Warnings)
		}
	}
}

func TestClassifyNCCLText(t *testing.T) {
	// Lines as NCCL and nccl-tests print them (NCCL src/ WARN/INFO format
	// strings, nccl-tests src/common.cu);
	// each is appended to a good table, so only the text decides.
	good := "           8             2     float     sum      -1    21.33    0.00    0.00      0    20.55    0.00    0.00      0\n"
	tests := []struct {
		name string
		text string
		want string
	}{
		{"clean", "", ""},
		{"socket fallback", "node1:7846:7846 [0] NCCL INFO NET/IB : No device found.", ReasonNoDevice},
		{"refused", "node1:7846:7900 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43117> failed : Connection refused", ReasonConnectRefused},
		{"refused then retried", "node1:7846:7900 [0] NCCL INFO Call to connect returned Connection refused, retrying", ""},
		{"wrong gid", "node1:76786:77145 [3] transport/net_ib.cc:918 NCCL WARN Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 1, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.0.2", ReasonGIDIndex},
		{"modify qp, other errno", "72bf:76786:77145 [3] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device", ""},
		{"retry, 2.21 form", "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)", ReasonRetryExceeded},
		{"retry, <= 2.18 form", "h:1:1 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<33397> with error 12, opcode 0, len 0, vendor err 129", ReasonRetryExceeded},
		{"retry, HEAD form", "h:1:1 [0] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<53908> with status=transport retry counter exceeded(12) opcode=RDMA_WRITE(1) vendor_err=129 hca mlx5_1", ReasonRetryExceeded},
		{"flush is not retry", "h:1:1 [0] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<53908> with status=5 opcode=32552 len=32549 vendor err 249 (Recv)", ""},
		{"status 120 is not retry", "h:1:1 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with status=120 opcode=0", ""},
		{"test timeout", "gpu1: Test timeout (30s) common.cu:1167", ReasonTimeout},
		{"nccl failure", "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '", ReasonExecError},
		{"cuda failure", "nginx-with-gpu-wflt5: Test CUDA failure common.cu:941 'system not yet initialized'", ReasonExecError},
		{"error line", "# error: remote process exited or there was a network error", ReasonExecError},
		{"min bw missed", "# Avg bus bandwidth    : 3.02663 FAILED", ReasonBelowThreshold},
		{"out of bounds", "# Out of bounds values : 50 FAILED", ReasonWrongResults},
		// NVIDIA/nccl#2013 (masamokkulu, 2026-03-13; NCCL 2.27), verbatim.
		{"qp connect timeout", "[2026-03-13 22:26:02] host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx_x:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:xxx.xx.xx.xx, remote GID ::ffff:xxx.xx.xxx.xx", ReasonQPConnectTimeout},
		// Title of NVIDIA/nccl-tests#227 (NCCL 2.21.5 on irdma RoCE), verbatim.
		{"qp connect timeout, older form", "ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out.", ReasonQPConnectTimeout},
		// A socket timeout is not a queue pair timeout.
		{"socket timeout", "node1:1:1 [0] misc/socket.cc:567 NCCL WARN socketPollConnect: Connect to 10.0.0.2<33121> returned 110(Connection timed out) errno 115(Operation now in progress)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary := ""
			if !strings.Contains(tt.text, "Avg bus bandwidth") {
				summary = "# Avg bus bandwidth    : 0 \n"
			}
			res, err := NCCL(strings.NewReader(good + tt.text + "\n" + summary))
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tt.want {
				t.Errorf("reason = %q, want %q", res.Reason, tt.want)
			}
		})
	}
}

func TestNCCLExitReason(t *testing.T) {
	tests := map[int]string{
		0: "", 1: ReasonExecError, 2: ReasonExecError, 3: ReasonExecError, 4: ReasonTimeout,
		5: ReasonExecError, 6: ReasonExecError, 7: ReasonWrongResults, 137: ReasonExecError, -1: ReasonExecError,
	}
	for code, want := range tests {
		if got := NCCLExitReason(code); got != want {
			t.Errorf("NCCLExitReason(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestNCCLFailureReason(t *testing.T) {
	belowOnly := &NCCLResult{AvgBusBandwidthFailed: true}
	wrong := &NCCLResult{Reason: ReasonWrongResults, AvgBusBandwidthFailed: true}
	generic := &NCCLResult{Reason: ReasonExecError}
	retry := &NCCLResult{Reason: ReasonRetryExceeded}
	tests := []struct {
		name string
		code int
		res  *NCCLResult
		want string
	}{
		{"clean", 0, &NCCLResult{}, ""},
		{"no output, exit 3", 3, nil, ReasonExecError},
		{"no output, exit 7", 7, nil, ReasonWrongResults},
		{"exit 7 for min bw only", 7, belowOnly, ReasonBelowThreshold},
		{"exit 7 with wrong data", 7, wrong, ReasonWrongResults},
		{"generic text, timeout exit", 4, generic, ReasonTimeout},
		{"specific text wins over exit 1", 1, retry, ReasonRetryExceeded},
		{"clean text but failing exit", 2, &NCCLResult{}, ReasonExecError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NCCLFailureReason(tt.code, tt.res); got != tt.want {
				t.Errorf("NCCLFailureReason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNCCLVersionString(t *testing.T) {
	for code, want := range map[int]string{22703: "2.27.3", 23004: "2.30.4", 2408: "2.4.8", 0: "", -5: ""} {
		if got := ncclVersionString(code); got != want {
			t.Errorf("ncclVersionString(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestParseNCCLIgnoresBadAverage(t *testing.T) {
	row := "           8             2     float     sum      -1    21.33    0.00    0.00      0    20.55    0.00    0.00      0\n"
	for _, avg := range []string{"-nan", "nan", "-3.5", "inf"} {
		res, err := NCCL(strings.NewReader(row + "# Avg bus bandwidth    : " + avg + " \n"))
		if err != nil {
			t.Fatal(err)
		}
		if res.AvgBusBandwidthBytesPerSecond != 0 {
			t.Errorf("average %q read as %v", avg, res.AvgBusBandwidthBytesPerSecond)
		}
	}
}

// TestParseNCCLTruncatedRun: rows without nccl-tests' closing summary come
// from a run that was cut short; they must not read as a success.
func TestParseNCCLTruncatedRun(t *testing.T) {
	full := string(readTestdata(t, "nccl_oke_2x8_a100_healthy.txt"))
	cut := full[:strings.Index(full, "   268435456")]
	res, err := NCCL(strings.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonIncompleteOutput || res.Complete || len(res.Rows) != 25 {
		t.Errorf("reason %q complete %v rows %d", res.Reason, res.Complete, len(res.Rows))
	}
	res, _ = NCCL(strings.NewReader(full))
	if res.Reason != "" || !res.Complete {
		t.Errorf("the whole run: reason %q complete %v", res.Reason, res.Complete)
	}
}

// TestParseNCCLGarbage: text that is not a run's output is not_tool_output;
// it is not the test program failing to run, nor a fabric fault its words
// name (issue 27: the README read as qp_connect_timeout).
func TestParseNCCLGarbage(t *testing.T) {
	for _, in := range []string{"", "random garbage\n", "hello world\n1 2 3\n", "{not json",
		"`qp_connect_timeout` (NCCL's `ibv_modify_qp failed … Connection timed out`) points at the compute network\n",
		"ssh: connect to host node02 port 22: Connection refused\n"} {
		res, err := NCCL(strings.NewReader(in))
		if !errors.Is(err, ErrNoResults) || res.Reason != ReasonNotToolOutput {
			t.Errorf("%q: err %v reason %q", in, err, res.Reason)
		}
	}
	// The same words in NCCL's own log line are the fault.
	res, _ := NCCL(strings.NewReader("node01:1234:1300 [0] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out\n"))
	if res.Reason != ReasonQPConnectTimeout {
		t.Errorf("NCCL's own line: reason %q, want %q", res.Reason, ReasonQPConnectTimeout)
	}
	// nccl-tests' header without a row: it started and was cut off.
	head := "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
	if res, _ := NCCL(strings.NewReader(head)); res.Reason != ReasonIncompleteOutput {
		t.Errorf("header only: reason %q", res.Reason)
	}
	// The program's own failure lines keep exec_error.
	fail := "gpu-1-1: Test CUDA failure common.cu:941 'system not yet initialized'\n"
	if res, _ := NCCL(strings.NewReader(fail)); res.Reason != ReasonExecError {
		t.Errorf("CUDA failure: reason %q", res.Reason)
	}
	// Rows whose numbers are all invalid: unreadable.
	bad := "     8388608       2097152     float     sum      -1    162.0   nan   90.63      0    160.0   52.44   91.77      0\n" + ncclSummary
	if res, _ := NCCL(strings.NewReader(bad)); res.Reason != ReasonParseError {
		t.Errorf("invalid rows only: reason %q", res.Reason)
	}
}

// TestParseNCCLImpossibleBandwidth: a bus bandwidth above any hardware is
// a corrupt output (issue 12), even beside good rows.
func TestParseNCCLImpossibleBandwidth(t *testing.T) {
	row := func(busbw string) string {
		return "  8589934592    2147483648     float     sum      -1    67689  126.90  237.94      0    67811  126.68  " + busbw + "      0\n"
	}
	for _, tc := range []struct {
		name, text, reason string
	}{
		{"1e300 row", row("1e300") + ncclSummary, ReasonParseError},
		{"above 16 ports of 1.6 Tb/s", row("3200.01") + ncclSummary, ReasonParseError},
		{"impossible average", row("237.52") + "# Avg bus bandwidth    : 1e300 \n", ReasonParseError},
		{"fastest real", row("3200.00") + ncclSummary, ""},
		{"healthy", row("237.52") + ncclSummary, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := NCCL(strings.NewReader(tc.text))
			if res.Reason != tc.reason {
				t.Errorf("reason %q, want %q (errors %q)", res.Reason, tc.reason, res.Errors)
			}
		})
	}
	two := "           8             2     float     sum      -1    36.47    0.00    0.00      0    34.74    0.00    0.00      0\n" + row("1e300") + ncclSummary
	res, err := NCCL(strings.NewReader(two))
	if err != nil || res.Reason != ReasonParseError || len(res.Rows) != 1 || !res.Impossible {
		t.Errorf("err %v reason %q rows %d impossible %v", err, res.Reason, len(res.Rows), res.Impossible)
	}
	// A failing exit does not hide it: the program ran and printed it.
	if got := NCCLFailureReason(1, res); got != ReasonParseError {
		t.Errorf("NCCLFailureReason = %q", got)
	}
}

// TestNCCLLargeMessageBusBandwidth: real healthy runs are judged on what
// their links carry at large sizes, not on nccl-tests' average, which the
// latency-bound small sizes pull down to a fraction of it.
func TestNCCLLargeMessageBusBandwidth(t *testing.T) {
	const defaultThreshold = 256 << 20
	for _, tc := range []struct {
		file     string
		avg      float64
		want     float64
		size     uint64
		fallback bool
	}{
		// Best at or above 256 MiB is the 8 GiB row.
		{"nccl_oke_2x8_a100_healthy.txt", 66.4834 * gb, 237.52 * gb, 8 << 30, false},
		// The sweep stops at 128 MiB: judged on the largest size, and said so.
		{"nccl_2183_two_nodes_gh200.txt", 17.8617 * gb, 107.63 * gb, 128 << 20, true},
		// One 8-GPU A100 node (NVLink), nccl-tests <= 2.11 format.
		{"nccl_old_allreduce_error_column_superbench.txt", 68.4048 * gb, 235.03 * gb, 8 << 30, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res, err := parseNCCLFile(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			lm, ok := res.LargeMessageBusBandwidth(defaultThreshold)
			if !ok || lm.SizeBytes != tc.size || lm.Fallback != tc.fallback {
				t.Errorf("large message = %+v ok %v", lm, ok)
			}
			approx(t, "large-message busbw", lm.BytesPerSecond, tc.want)
			approx(t, "average", res.AvgBusBandwidthBytesPerSecond, tc.avg)
			// The example plan's 40 GB/s floor: passed on the large-message
			// number, while the GH200 average alone is below it.
			if lm.BytesPerSecond < 40*gb {
				t.Errorf("a healthy run fails the 40 GB/s floor: %v", lm.BytesPerSecond)
			}
		})
	}
	// Best of the large sizes, not the last: a dip at the largest size
	// (one slow iteration) does not decide alone.
	res, err := parseNCCLFile(t, "nccl_oke_2x8_a100_healthy.txt")
	if err != nil {
		t.Fatal(err)
	}
	if lm, _ := res.LargeMessageBusBandwidth(1 << 30); lm.SizeBytes != 8<<30 {
		t.Errorf("from 1 GiB: %+v", lm)
	}
	res.Rows[len(res.Rows)-1].InPlace.BusBWBytesPerSecond = 100 * gb
	if lm, _ := res.LargeMessageBusBandwidth(defaultThreshold); lm.SizeBytes != 4<<30 || lm.BytesPerSecond != 233.98*gb {
		t.Errorf("with a dip at 8 GiB: %+v", lm)
	}
	if _, ok := (&NCCLResult{}).LargeMessageBusBandwidth(defaultThreshold); ok {
		t.Error("no rows, no bandwidth")
	}
}
