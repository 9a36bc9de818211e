package collector

import (
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/health"
	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
)

func statusOf(st Status, name string) CollectorStatus {
	for _, c := range st.Collectors {
		if c.Name == name {
			return c
		}
	}
	return CollectorStatus{}
}

func TestStatusShowsLastSuccessErrorsAndFindingsWorstFirst(t *testing.T) {
	root := writeNode(t, sysfixture.HealthyCX7(2))
	ffs := newFaultFS()
	release := ffs.setHang("mlx5_0/ports/1/hw_counters/out_of_buffer")
	cfg := testConfig(root, "rdma", "netdev", "pcie", "health")
	cfg.ro.FS = ffs
	cfg.ro.Timeout = 300 * time.Millisecond
	e, _ := newTestExporter(t, cfg)

	// No scrape yet: Status collects first.
	begin := time.Now()
	st := e.Status()
	if st.Collected.Before(begin) {
		t.Fatalf("Status did not collect: collected at %v", st.Collected)
	}
	if !st.HealthEnabled || len(st.Findings) == 0 {
		t.Fatal("no findings from the health collector")
	}
	rdma := statusOf(st, "rdma")
	if rdma.Err == "" || !rdma.LastSuccess.IsZero() || rdma.LastRun.IsZero() {
		t.Errorf("hung rdma: %+v, want an error, a run and no success", rdma)
	}
	for _, n := range []string{"netdev", "pcie", "health"} {
		c := statusOf(st, n)
		if c.Err != "" || c.LastSuccess.IsZero() || c.Duration <= 0 {
			t.Errorf("%s: %+v, want a success with a duration", n, c)
		}
	}
	for i := 1; i < len(st.Findings); i++ {
		if st.Findings[i].Status.Rank() < st.Findings[i-1].Status.Rank() {
			t.Fatalf("finding %d (%s) after %s: not worst first", i, st.Findings[i].Status, st.Findings[i-1].Status)
		}
	}
	if f := st.Findings[0]; f.Status == health.StatusOK {
		t.Errorf("a device whose reads hang must be a finding, first is %+v", f)
	}

	// A fresh collection is reused, not repeated.
	if again := e.Status(); !again.Collected.Equal(st.Collected) {
		t.Error("Status collected again within pageMaxAge")
	}

	// After the read returns, the next scrape records the success.
	close(release)
	deadline := time.Now().Add(3 * time.Second)
	for {
		e.Text()
		e.statusMu.Lock()
		ok := statusOf(Status{Collectors: []CollectorStatus{e.collectors[indexOf(e, "rdma")].status}}, "rdma")
		e.statusMu.Unlock()
		if ok.Err == "" && !ok.LastSuccess.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdma did not record a success after recovering: %+v", ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func indexOf(e *Exporter, name string) int {
	for i, rc := range e.collectors {
		if rc.name == name {
			return i
		}
	}
	return -1
}
