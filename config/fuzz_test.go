package config

import (
	"errors"
	"os"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

// FuzzParse: a plan is typed by hand, so Parse must survive anything without panicking,
// and whatever it accepts must hold the guarantees the rest of the exporter relies on.
// Inputs that crashed it are kept under testdata/fuzz/FuzzParse and rerun by `go test`.
func FuzzParse(f *testing.F) {
	if example, err := os.ReadFile(examplePath); err == nil {
		f.Add(example)
	}
	for _, tc := range validationCases {
		f.Add([]byte(tc.yaml))
	}
	// Shapes a byte-level mutator rarely builds: aliases that contain themselves, an alias
	// bomb, deep nesting.
	f.Add([]byte("nodes: &x [*x]\n"))
	f.Add([]byte("probes: &p {ib_write_bw: *p, nccl: {env: &e {A: *e}}}\n"))
	f.Add([]byte("a: &a [x,x,x,x]\nb: &b [*a,*a,*a,*a]\nnodes: [*b,*b,*b,*b]\n"))
	f.Add([]byte("nodes: [[[[[[[[[[[[[[[[{name: a}]]]]]]]]]]]]]]]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, err := Parse("fuzz.yaml", data)
		if err != nil {
			var errs ValidationErrors
			if !errors.As(err, &errs) || len(errs) == 0 || plan != nil {
				t.Fatalf("error %T %v with plan %v; want a non-empty ValidationErrors and no plan", err, err, plan)
			}
			for _, e := range errs {
				if e.File != "fuzz.yaml" || e.Msg == "" || e.Line < 0 {
					t.Fatalf("malformed error %+v", e)
				}
			}
			return
		}
		checkAcceptedPlan(t, plan)
	})
}

// checkAcceptedPlan asserts what validation promises about every plan it lets through.
func checkAcceptedPlan(t *testing.T, plan *Plan) {
	t.Helper()
	if len(plan.Nodes) == 0 || !plan.Networks.Management.IsValid() {
		t.Fatalf("accepted a plan without nodes or management network: %+v", plan)
	}
	names := map[string]bool{}
	computeIPs := map[string]bool{}
	for _, node := range plan.Nodes {
		if node.Name == "" || names[node.Name] || !plan.Networks.Management.Contains(node.ManagementIP) {
			t.Fatalf("accepted node %+v", node)
		}
		names[node.Name] = true
		if len(node.Interfaces) == 0 {
			t.Fatalf("accepted node %s without interfaces", node.Name)
		}
		for rail, iface := range node.Interfaces {
			if iface.Rail != rail || iface.Netdev == "" {
				t.Fatalf("accepted interface %+v at rail %d", iface, rail)
			}
			if iface.Address.IsValid() {
				ip := iface.IP().String()
				if computeIPs[ip] {
					t.Fatalf("accepted duplicate compute IP %s", ip)
				}
				computeIPs[ip] = true
			} else if plan.Expectations.LinkLayer == LinkLayerEthernet {
				t.Fatalf("accepted a RoCE interface without IP: %+v", iface)
			}
		}
	}
	e := plan.Expectations
	if e.MinBandwidthFraction <= 0 || e.MinBandwidthFraction > 1 || (e.PFCPriority != nil && (*e.PFCPriority < 0 || *e.PFCPriority > 7)) {
		t.Fatalf("accepted expectations %+v", e)
	}
	for _, d := range []*int{e.RoCEDSCP, e.CNPDSCP} {
		if d != nil && (*d < 0 || *d > 63) {
			t.Fatalf("accepted a DSCP outside 0-63: %+v", e)
		}
	}
	if tc, ok := e.RoCETrafficClass(); ok && (tc < 0 || tc > 255 || tc&3 != node.ECT0) {
		t.Fatalf("traffic class %d is not a ToS byte with ECT(0)", tc)
	}
	for _, s := range []Schedule{plan.Probes.IBWriteBW.Schedule, plan.Probes.IBWriteLat.Schedule, plan.Probes.NCCL.Schedule, plan.Probes.Ping.Schedule} {
		if s.Interval <= 0 || s.Timeout <= 0 || s.Timeout >= s.Interval || s.Jitter < 0 || s.Jitter >= s.Interval {
			t.Fatalf("accepted schedule %+v", s)
		}
	}
	if leader := plan.Probes.NCCL.Leader; leader != "" {
		if _, ok := plan.Node(leader); !ok {
			t.Fatalf("accepted NCCL leader %q that is not a node", leader)
		}
	}
}
