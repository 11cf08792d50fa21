# goshmem: `make run` runs the main job, `make test` runs the suite.
GO       ?= go
BIN      := bin
NP       ?= 4
ROUNDS   ?= 1000
FUZZTIME ?= 3s

.PHONY: all build run test vet lint bench perf fuzz clean

all: build

# Every command and example, into ./bin.
build:
	$(GO) build -o $(BIN)/ ./cmd/... ./examples/...

# An OpenSHMEM program on $(NP) PEs (separate processes) over the default provider.
run: build
	./$(BIN)/oshrun -np $(NP) ./$(BIN)/ringshift -rounds $(ROUNDS)

# The whole suite under the race detector, then a short fuzz smoke.
test: build vet
	$(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz

vet:
	$(GO) vet ./...

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed; skipped"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# OSU-style figures of every shmemperf test on 2 PEs over the default
# provider (docs/benchmarks.md); PERFFLAGS adds flags, e.g. -json or -plot.
perf: build
	./$(BIN)/oshrun -np 2 ./$(BIN)/shmemperf $(PERFFLAGS)

# Each fuzz target for $(FUZZTIME): a smoke run, not a campaign.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg >/dev/null; \
		done; \
	done

clean:
	rm -rf $(BIN)
