package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/safefile"
)

// aliasBomb is the plan of issue 12: one node with an interface list of ifaces entries
// under an anchor, and nodes-1 more nodes that each alias it. 10,000 nodes of 1,000
// interfaces are 690 KB that decode to 30 million values.
func aliasBomb(nodes, ifaces int) []byte {
	var b strings.Builder
	b.WriteString("networks:\n  management: 10.0.0.0/16\n  compute: 192.168.0.0/16\nnodes:\n  - name: n0\n    management_ip: 10.0.0.1\n    interfaces: &ifs\n")
	for i := 0; i < ifaces; i++ {
		fmt.Fprintf(&b, "      - {netdev: e%d, ip: 192.168.%d.%d/16}\n", i, i/250, i%250+1)
	}
	for n := 1; n < nodes; n++ {
		fmt.Fprintf(&b, "  - {name: n%d, management_ip: 10.0.%d.%d, interfaces: *ifs}\n", n, n/250, n%250+1)
	}
	return []byte(b.String())
}

// billionLaughs nests anchors: each level lists the previous one ten times. The walk
// never descends into a list where the schema wants a value, so the nesting does not
// multiply; the test holds that it fails at once all the same.
func billionLaughs(levels int) []byte {
	var b strings.Builder
	b.WriteString(minimalPlan + "probes:\n  ib_write_bw:\n    extra_args: &l0 [a, a, a, a, a, a, a, a, a, a]\n  ib_write_lat:\n    extra_args: [")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "&l%d [", i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("], ")
	}
	b.WriteString("x]\n")
	return []byte(b.String())
}

// parseBounded parses data and reports the error with what the parse cost.
func parseBounded(t *testing.T, data []byte) (err error, took time.Duration, allocatedMB uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	begin := time.Now()
	_, err = Parse("cluster.yaml", data)
	took = time.Since(begin)
	runtime.ReadMemStats(&after)
	return err, took, (after.TotalAlloc - before.TotalAlloc) >> 20
}

// TestAliasBombFailsFast: the plan ran past 120 s and 1.1 GB. It must fail at
// once with one clear error, not a flood of errors about each aliased copy. The bounds
// are loose on purpose (a slow CI machine); BenchmarkParseAliasBomb measures.
func TestAliasBombFailsFast(t *testing.T) {
	data := aliasBomb(10000, 1000)
	err, took, mb := parseBounded(t, data)
	t.Logf("%d KB alias bomb: %v, %d MB allocated", len(data)>>10, took, mb)
	var errs ValidationErrors
	if !errors.As(err, &errs) {
		t.Fatalf("want ValidationErrors, got %v", err)
	}
	found := false
	for _, e := range errs {
		if strings.Contains(e.Msg, "YAML aliases expand to more than 250000 values") {
			found = true
		}
	}
	if !found {
		t.Errorf("no alias-expansion error among:\n%v", err)
	}
	if took > 10*time.Second || mb > 500 {
		t.Errorf("took %v and %d MB", took, mb)
	}
}

func TestBillionLaughsFailsFast(t *testing.T) {
	err, took, mb := parseBounded(t, billionLaughs(9))
	t.Logf("billion laughs: %v, %d MB allocated: %v", took, mb, err)
	if err == nil {
		t.Fatal("accepted")
	}
	if took > 10*time.Second || mb > 500 {
		t.Errorf("took %v and %d MB", took, mb)
	}
}

// TestSharedInterfaceListIsAllowed: the alias use a plan has a reason for, an InfiniBand
// interface list shared by every node, still loads at the size maxAliasExpansion names.
func TestSharedInterfaceListIsAllowed(t *testing.T) {
	var b strings.Builder
	b.WriteString("networks:\n  management: 10.0.0.0/16\nexpectations:\n  link_layer: InfiniBand\nnodes:\n")
	for n := 0; n < 10000; n++ {
		fmt.Fprintf(&b, "  - name: node%05d\n    management_ip: 10.0.%d.%d\n    interfaces:", n, n/250, n%250+1)
		if n > 0 {
			b.WriteString(" *ifs\n")
			continue
		}
		b.WriteString(" &ifs\n")
		for r := 0; r < 8; r++ {
			fmt.Fprintf(&b, "      - {netdev: ib%d, rdma_device: mlx5_%d}\n", r, r)
		}
	}
	plan, err := Parse("cluster.yaml", []byte(b.String()))
	if err != nil {
		t.Fatalf("%.500v", err)
	}
	if len(plan.Nodes) != 10000 || len(plan.Nodes[9999].Interfaces) != 8 {
		t.Errorf("%d nodes", len(plan.Nodes))
	}
}

// TestErrorsStopAtMaxErrors: a mistake repeated on 1,000 nodes gives the first
// maxErrors errors in file order and a count of the rest.
func TestErrorsStopAtMaxErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("networks:\n  management: 10.0.0.0/16\n  compute: 192.168.100.0/24\nnodes:\n")
	for n := 0; n < 1000; n++ {
		// Every compute IP is outside the compute network.
		fmt.Fprintf(&b, "  - {name: n%d, management_ip: 10.0.%d.%d, interfaces: [{netdev: e0, ip: 172.16.%d.%d/16}]}\n", n, n/250, n%250+1, n/250, n%250+1)
	}
	_, err := Parse("cluster.yaml", []byte(b.String()))
	var errs ValidationErrors
	if !errors.As(err, &errs) {
		t.Fatalf("want ValidationErrors, got %v", err)
	}
	if len(errs) != maxErrors+1 {
		t.Fatalf("%d errors reported, want %d and a count", len(errs), maxErrors)
	}
	for i, e := range errs[:maxErrors] {
		if e.Line != 5+i || !strings.Contains(e.Msg, "is outside the compute network") {
			t.Fatalf("error %d: %v, want the one on line %d", i, e, 5+i)
		}
	}
	if last := errs[maxErrors].Error(); last != "cluster.yaml: … and 900 more errors; fix these and load the plan again" {
		t.Errorf("last line %q", last)
	}
}

func TestPlanSizeLimit(t *testing.T) {
	big := append([]byte(minimalPlan), []byte("#"+strings.Repeat(" ", MaxPlanBytes))...)
	if _, err := Parse("cluster.yaml", big); err == nil || !strings.Contains(err.Error(), "more than the limit of 4194304") {
		t.Errorf("Parse of %d bytes: %v", len(big), err)
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	os.WriteFile(path, big, 0o644)
	if _, err := Load(path); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("Load of %d bytes: %v", len(big), err)
	}
}

// TestPlanMustBeARegularFile: a FIFO would block the start until a writer came, a
// symlink to /dev/zero would never end.
func TestPlanMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // unblock a reader should the test fail
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	zero := filepath.Join(dir, "zero.yaml")
	os.Symlink("/dev/zero", zero)
	for _, path := range []string{fifo, zero, dir} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(path)
			done <- err
		}()
		select {
		case err := <-done:
			var pathErr *fs.PathError
			if !errors.Is(err, safefile.ErrNotRegular) || !errors.As(err, &pathErr) {
				t.Errorf("Load(%s): %v, want a *fs.PathError saying it is not a regular file", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) still running after 5s", path)
		}
	}
}

// The benchmarks measure the figures in the comments of MaxPlanBytes and
// maxAliasExpansion: go test -run '^$' -bench BenchmarkParse -benchtime 3x ./config

func BenchmarkParseAliasBomb(b *testing.B) {
	data := aliasBomb(10000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		Parse("cluster.yaml", data)
	}
}

// BenchmarkParseWorstCaseYAML: the most YAML values a plan of MaxPlanBytes can hold.
func BenchmarkParseWorstCaseYAML(b *testing.B) {
	data := []byte("nodes: [" + strings.Repeat("1,", MaxPlanBytes/2-8) + "1]\n")
	b.ReportAllocs()
	for b.Loop() {
		Parse("cluster.yaml", data)
	}
}

// BenchmarkParseLargePlan: 5,500 RoCE nodes of 8 rails, written out in block style.
func BenchmarkParseLargePlan(b *testing.B) {
	var s strings.Builder
	s.WriteString("networks:\n  management: 10.0.0.0/16\n  compute: 172.16.0.0/12\nnodes:\n")
	for n := 0; n < 5500; n++ {
		fmt.Fprintf(&s, "  - name: node%05d\n    management_ip: 10.0.%d.%d\n    interfaces:\n", n, n/250, n%250+1)
		for r := 0; r < 8; r++ {
			fmt.Fprintf(&s, "      - netdev: ens%df0np0\n        rdma_device: mlx5_%d\n        ip: 172.%d.%d.%d/16\n", r+1, r, 16+r, n/250, n%250+1)
		}
	}
	data := []byte(s.String())
	if len(data) > MaxPlanBytes {
		b.Fatalf("%d bytes, above MaxPlanBytes", len(data))
	}
	b.ReportMetric(float64(len(data)), "plan-bytes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("cluster.yaml", data); err != nil {
			b.Fatalf("%.300v", err)
		}
	}
}
