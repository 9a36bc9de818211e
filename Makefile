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
DEMO_NODE ?= collector/testdata/mlx5-8x400g-healthy
DEMO_ARGS ?=

.PHONY: all build test lint demo run e2e fixtures golden clean

all: lint build test

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/roce_exporter

# Every test: unit, fixtures, the binary end to end. Tests that need root
# (network namespaces) skip when not root; CI runs as root.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

lint:
	@fmt=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$fmt" ]; then echo "gofmt needed:"; echo "$$fmt"; exit 1; fi
	$(GO) vet ./...

# The exporter on the bundled 8x400G ConnectX-7 sample node: no RDMA
# hardware needed. Open http://localhost:14791/metrics
demo: build
	./$(BIN) --path.sysfs=$(DEMO_NODE)/sys --path.dev=$(DEMO_NODE)/dev \
		$$( [ -d $(DEMO_NODE)/replay ] && echo --collector.ethtool.replay-dir=$(DEMO_NODE)/replay ) $(DEMO_ARGS)

# The exporter on this machine's real /sys.
run: build
	./$(BIN) $(DEMO_ARGS)

# The built binary against every fixture, compared with the golden files.
e2e:
	$(GO) test -count=1 -run 'TestEndToEnd' ./cmd/roce_exporter

# Regenerate the sysfs fixture trees, then the golden /metrics files.
fixtures:
	$(GO) run ./internal/sysfixture/genfixtures -out collector/testdata

golden:
	$(GO) test -count=1 -run 'TestEndToEndGoldenMetrics' ./cmd/roce_exporter -update

clean:
	rm -f $(BIN)
