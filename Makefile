# goshmem: `make run` runs the main job, `make test` runs the suite.
GO       ?= go
BIN      := bin
NP       ?= 4
ROUNDS   ?= 1000
FUZZTIME ?= 10000x
PREFIX   ?= /usr/local
SOS      ?= ../shared/tests-sos
NPS      ?= 2 3 4
SOS_TIMEOUT ?= 120s

.PHONY: all build lib run test test-sos install vet lint bench perf results fuzz clean proto proto-check

all: build

# Every command and example, into ./bin, and the C library.
build: lib
	$(GO) build -o $(BIN)/ ./cmd/... ./examples/...
	ln -sf oshcc $(BIN)/oshc++
	@# Each plugin's manifest: what provinfo lists without starting it.
	for p in $(BIN)/goshmem-provider-*-plugin; do $$p -manifest > $$p.json; done

# The C interface: lib/libgoshmem.so, which OpenSHMEM C and C++ programs
# link against with include/shmem.h. The header cgo generates beside it
# declares the library's internals and is no part of the interface.
lib:
	$(GO) build -buildmode=c-shared -o lib/libgoshmem.so ./capi
	rm -f lib/libgoshmem.h

# The community's test suite (tests-sos), unmodified, built with oshcc and
# oshc++ and run under oshrun at each of $(NPS) PEs; PROVIDER picks the
# provider (GOSHMEM_PROVIDER), SOS_TIMEOUT bounds each run.
test-sos: build
	PROVIDER=$(PROVIDER) TIMEOUT=$(SOS_TIMEOUT) tools/test-sos.sh $(SOS) $(NPS)

# bin/, include/ and lib/ under $(PREFIX), with a pkg-config file; oshcc
# finds the header and library beside its own bin/.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0755 $(BIN)/oshcc $(BIN)/oshrun $(BIN)/provinfo $(BIN)/shmemperf $(BIN)/ntbtool \
		$(BIN)/goshmem-provider-loopback-plugin $(DESTDIR)$(PREFIX)/bin/
	ln -sf oshcc $(DESTDIR)$(PREFIX)/bin/oshc++
	install -m 0644 include/shmem.h include/shmemx.h include/pshmem.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/include/mpp
	install -m 0644 include/mpp/shmem.h include/mpp/shmemx.h $(DESTDIR)$(PREFIX)/include/mpp/
	install -m 0755 lib/libgoshmem.so $(DESTDIR)$(PREFIX)/lib/
	sed 's|@PREFIX@|$(PREFIX)|' tools/goshmem.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/goshmem.pc

# An OpenSHMEM program on $(NP) PEs (separate processes) over the default provider.
run: build
	./$(BIN)/oshrun -np $(NP) ./$(BIN)/ringshift -rounds $(ROUNDS)

# The whole suite under the race detector, then the tests in
# NORACE_TESTS without it, then a short fuzz smoke. Every test runs once.
# NORACE_TESTS:
# - The conformance suites' job-as-processes runs (each PE a process): the
#   race detector sees the goroutines of one process, and what those runs
#   add is concurrency between processes (shared memory, sockets, plugins)
#   that it cannot see; the same cases run under it with every PE in one
#   process. Built without it they take less than half the time.
# - The Wide tests (conformance.SkipUnderRace): an in-process suite's
#   part whose code its partner test already runs under the detector,
#   and which the detector slows several times over (hybrid's 3 x 2 job;
#   the tcp plugin's suite, whose host side is the loopback plugin's).
#   ntbring's suites stay under it: scheduling, not the detector, bounds
#   them on a small machine, so moving them saves no time.
# - The suite on a simulated torus of 16 hosts: under the race detector it
#   takes more than ten minutes, and the torus's code runs under it in
#   shorter tests (providers/ntbring's TestSimTorus*).
NORACE_TESTS := ^TestConformance[A-Za-z]*(Processes|Wide)$$|^TestConformanceSimTorus$$
# RACE_FIRST: the packages whose tests under the race detector take
# longest, named first so that go test starts them first rather than last
# (it starts packages in the order named): a long package started late is
# the tail of the phase, with a CPU idle beside it.
RACE_FIRST := ./providers/ntbring ./providers/plugin ./cmd/oshrun ./providers/hybrid ./providers/loopback ./capi
test: build vet
	$(GO) test -race -count=1 -timeout 30m -skip '$(NORACE_TESTS)' $(RACE_FIRST) ./...
	$(GO) test -count=1 -timeout 30m -run '$(NORACE_TESTS)' ./providers/...
	$(MAKE) --no-print-directory fuzz

vet:
	$(GO) vet ./...

# staticcheck: from PATH, else where `go install` puts it (GOBIN, or bin
# under the first GOPATH entry). .ci/run installs the version it pins.
GOINSTALLDIR = $(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin)
STATICCHECK ?= $(or $(shell command -v staticcheck 2>/dev/null),$(GOINSTALLDIR)/staticcheck)

# gofmt, go vet and staticcheck over the whole tree, tests included.
lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@# Every build the tree has: the shmemtrace tag, and a weakly ordered
	@# CPU's fence (loopback's fence_weak.go); -race builds in make test.
	$(GO) vet -tags shmemtrace ./shmem/...
	CGO_ENABLED=0 GOARCH=arm64 $(GO) vet ./...
	@if [ -x "$(STATICCHECK)" ]; then "$(STATICCHECK)" ./... && "$(STATICCHECK)" -tags shmemtrace ./shmem/...; \
	else echo "staticcheck not found, skipped: go install the version .ci/run pins"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# OSU-style figures of every shmemperf test on 2 PEs over the default
# provider (docs/measuring.md, "shmemperf"); PERFFLAGS adds flags, e.g.
# -json or -plot.
perf: build
	./$(BIN)/oshrun -np 2 ./$(BIN)/shmemperf $(PERFFLAGS)

# docs/results.md from bench/compare.sh's tables, on this machine
# (docs/measuring.md, "Regenerating the results page"). A benchmark: run
# it on a quiet machine.
results:
	bench/results.sh

# Each fuzz target for $(FUZZTIME): a smoke run, not a campaign. A target
# that fails shows what the fuzzer said (the input it wrote under
# testdata/fuzz, or the engine's own error). The budget is a count of
# inputs, not a duration: Go 1.26's fuzzing coordinator can report its own
# wall-clock deadline as a failure ("context deadline exceeded", no input
# written) when a starved worker answers late, which a loaded machine
# makes happen; a count has no deadline to race. The targets are found in
# the test files' text, not by building every package's tests to list them.
# Each package's fuzzing test binary is built once (go test -c -fuzz) and
# run for each of its targets from the package's directory, where its
# seed corpus lies, with the cache go test -fuzz would use.
FUZZBIN = $(abspath $(BIN))/fuzz
fuzz:
	@set -e; mkdir -p $(FUZZBIN); cache=$$($(GO) env GOCACHE)/fuzz; \
	$(GO) list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do \
		targets=$$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go 2>/dev/null || true); \
		[ -n "$$targets" ] || continue; \
		exe=$(FUZZBIN)/$$(echo $$pkg | tr / _).test; \
		out=$$($(GO) test -c -fuzz=. -o $$exe $$pkg 2>&1) || { echo "$$out" | tail -40; exit 1; }; \
		for f in $$targets; do \
			echo "fuzz $$pkg $$f"; \
			out=$$(cd $$dir && $$exe -test.run '^$$' -test.fuzz "^$$f$$" -test.fuzztime $(FUZZTIME) \
				-test.fuzzcachedir $$cache/$$pkg 2>&1) || { echo "$$out" | tail -40; exit 1; }; \
		done; \
	done

# The plugin protocol's generated code, regenerated by pinned generators
# and a pinned protoc (Debian 12's protobuf-compiler package, whose
# version the generated files record). make proto writes them into
# PROTO_OUT; make proto-check regenerates them aside and fails if the
# committed files differ.
PROTO_DIR          := providers/plugin/proto
PROTO_OUT          ?= $(PROTO_DIR)
PROTOC_VERSION     := 3.21.12
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
TOOLS              := $(abspath $(BIN)/tools)

proto:
	@command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
	@v=$$(protoc --version); [ "$$v" = "libprotoc $(PROTOC_VERSION)" ] || \
		{ echo "make proto: protoc is $$v; the generated files are protoc $(PROTOC_VERSION)'s (Debian 12's protobuf-compiler)"; exit 1; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	mkdir -p $(PROTO_OUT)
	PATH=$(TOOLS):$$PATH protoc -I $(PROTO_DIR) \
		--go_out=paths=source_relative:$(PROTO_OUT) \
		--go-grpc_out=paths=source_relative:$(PROTO_OUT) \
		$(PROTO_DIR)/provider.proto

proto-check:
	@rm -rf $(BIN)/proto-check
	@$(MAKE) --no-print-directory proto PROTO_OUT=$(BIN)/proto-check
	@for f in provider.pb.go provider_grpc.pb.go; do \
		cmp -s $(BIN)/proto-check/$$f $(PROTO_DIR)/$$f || \
			{ echo "$(PROTO_DIR)/$$f is not what $(PROTO_DIR)/provider.proto generates: run make proto"; diff -u $(PROTO_DIR)/$$f $(BIN)/proto-check/$$f | head -40; exit 1; }; \
	done; echo "proto-check: the generated files match provider.proto"

clean:
	rm -rf $(BIN) lib
