package probes

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-exporter/roce_exporter/internal/sysfixture"
	"github.com/roce-exporter/roce_exporter/node"
	"github.com/roce-exporter/roce_exporter/reader"
)

// fixtureNodeInfo is a SnapshotNode over a freshly written fixture node, read by
// the exporter's reader, the way the exporter backs the probes.
func fixtureNodeInfo(t *testing.T) (SnapshotNode, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "node")
	if err := sysfixture.WriteScenario(root, "mlx5-8x400g-healthy"); err != nil {
		t.Fatal(err)
	}
	r, err := reader.New(reader.Options{
		SysPath: filepath.Join(root, "sys"), DevPath: filepath.Join(root, "dev"),
		Sources: reader.SourceNames(), Timeout: 5 * time.Second, ReplayDir: filepath.Join(root, "replay"),
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return SnapshotNode{Read: func() *node.Snapshot { return r.Read().Snapshot }}, root
}

// TestBandwidthProbeProvesItsPriority: the stand-in ib_write_bw moves 49 GB through
// the fixture's mlx5_0; where its priority counters count them decides the verdict,
// however good the bandwidth.
func TestBandwidthProbeProvesItsPriority(t *testing.T) {
	for _, c := range []struct {
		prio   string
		reason string
	}{{"3", ""}, {"0", ReasonWrongPriority}} {
		t.Run("priority "+c.prio, func(t *testing.T) {
			info, root := fixtureNodeInfo(t)
			standinEnv(t, "bw_counts")
			t.Setenv("STANDIN_FIXTURE", root)
			t.Setenv("STANDIN_PRIO", c.prio)
			s := newTestScheduler(t, testPlan(t, "0.9", ""), info)
			res := s.bw.runClient(context.Background(), link0)
			if res.Reason != c.reason || res.Success != (c.reason == "") {
				t.Fatalf("success %v reason %q, want reason %q; warnings %q", res.Success, res.Reason, c.reason, res.Warnings)
			}
			if res.BandwidthBytesPerSecond != 392.34e9/8 || res.RoCEPriorityShare == nil {
				t.Fatalf("bandwidth %v, share %v", res.BandwidthBytesPerSecond, res.RoCEPriorityShare)
			}
			share := *res.RoCEPriorityShare
			switch c.reason {
			case "":
				if share < 1 || share > 1.05 || res.CarriedOnPriority != nil {
					t.Errorf("share on priority 3 = %v (want the bytes plus 2%% headers), carried on %v", share, res.CarriedOnPriority)
				}
			default:
				if share != 0 || res.CarriedOnPriority == nil || *res.CarriedOnPriority != 0 {
					t.Errorf("share %v, carried on %v; want 0 and priority 0", share, res.CarriedOnPriority)
				}
				if res.Hint == "" || len(res.Warnings) == 0 {
					t.Errorf("no hint or detail: %+v", res)
				}
				t.Logf("verdict %s: %s", res.Reason, res.Warnings[len(res.Warnings)-1])
			}
		})
	}
}

// TestPriorityNotJudged: without a RoCE priority in the plan, with a NodeInfo that
// cannot read the counters, or with counters that do not move, a bandwidth run is
// judged on its bandwidth alone.
func TestPriorityNotJudged(t *testing.T) {
	standinEnv(t, "bw_ok")
	plan := testPlan(t, "0.9", "")
	plan.Expectations.PFCPriority = nil
	info, _ := fixtureNodeInfo(t)
	s := newTestScheduler(t, plan, info)
	if res := s.bw.runClient(context.Background(), link0); !res.Success || res.RoCEPriorityShare != nil {
		t.Errorf("lossy plan: %+v", res)
	}
	s = newTestScheduler(t, testPlan(t, "0.9", ""), fakeNode{rate: 400e9, gid: 3})
	if res := s.bw.runClient(context.Background(), link0); !res.Success || res.RoCEPriorityShare != nil {
		t.Errorf("no counters: %+v", res)
	}
	// A replayed node whose counters do not move while the stand-in "runs": nothing
	// to prove, not a wrong priority.
	s = newTestScheduler(t, testPlan(t, "0.9", ""), info)
	if res := s.bw.runClient(context.Background(), link0); !res.Success || res.RoCEPriorityShare != nil {
		t.Errorf("frozen counters: %+v", res)
	}
}
