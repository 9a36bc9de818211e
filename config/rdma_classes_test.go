package config

import (
	"os"
	"strings"
	"testing"
)

// A plan names the RDMA classes besides RoCE's (storage on a priority of its
// own); each is read with its name and priority, and every mistake is an
// error at its line.
func TestOtherRDMAClasses(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan+`expectations:
  pfc_priority: 3
  other_rdma_classes:
    - {name: storage, priority: 4}
    - name: gds
      priority: 5
`))
	if err != nil {
		t.Fatal(err)
	}
	got := plan.Expectations.OtherRDMAClasses
	if len(got) != 2 || got[0] != (RDMAClass{"storage", 4}) || got[1] != (RDMAClass{"gds", 5}) {
		t.Errorf("classes %+v", got)
	}
	if c, ok := plan.Expectations.OtherRDMAClassOn(4); !ok || c.Name != "storage" {
		t.Errorf("priority 4: %+v, %v", c, ok)
	}
	if _, ok := plan.Expectations.OtherRDMAClassOn(3); ok {
		t.Error("the RoCE priority is a class's")
	}
	if len(plan.Warnings) != 0 {
		t.Errorf("warnings %v", plan.Warnings)
	}

	const head = minimalPlan + "expectations:\n  pfc_priority: 3\n  other_rdma_classes:\n" // line 14 is the first item
	for _, tc := range []errorCase{
		{name: "the RoCE priority", yaml: head + "    - {name: storage, priority: 3}\n",
			want: []wantError{{14, "expectations.other_rdma_classes[0].priority", "is the RoCE priority"}}},
		{name: "two classes on one priority", yaml: head + "    - {name: storage, priority: 4}\n    - {name: gds, priority: 4}\n",
			want: []wantError{{15, "expectations.other_rdma_classes[1].priority", "already the priority of the class storage"}}},
		{name: "one name twice", yaml: head + "    - {name: storage, priority: 4}\n    - {name: Storage, priority: 5}\n",
			want: []wantError{{15, "expectations.other_rdma_classes[1].name", "already the name of expectations.other_rdma_classes[0] (line 14)"}}},
		{name: "not a priority", yaml: head + "    - {name: storage, priority: 8}\n",
			want: []wantError{{14, "expectations.other_rdma_classes[0].priority", "not an 802.1p priority"}}},
		{name: "not a name", yaml: head + "    - {name: \"nvme of\", priority: 4}\n",
			want: []wantError{{14, "expectations.other_rdma_classes[0].name", "is not a class name"}}},
		{name: "no priority", yaml: head + "    - {name: storage}\n",
			want: []wantError{{14, "expectations.other_rdma_classes[0].priority", "is required"}}},
		{name: "a typo", yaml: head + "    - {name: storage, prio: 4}\n",
			want: []wantError{{14, "expectations.other_rdma_classes[0].prio", "this section takes: name, priority"}, {14, "expectations.other_rdma_classes[0].priority", "is required"}}},
		{name: "not a list", yaml: head[:len(head)-1] + " storage\n",
			want: []wantError{{13, "expectations.other_rdma_classes", "must be a list"}}},
		{name: "InfiniBand", yaml: minimalPlan + "expectations:\n  link_layer: InfiniBand\n  other_rdma_classes: [{name: storage, priority: 4}]\n",
			want: []wantError{{13, "expectations.other_rdma_classes", "applies to RoCE"}}},
		{name: "a valid class", yaml: head + "    - {name: storage, priority: 4}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkErrors(t, tc) })
	}
}

// Priority 0 is legal but hides RoCE that lost its marking: a warning.
func TestOtherRDMAClassOnPriority0Warns(t *testing.T) {
	plan, err := Parse("cluster.yaml", []byte(minimalPlan+"expectations:\n  other_rdma_classes: [{name: storage, priority: 0}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0].Error(), "no longer sees it") {
		t.Errorf("warnings %v", plan.Warnings)
	}
}

// The example plan's commented other_rdma_classes, uncommented, loads
// cleanly and means what its comment says.
func TestExamplePlanOtherRDMAClasses(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	const commented = "  # other_rdma_classes:\n  #   - name: storage\n  #     priority: 4\n"
	if !strings.Contains(string(data), commented) {
		t.Fatalf("%s has no commented other_rdma_classes block", examplePath)
	}
	text := strings.Replace(string(data), commented, "  other_rdma_classes:\n    - name: storage\n      priority: 4\n", 1)
	plan, err := Parse(examplePath, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Expectations.OtherRDMAClasses; len(got) != 1 || got[0] != (RDMAClass{"storage", 4}) || len(plan.Warnings) != 0 {
		t.Errorf("classes %+v, warnings %v", got, plan.Warnings)
	}
}
