package health

import (
	"slices"
	"testing"

	"github.com/roce-exporter/roce_exporter/node"
)

func TestStatusesWorstFirstIsTheDoctorsOrder(t *testing.T) {
	want := []Status{StatusFail, StatusWarn, StatusOK, StatusSkipped}
	if got := StatusesWorstFirst(); !slices.Equal(got, want) {
		t.Fatalf("StatusesWorstFirst() = %v, want %v", got, want)
	}
	for i, st := range want {
		if st.Rank() != i {
			t.Errorf("%s.Rank() = %d, want %d", st, st.Rank(), i)
		}
	}
	if r := Status("unknown").Rank(); r <= StatusSkipped.Rank() {
		t.Errorf("an unknown status ranks %d, before skipped", r)
	}
	// Callers get a copy: the one order cannot be changed from outside.
	StatusesWorstFirst()[0] = StatusOK
	if StatusesWorstFirst()[0] != StatusFail {
		t.Error("StatusesWorstFirst hands out the order itself")
	}

	fs := []Finding{
		{ID: "a", Status: StatusSkipped}, {ID: "b", Status: StatusOK}, {ID: "c", Status: StatusFail},
		{ID: "d", Status: StatusWarn}, {ID: "e", Status: StatusOK}, {ID: "f", Status: StatusFail},
	}
	SortWorstFirst(fs)
	var ids string
	for _, f := range fs {
		ids += f.ID
	}
	// Stable: c before f, b before e.
	if ids != "cfdbea" {
		t.Errorf("sorted %s, want cfdbea", ids)
	}
}

func TestSubjectPortsReadsBackEveryPortSubject(t *testing.T) {
	single := &node.Device{Name: "mlx5_0", Ports: []*node.Port{{Device: "mlx5_0", Number: 1, Interface: "ens1f0np0"}}}
	dual := &node.Device{Name: "mlx4_0", Ports: []*node.Port{
		{Device: "mlx4_0", Number: 1, Interface: "ens2"}, {Device: "mlx4_0", Number: 2, Interface: "ens2d1"}}}
	// IPoIB child and parent share one netdev on both ports of an IB card.
	shared := &node.Device{Name: "mlx5_4", Ports: []*node.Port{
		{Device: "mlx5_4", Number: 1, Interface: "ib0"}, {Device: "mlx5_4", Number: 2, Interface: "ib0"}}}
	noNetdev := &node.Device{Name: "efa_0", Ports: []*node.Port{{Device: "efa_0", Number: 1}}}
	snap := &node.Snapshot{
		Devices: []*node.Device{single, dual, shared, noNetdev},
		Interfaces: map[string]*node.Interface{
			"ens1f0np0": {Name: "ens1f0np0", RDMADevice: "mlx5_0"},
			"eth9":      {Name: "eth9"}, // --collector.netdev.include, no RDMA device
		},
	}
	ports := SubjectPorts(snap)
	for subject, want := range map[string]SubjectPort{
		PortSubject(single, single.Ports[0]): {"mlx5_0", "ens1f0np0"},
		PortSubject(dual, dual.Ports[0]):     {"mlx4_0", "ens2"},
		PortSubject(dual, dual.Ports[1]):     {"mlx4_0", "ens2d1"},
		"mlx4_0":                             {Device: "mlx4_0"}, // two netdevs: the device alone names none
		"mlx5_4":                             {"mlx5_4", "ib0"},
		"mlx5_0/1":                           {"mlx5_0", "ens1f0np0"},
		"efa_0":                              {Device: "efa_0"},
		"ens1f0np0":                          {"mlx5_0", "ens1f0np0"},
		"ens2d1":                             {"mlx4_0", "ens2d1"},
		"eth9":                               {Interface: "eth9"},
		SubjectNode:                          {},
		"mlx5_9":                             {},
	} {
		if got := ports[subject]; got != want {
			t.Errorf("SubjectPorts[%q] = %+v, want %+v", subject, got, want)
		}
	}
	if got := PortSubject(single, single.Ports[0]); got != "mlx5_0" {
		t.Errorf("single-port subject %q, want the device alone", got)
	}
	if got := PortSubject(dual, dual.Ports[1]); got != "mlx4_0/2" {
		t.Errorf("dual-port subject %q, want mlx4_0/2", got)
	}
}
