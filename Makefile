# roce_exporter — see README.md for the two commands you need.
GO        ?= go
BIN       ?= roce_exporter
PKG       := github.com/roce-exporter/roce_exporter
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X github.com/prometheus/common/version.Version=$(VERSION) \
             -X github.com/prometheus/common/version.Revision=$(REVISION) \
             -X github.com/prometheus/common/version.Branch=$(BRANCH)
# The sample node `make demo` serves (README, "Sample nodes").
SCENARIO  ?= mlx5-8x400g-healthy
DEMO_ARGS ?=
# make install: $(DESTDIR)$(PREFIX)/bin/roce_exporter, where the systemd
# unit in deploy/systemd runs it from.
PREFIX    ?= /usr/local
DESTDIR   ?=

# Iterations per fuzz target: a count, not a duration, because a time
# budget that runs out while the fuzzer minimises a new input is reported
# as a failure ("context deadline exceeded").
FUZZTIME  ?= 50000x

.PHONY: all build install test unit fuzz lint demo run e2e fixtures golden dashboards rules bench bench-fleet sim sim-table sim-test clean

all: lint build test

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/roce_exporter

# Puts roce_exporter on PATH (as root for the default PREFIX); DESTDIR
# stages it for a package.
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/$(notdir $(BIN))

# Every test: vet, unit and fixture tests, the binary end to end, the
# Kubernetes manifests, short fuzzing of every parser, and the pipeline
# through Prometheus and Alertmanager. Tests that need root (network
# namespaces, unprivileged runs) skip when not root; CI runs as root.
test: unit fuzz e2e

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	cd deploy/kubernetes/validate && $(GO) vet ./... && $(GO) test -count=1 ./...
	$(MAKE) sim-test

# tools/fleetsim is its own module (Prometheus' engine, rules and TSDB stay
# out of the exporter's go.mod). vet's stdmethods check is off there as in
# Prometheus itself: chunkenc.Iterator's Seek is not io.Seeker's. Its test is
# the seeded subset of make sim at 128 nodes (single-threaded trials: no -race).
sim-test:
	cd tools/fleetsim && $(GO) vet -stdmethods=false ./... && $(GO) test -count=1 -timeout 20m ./...

fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

lint:
	@fmt=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...
	cd tools/fleetsim && $(GO) vet -stdmethods=false ./...

# The exporter on a bundled sample node, the 8x400G ConnectX-7 one unless
# SCENARIO names another: no RDMA hardware needed. Open
# http://localhost:14791/ (the node page) or /metrics.
demo: build
	./$(BIN) --scenario=$(SCENARIO) $(DEMO_ARGS)

# The exporter on this machine's real /sys.
run: build
	./$(BIN) $(DEMO_ARGS)

# The whole pipeline for real: exporters on fixtures whose counters a
# driver advances, Prometheus with alerts/ loaded, Alertmanager, a webhook
# receiver; every dashboard query must return data. Then the large-fleet
# layout of deploy/fleet: per-rack Prometheus remote-writing into
# VictoriaMetrics, where every dashboard and alert query must evaluate.
e2e:
	$(GO) test -count=1 -timeout 15m -tags e2e -run 'TestPipeline|TestRemoteWriteVictoriaMetrics' ./e2e

# Regenerate the sysfs fixture trees, then the golden /metrics files.
fixtures:
	$(GO) run ./tools/genfixtures -out collector/testdata

golden:
	$(GO) test -count=1 -run 'TestEndToEndGoldenMetrics' ./cmd/roce_exporter -update

dashboards:
	$(GO) run ./dashboards/cmd/gendashboards -out dashboards

rules:
	$(GO) run ./alerts/cmd/genprobetests
	$(GO) run ./alerts/cmd/genprometheusrule

# Scrape cost: Go benchmarks per fixture size, then the binary against
# Debian's prometheus-node-exporter on the same 8-port fixture (without and
# with both exporters' own go_*/process_* metrics, -default-flags), the p99
# latency on 32 ports, a 10,000-scrape soak and 50 clients for a minute.
bench: build
	$(GO) test -run '^$$' -bench BenchmarkScrape -benchtime 300x ./collector
	$(GO) test -run '^$$' -bench BenchmarkFullScrape -benchtime 300x ./cmd/roce_exporter
	$(GO) test -run '^$$' -bench BenchmarkLiveHeap -benchtime 20000x -timeout 30m ./collector
	$(GO) run ./tools/benchtool -ports 8 -scrapes 2000 -binary ./$(BIN)
	$(GO) run ./tools/benchtool -ports 8 -scrapes 2000 -default-flags -strace-scrapes 0 -binary ./$(BIN)
	$(GO) run ./tools/benchtool -ports 32 -scrapes 2000 -all-collectors -strace-scrapes 0 -node-exporter '' -binary ./$(BIN)
	$(GO) run ./tools/benchtool -ports 32 -soak 10000 -all-collectors -binary ./$(BIN)
	$(GO) run ./tools/benchtool -ports 32 -all-collectors -load 50 -load-duration 60s -node-exporter '' -binary ./$(BIN)

# What a fleet costs its Prometheus: 32, then 128 exporter processes on
# generated 8-port nodes, scraped every 15 s by Debian's Prometheus with
# alerts/ loaded, 3 minutes each after a warm-up; prints the README's fleet
# table (per node: the slope between the two sizes). About 10 minutes; not
# part of `make test`.
bench-fleet: build
	$(GO) run ./tools/fleetbench -binary ./$(BIN) -exporters 32,128 -duration 3m
# The fleet diagnosis table (tools/fleetsim; virtual clock, no processes):
# seeded trials of every fault class at 128 and 1,024 nodes, the simulated
# nodes judged by Prometheus' engine running alerts/ as shipped; progress on
# stderr, the README's table on stdout. make test runs a seeded subset
# (sim-test). Every finished trial is appended to SIM_RECORD: a stopped run
# resumes where it stopped, runs of other seeds (-first-seed) on other
# machines merge, and `make sim-table` prints the table of the recorded
# trials of this code and these rules without running any. -trimpath: the
# same source gives the same simulator (its digest is part of a record).
SIM_ARGS ?= -nodes 128,1024 -trials 50,10
SIM_RECORD ?= results/sim.jsonl
sim:
	cd tools/fleetsim && $(GO) run -trimpath ./cmd/fleetsim -rules ../../alerts -record $(SIM_RECORD) $(SIM_ARGS)
sim-table:
	cd tools/fleetsim && $(GO) run -trimpath ./cmd/fleetsim -rules ../../alerts -table $(SIM_RECORD)

clean:
	rm -f $(BIN)
