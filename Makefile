# ckptcheck: build, test, bench, fuzz, lint.
GO      ?= go
BIN     := bin/ckptcheck
FUZZTIME ?= 10s

.PHONY: all build test bench fuzz lint testdata clean

all: build

# TAGS=purego builds without assembly (the portable value loops).
build:
	$(GO) build -buildvcs=auto $(if $(TAGS),-tags '$(TAGS)') -o $(BIN) ./cmd/ckptcheck

# The test command the README and CI run: vet, then every test under the
# race detector.
test:
	$(GO) vet ./... ./testdata/gen
	$(GO) test -race ./...

# Go benchmarks, then whole-command timings against the named baselines
# (medians of several runs; see internal/benchrun). Options:
#   BASE=rev   time this tree's binary against the one built from git
#              revision rev (make bench BASE=HEAD~3), run for run: a warm-up
#              of each, then old, new, old, new... 10 runs each; medians,
#              new/old (below 1: new is faster) and peak RSS, instead of the
#              baselines. A command the old binary rejects is timed new only.
#   ONLY=a,b   only the scenarios whose ID contains a or b (validate-moe,
#              diff-moe, values, values-finetune-bf16, -f32, -f16)
#   RUNS=n     timed runs per command (default 7, or 3 when slow; 10 with BASE)
#   TAGS=purego  time the portable value loops (a binary without assembly)
# With BASE or ONLY the Go benchmarks are skipped.
bench: build
	$(if $(BASE)$(ONLY),,$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...)
	$(GO) run ./internal/benchrun -bin $(BIN)$(if $(BASE), -base '$(BASE)')$(if $(ONLY), -only '$(ONLY)')$(if $(RUNS), -runs $(RUNS))

# A short, bounded run of every fuzz target.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# gofmt, go vet and staticcheck (pinned in go.mod as a tool, so every
# machine runs the same version).
lint:
	@out=$$(gofmt -l . | grep -v '^testdata/[^g]' || true); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./testdata/gen
	$(GO) tool staticcheck ./... ./testdata/gen

# Regenerate the committed example checkpoints.
testdata:
	$(GO) run ./testdata/gen

clean:
	rm -rf bin
