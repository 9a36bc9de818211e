package parse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestParsePerftestBandwidthSamples(t *testing.T) {
	tests := []struct {
		file     string
		test     string
		device   string
		link     string
		gid      int
		mtu      int
		qps      int
		unit     PerftestUnit
		rows     int
		last     PerftestRow // the largest-size row, as printed × unit factor
		warnings int
	}{
		{
			file: "perftest_send_bw_mb_rdmacm.txt", test: "Send BW Test", device: "mlx5_2", link: "Ethernet",
			gid: 3, mtu: 4096, qps: 1, unit: UnitMB, rows: 1,
			last: PerftestRow{Bytes: 65536, Iterations: 9349389, BWPeak: 0, BWAverage: 11714.10 * mib, MsgRateMpps: 0.187426},
		},
		{
			file: "perftest_write_bw_postlist_gbits_issue273.txt", test: "RDMA_Write Post List BW Test", device: "ib0",
			link: "Ethernet", gid: 2, mtu: 4096, qps: 1, unit: UnitGb, rows: 1,
			last: PerftestRow{Bytes: 8, Iterations: 224958464, BWPeak: 0, BWAverage: 0.48 * gbit, MsgRateMpps: 7.498617},
		},
		{
			// REPORT_FMT_EXT rows (6 decimals) come first, then REPORT_FMT.
			file: "perftest_write_bw_gbits_all_issue132.txt", test: "RDMA_Write BW Test", device: "mlx5_0", link: "IB",
			gid: -1, mtu: 4096, qps: 1, unit: UnitGb, rows: 3,
			last: PerftestRow{Bytes: 8, Iterations: 5000, BWPeak: 0.17 * gbit, BWAverage: 0.17 * gbit, MsgRateMpps: 2.641399},
		},
		{
			file: "perftest_write_bw_gbits_2510_cpufreq_warning.txt", test: "RDMA_Write BW Test", device: "mlx5_0",
			link: "IB", gid: -1, mtu: 4096, qps: 1, unit: UnitGb, rows: 1, warnings: 1,
			last: PerftestRow{Bytes: 65536, Iterations: 5000, BWPeak: 392.38 * gbit, BWAverage: 392.34 * gbit, MsgRateMpps: 0.748336},
		},
		{
			file: "perftest_send_bw_mib_2510_cpufreq_warning.txt", test: "Send BW Test", device: "mlx5_0", link: "IB",
			gid: -1, mtu: 4096, qps: 1, unit: UnitMiB, rows: 1, warnings: 1,
			last: PerftestRow{Bytes: 65536, Iterations: 1000, BWPeak: 46567.34 * mib, BWAverage: 46557.03 * mib, MsgRateMpps: 0.744912},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := Perftest(strings.NewReader(string(readTestdata(t, tt.file))))
			if err != nil {
				t.Fatal(err)
			}
			if res.Test != tt.test || res.Device != tt.device || res.LinkType != tt.link || res.GIDIndex != tt.gid ||
				res.MTU != tt.mtu || res.NumQPs != tt.qps || res.Unit != tt.unit {
				t.Errorf("banner = %q %q %q gid=%d mtu=%d qps=%d unit=%q", res.Test, res.Device, res.LinkType,
					res.GIDIndex, res.MTU, res.NumQPs, res.Unit)
			}
			if len(res.Rows) != tt.rows {
				t.Fatalf("rows = %d, want %d", len(res.Rows), tt.rows)
			}
			got := res.Rows[len(res.Rows)-1]
			if got.Bytes != tt.last.Bytes || got.Iterations != tt.last.Iterations {
				t.Errorf("last row = %d bytes × %d, want %d × %d", got.Bytes, got.Iterations, tt.last.Bytes, tt.last.Iterations)
			}
			approx(t, "BWPeak", got.BWPeak, tt.last.BWPeak)
			approx(t, "BWAverage", got.BWAverage, tt.last.BWAverage)
			approx(t, "MsgRateMpps", got.MsgRateMpps, tt.last.MsgRateMpps)
			approx(t, "BandwidthBytesPerSecond", res.BandwidthBytesPerSecond, tt.last.BWAverage)
			if len(res.Warnings) != tt.warnings {
				t.Errorf("warnings = %q, want %d", res.Warnings, tt.warnings)
			}
			if res.Reason != "" || len(res.Errors) != 0 {
				t.Errorf("a good run has reason %q and errors %q", res.Reason, res.Errors)
			}
		})
	}
}

func TestParsePerftestExtFormatRows(t *testing.T) {
	res, err := Perftest(strings.NewReader(string(readTestdata(t, "perftest_write_bw_gbits_all_issue132.txt"))))
	if err != nil {
		t.Fatal(err)
	}
	first := res.Rows[0]
	if first.Bytes != 2 || first.Iterations != 5000 {
		t.Fatalf("first row = %+v", first)
	}
	approx(t, "BWPeak", first.BWPeak, 0.042350*gbit)
	approx(t, "BWAverage", first.BWAverage, 0.042185*gbit)
	approx(t, "MsgRate", first.MsgRateMpps, 2.636533)
}

func TestParsePerftestLatencySamples(t *testing.T) {
	tests := []struct {
		file     string
		test     string
		want     PerftestLatencyRow
		warnings int
	}{
		{
			file: "perftest_send_lat_2510_cpufreq_warnings.txt", test: "Send Latency Test", warnings: 2,
			want: PerftestLatencyRow{Bytes: 2, Iterations: 1000, Min: 1.24 * usec, Max: 5.19 * usec, Typical: 1.27 * usec,
				Avg: 1.27 * usec, Stdev: 0, P99: 1.37 * usec, P999: 5.19 * usec},
		},
		{
			file: "perftest_write_lat_mib_era.txt",
			want: PerftestLatencyRow{Bytes: 2, Iterations: 1000, Min: 1.10 * usec, Max: 2.05 * usec, Typical: 1.11 * usec,
				Avg: 1.12 * usec, Stdev: 0, P99: 1.19 * usec, P999: 2.05 * usec},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := Perftest(strings.NewReader(string(readTestdata(t, tt.file))))
			if err != nil {
				t.Fatal(err)
			}
			if res.Test != tt.test || len(res.LatencyRows) != 1 || len(res.Rows) != 0 {
				t.Fatalf("test %q, %d latency rows, %d bandwidth rows", res.Test, len(res.LatencyRows), len(res.Rows))
			}
			got := res.LatencyRows[0]
			if got.Bytes != tt.want.Bytes || got.Iterations != tt.want.Iterations {
				t.Errorf("row = %+v", got)
			}
			approx(t, "Min", got.Min, tt.want.Min)
			approx(t, "Max", got.Max, tt.want.Max)
			approx(t, "Typical", got.Typical, tt.want.Typical)
			approx(t, "Avg", got.Avg, tt.want.Avg)
			approx(t, "Stdev", got.Stdev, tt.want.Stdev)
			approx(t, "P99", got.P99, tt.want.P99)
			approx(t, "P999", got.P999, tt.want.P999)
			if len(res.Warnings) != tt.warnings || res.Reason != "" {
				t.Errorf("warnings %q reason %q", res.Warnings, res.Reason)
			}
		})
	}
}

func TestParsePerftestFailureSamples(t *testing.T) {
	tests := []struct {
		file   string
		reason string
	}{
		{"perftest_err_connect_pr228.txt", ReasonConnectRefused},
		{"perftest_err_rtr_issue393.txt", ReasonGIDIndex},
		{"perftest_err_status12_softiwarp27.txt", ReasonRetryExceeded},
		// Status 4 is a local protection error, not packet loss.
		{"perftest_err_status4_issue173.txt", ReasonExecError},
		// A banner and a table header but no row: the server side of a
		// client that went away.
		{"perftest_err_readkeys_server_sparkrdma31.txt", ReasonExecError},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := Perftest(strings.NewReader(string(readTestdata(t, tt.file))))
			if !errors.Is(err, ErrNoResults) {
				t.Fatalf("err = %v, want ErrNoResults", err)
			}
			if res == nil || res.Reason != tt.reason {
				t.Fatalf("reason = %q, want %q", res.Reason, tt.reason)
			}
			if len(res.Errors) == 0 {
				t.Error("the error lines must be kept for the operator")
			}
		})
	}
}

func TestClassifyPerftestKnownErrors(t *testing.T) {
	// Error texts as perftest prints them (its src/perftest_*.c format
	// strings).
	tests := []struct {
		name    string
		text    string
		hasRows bool
		want    string
	}{
		{"no devices", "No IB devices found", false, ReasonNoDevice},
		{"named device missing", "IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device", false, ReasonNoDevice},
		{"no context", " Couldn't get context for the device", false, ReasonNoDevice},
		{"tcp connect", "Couldn't connect to 192.168.125.211:18515\n Unable to init the socket connection", false, ReasonConnectRefused},
		{"socket fd, old form", "Unable to open file descriptor for socket connection", false, ReasonConnectRefused},
		{"qp init", "Failed to modify QP to INIT", false, ReasonGIDIndex},
		{"qp rtr", "Failed to modify QP 1234 to RTR\n Unable to Connect the HCA's through the link", false, ReasonGIDIndex},
		{"gid types", "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.", false, ReasonGIDIndex},
		{"retry, <= 4.5 form", " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n scnt=128, ccnt=0", false, ReasonRetryExceeded},
		{"retry, HEAD form", " Completion with error at client\n Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81\n scnt=128, ccnt=0", false, ReasonRetryExceeded},
		{"other completion, HEAD form", " Completion with error at client\n Failed status-Work Request Flushed Error (5): wr_id 0 syndrom 0xf9", false, ReasonExecError},
		// Status 120 must not be read as 12.
		{"status 120", " Failed status 120: wr_id 0 syndrom 0x0", false, ReasonExecError},
		{"below limit with rows", "Error: BW result is below bw limit", true, ReasonBelowThreshold},
		{"msg rate limit", "Error: Msg rate  is below msg_rate limit", true, ReasonBelowThreshold},
		// A completion error after rows were printed is still a failure.
		{"completion error after rows", " Failed status 4: wr_id 0 syndrom 0x51", true, ReasonExecError},
		// The earliest failure in a run wins: no TCP link means the QP
		// error that follows is a consequence.
		{"connect before qp", "Couldn't connect to 10.0.0.2:18515\nFailed to modify QP to RTR", false, ReasonConnectRefused},
		{"unknown text without rows", "Segmentation fault", false, ReasonExecError},
		{"clean run", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyPerftest(splitLines(tt.text), tt.hasRows, false, outputSeen{recognized: true}); got != tt.want {
				t.Errorf("classifyPerftest = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePerftestBelowLimitKeepsRows(t *testing.T) {
	// -w/--limit_bw prints the row, then the verdict.
	out := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
		" 65536      5000             180.12             179.98 \t\t     0.343277\n" +
		"---------------------------------------------------------------------------------------\n" +
		"Error: BW result is below bw limit\n"
	res, err := Perftest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != ReasonBelowThreshold || len(res.Rows) != 1 {
		t.Fatalf("reason %q rows %d", res.Reason, len(res.Rows))
	}
	approx(t, "BandwidthBytesPerSecond", res.BandwidthBytesPerSecond, 179.98*gbit)
}

func TestParsePerftestRowsByPosition(t *testing.T) {
	// A future header with another column and a different spacing must not
	// stop the parser: rows are read by position after the header.
	out := " #bytes  #iterations  BW peak[MiB/sec]  BW average[MiB/sec]  MsgRate[Mpps]  CPU_Util[%]\n" +
		" 1048576    5000      11030.78     11030.45     0.011030     12.50\n"
	res, err := Perftest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Bytes != 1048576 {
		t.Fatalf("rows = %+v", res.Rows)
	}
	approx(t, "BWAverage", res.Rows[0].BWAverage, 11030.45*mib)
	approx(t, "MsgRate", res.Rows[0].MsgRateMpps, 0.011030)
}

func TestParsePerftestHeadlineIsLargestSize(t *testing.T) {
	out := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
		" 8388608    5000             390.10             389.90 \t\t     0.005810\n" +
		" 65536      5000             350.00             349.50 \t\t     0.666618\n"
	res, err := Perftest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "BandwidthBytesPerSecond", res.BandwidthBytesPerSecond, 389.90*gbit)
}

func TestParsePerftestDurationLatency(t *testing.T) {
	// RESULT_FMT_LAT_DUR: ib_write_lat -D prints only the average.
	out := " #bytes        #iterations       t_avg[usec]    tps average\n" +
		" 2             8123456          1.23           812345.60\n"
	res, err := Perftest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LatencyRows) != 1 || res.LatencyRows[0].Iterations != 8123456 {
		t.Fatalf("latency rows = %+v", res.LatencyRows)
	}
	approx(t, "Avg", res.LatencyRows[0].Avg, 1.23*usec)
	if res.LatencyRows[0].P99 != 0 {
		t.Error("duration mode has no percentiles")
	}
}

func TestParsePerftestRejectsNegativeBandwidth(t *testing.T) {
	// linux-rdma/perftest#82: a counter bug printed negative averages.
	out := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
		" 65536      1234            0.00               -14.52\t\t   -0.027696\n"
	res, err := Perftest(strings.NewReader(out))
	if !errors.Is(err, ErrNoResults) {
		t.Fatalf("err = %v", err)
	}
	// The only row cannot be read: the output is unreadable, which is not
	// the test program failing to run.
	if res.Reason != ReasonParseError || len(res.Warnings) != 1 {
		t.Errorf("reason %q warnings %q", res.Reason, res.Warnings)
	}
}

func TestParsePerftestEmptyAndGarbage(t *testing.T) {
	// Nothing perftest prints: "not its output", not "the program failed",
	// and the lines of another text that say "error" are not its errors.
	for _, in := range []string{"", "\n\n", "hello world\n1 2 3\n", strings.Repeat("-", 87),
		"It exits 0 when nothing fails, 1 when something does and 2 on a usage error\nwarning: read the README\n"} {
		res, err := Perftest(strings.NewReader(in))
		if !errors.Is(err, ErrNoResults) || res == nil || res.Reason != ReasonNotToolOutput || len(res.Errors)+len(res.Warnings) > 0 {
			t.Errorf("%q: err %v res %+v", in, err, res)
		}
	}
	// perftest's own failure before any banner is still its output.
	if res, _ := Perftest(strings.NewReader(" Couldn't connect to 192.168.100.12:18515\n")); res.Reason != ReasonConnectRefused {
		t.Errorf("perftest's connect failure alone: reason %q", res.Reason)
	}
	// perftest's banner and table header with no row: a run cut short.
	banner := "                    RDMA_Write BW Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n" +
		" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	if res, _ := Perftest(strings.NewReader(banner)); res.Reason != ReasonIncompleteOutput {
		t.Errorf("banner without a row: reason %q, want %q", res.Reason, ReasonIncompleteOutput)
	}
}

// TestParsePerftestImpossibleBandwidth: a bandwidth no port reaches is a
// corrupt output (issue 12: "1e300 Gb/sec" passed as success), while the
// fastest real numbers stay measurements.
func TestParsePerftestImpossibleBandwidth(t *testing.T) {
	header := " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	for _, tc := range []struct {
		row    string
		reason string
	}{
		{" 65536      5000             1e300              1e300 \t\t     0.748336\n", ReasonParseError},
		// Just above two directions of two 1.6 Tb/s ports.
		{" 1048576    5000             0.00               6401.00 \t\t     0.748336\n", ReasonParseError},
		// A peak can be corrupt alone.
		{" 1048576    5000             9.9e20             392.34 \t\t     0.748336\n", ReasonParseError},
		// 1.6TbE both ways: the most a single port can show.
		{" 1048576    5000             0.00               3200.00 \t\t     0.381470\n", ""},
		{" 1048576    5000             0.00               392.34 \t\t     0.046718\n", ""},
	} {
		res, _ := Perftest(strings.NewReader(header + tc.row))
		if res.Reason != tc.reason {
			t.Errorf("%q: reason %q, want %q (errors %q)", tc.row, res.Reason, tc.reason, res.Errors)
		}
	}
	// Beside a good row the output is still corrupt: no verdict may rest on it.
	res, err := Perftest(strings.NewReader(header +
		" 65536      5000             392.38             392.34 \t\t     0.748336\n" +
		" 1048576    5000             0.00               1e300 \t\t     0.046718\n"))
	if err != nil || res.Reason != ReasonParseError || len(res.Rows) != 1 || len(res.Errors) != 1 {
		t.Errorf("err %v reason %q rows %d errors %q", err, res.Reason, len(res.Rows), res.Errors)
	}
	// In MiB/s: 800 GB/s is 762939 MiB/s.
	mibHeader := " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
	if res, _ := Perftest(strings.NewReader(mibHeader + " 65536  5000  0.00  800000.00  0.052697\n")); res.Reason != ReasonParseError {
		t.Errorf("800000 MiB/s: reason %q", res.Reason)
	}
}

func TestMessagesAreBounded(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		b.WriteString("Conflicting CPU frequency values detected: ")
		b.WriteString(strings.Repeat("9", i%7))
		b.WriteString(" CPU Frequency is not max.\n")
	}
	b.WriteString(strings.Repeat("Failed x", 500) + "\n")
	res, _ := Perftest(strings.NewReader(b.String()))
	if len(res.Warnings) != 7 {
		t.Errorf("identical warnings must be kept once: %d kept", len(res.Warnings))
	}
	if len(res.Errors) != 1 || len(res.Errors[0]) > maxMessageLen {
		t.Errorf("long error line not cut: %d errors", len(res.Errors))
	}
}

func TestParsePerftestLineEndings(t *testing.T) {
	out := " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\r\n" +
		" 65536      5000             3293.63            3293.56             0.052697\r\n"
	res, err := Perftest(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "BWAverage", res.Rows[0].BWAverage, 3293.56*mib)
}

func TestParsePerftestRejectsHugeOutput(t *testing.T) {
	huge := io.LimitReader(zeroReader{}, MaxOutputBytes+1)
	if res, err := Perftest(huge); err == nil || res != nil {
		t.Errorf("output over the limit must be refused: %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
