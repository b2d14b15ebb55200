# ckptcheck: build, test, bench, fuzz, lint, e2e, image, dist.
GO      ?= go
BIN     := bin/ckptcheck
# The second Go module: the benchmark runner, e2e tests, doc checks, fakes
# and linters, whose test-only dependencies stay out of the main go.mod.
TOOLS   := tools
FUZZTIME ?= 10s
# make dist: where the release binaries go, and for which platforms.
DIST    ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# make image: the container engine (docker or podman) and the tag.
ENGINE  ?= $(shell command -v docker >/dev/null 2>&1 && echo docker || echo podman)
IMAGE   ?= ckptcheck:dev
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
# make dist: the version stamped in, from the VCS state.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
# make wheel: where the wheels go; the commit count makes a clone without
# tags 0.0.0.devN; METADATA's License field.
WHEELS  ?= $(DIST)/wheels
COMMITS ?= $(shell git rev-list --count HEAD 2>/dev/null || echo 0)
WHEEL_LICENSE ?= UNKNOWN
# make e2e: where the screenshot, PDF and page are kept.
E2E_ARTIFACTS ?= $(or $(TMPDIR),/tmp)/ckptcheck-e2e

.PHONY: all build test bench fuzz lint testdata clean e2e image dist dist-check e2e-slurm wheel wheel-zip wheel-check wheel-e2e

all: build

# TAGS=purego builds without assembly (the portable value loops).
build:
	$(GO) build -buildvcs=auto $(if $(TAGS),-tags '$(TAGS)') -o $(BIN) ./cmd/ckptcheck

# The test command the README and CI run: vet, then every test under the
# race detector, in both modules.
test:
	$(GO) vet ./... ./testdata/gen
	$(GO) test -race ./...
	$(GO) -C $(TOOLS) vet ./...
	$(GO) -C $(TOOLS) test -race ./...

# Go benchmarks, then whole-command timings against the named baselines
# (medians of several runs; see tools/benchrun). Options:
#   BASE=rev   time this tree's binary against the one built from git
#              revision rev (make bench BASE=HEAD~3), run for run: a warm-up
#              of each, then old, new, old, new... 10 runs each; medians,
#              new/old (below 1: new is faster) and peak RSS, instead of the
#              baselines. A command the old binary rejects is timed new only.
#   ONLY=a,b   only the scenarios whose ID contains a or b (validate-moe,
#              diff-moe, values, values-finetune-bf16, -f32, -f16)
#   RUNS=n     timed runs per command (default 7, or 3 when slow; 10 with BASE)
#   TAGS=purego  time the portable value loops (a binary without assembly)
#   KEEP=dir   write the scenarios' files under dir and leave them there,
#              for profiling a command by hand
# With BASE or ONLY the Go benchmarks are skipped.
bench: build
	$(if $(BASE)$(ONLY),,$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...)
	$(if $(BASE)$(ONLY),,$(GO) -C $(TOOLS) test -run '^$$' -bench . -benchmem -count 1 ./...)
	$(GO) -C $(TOOLS) run ./benchrun -bin $(abspath $(BIN))$(if $(BASE), -base '$(BASE)')$(if $(ONLY), -only '$(ONLY)')$(if $(RUNS), -runs $(RUNS))$(if $(KEEP), -keep '$(abspath $(KEEP))')

# A short, bounded run of every fuzz target, in both modules.
fuzz:
	@set -e; for mod in . $(TOOLS); do \
	  for pkg in $$($(GO) -C $$mod list ./...); do \
	    for target in $$($(GO) -C $$mod test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	      echo "fuzz $$pkg $$target"; \
	      $(GO) -C $$mod test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
	    done; \
	  done; \
	done

# gofmt, go vet (the main module for Windows too: the release builds it)
# and staticcheck on both modules. staticcheck is pinned in
# tools/go.mod as a tool, so every machine runs the same version; go tool -n
# builds it there and prints its path, and it then checks each module with
# that module's own dependency versions.
lint:
	@out=$$(gofmt -l . | grep -v '^testdata/[^g]' || true); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./testdata/gen
	GOOS=windows $(GO) vet ./...
	$(GO) -C $(TOOLS) vet ./...
	@set -e; staticcheck=$$($(GO) -C $(TOOLS) tool -n staticcheck); \
	  echo "staticcheck ./... ./testdata/gen"; $$staticcheck ./... ./testdata/gen; \
	  echo "cd $(TOOLS) && staticcheck ./..."; cd $(TOOLS) && $$staticcheck ./...

# diff --partition and merge under a real Slurm: a one-node cluster on this
# machine, a 4-task job array, the merged report checked against a single
# run (needs root; installs Debian's slurm-wlm and munge if missing).
e2e-slurm:
	bash .ci/e2e-slurm

# Regenerate the committed example checkpoints.
testdata:
	$(GO) run ./testdata/gen

# End to end: the HTML report in headless Chromium, the GitHub Action's
# script, and the container image where a container can run (see
# tools/e2e). Artefacts stay in $(E2E_ARTIFACTS).
e2e: build
	CKPTCHECK_E2E=1 CKPTCHECK_BIN=$(abspath $(BIN)) CKPTCHECK_E2E_ARTIFACTS=$(E2E_ARTIFACTS) \
	  ENGINE=$(ENGINE) $(GO) -C $(TOOLS) test -count 1 -v -timeout 10m ./e2e
	@echo "e2e artefacts: $(E2E_ARTIFACTS)"

# The container image: FROM scratch, a static linux binary for this
# machine's architecture (without its symbol table and DWARF: -s -w) and the
# CA certificates, from a build context of just those two files.
image:
	@test -r $(CA_CERTS) || { echo "image: no CA certificates at $(CA_CERTS) (apt-get install ca-certificates)"; exit 1; }
	rm -rf bin/image && mkdir -p bin/image
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -buildvcs=auto -ldflags="-s -w -X main.versionStamp=$(VERSION)" \
	  -o bin/image/ckptcheck ./cmd/ckptcheck
	cp $(CA_CERTS) bin/image/ca-certificates.crt
	$(ENGINE) build -f Dockerfile -t $(IMAGE) bin/image

# Release binaries: static, with no path of this machine in them
# (-trimpath), no symbol table or DWARF (-s -w: a smaller download; panics
# still print function names and lines), the version stamped from the VCS
# state ($(VERSION), from git describe; the go command adds the revision and
# time where it can read them), and their SHA-256 sums.
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "dist: $$os/$$arch"; \
	  exe=; [ $$os = windows ] && exe=.exe; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto \
	    -ldflags="-s -w -buildid= -X main.versionStamp=$(VERSION)" \
	    -o $(DIST)/ckptcheck-$$os-$$arch$$exe ./cmd/ckptcheck; \
	done
	cd $(DIST) && sha256sum ckptcheck-* > SHA256SUMS && cat SHA256SUMS

# Reproducibility: build the release twice, the second time from a copy
# of the tree elsewhere with an empty build cache, and compare the bytes.
dist-check:
	@set -e; tmp=$$(mktemp -d); trap 'chmod -R u+w $$tmp; rm -rf $$tmp' EXIT; \
	  $(MAKE) --no-print-directory dist DIST=$$tmp/a >/dev/null; \
	  mkdir $$tmp/src && cp -a . $$tmp/src/tree; \
	  GOCACHE=$$tmp/cache GOFLAGS=-modcacherw $(MAKE) --no-print-directory -C $$tmp/src/tree dist DIST=$$tmp/b >/dev/null; \
	  if cmp -s $$tmp/a/SHA256SUMS $$tmp/b/SHA256SUMS; then echo "dist-check: two builds are byte-identical:"; cat $$tmp/a/SHA256SUMS; \
	  else echo "dist-check: the builds differ:"; diff $$tmp/a/SHA256SUMS $$tmp/b/SHA256SUMS; exit 1; fi

# Python wheels, one per platform of $(PLATFORMS): make dist's binaries
# zipped (not built again) with the Python package python/ckptcheck, by
# tools/wheel. wheel-zip zips what $(DIST) already holds.
wheel: dist
	@$(MAKE) --no-print-directory wheel-zip VERSION='$(VERSION)'

wheel-zip:
	rm -rf $(WHEELS)
	$(GO) -C $(TOOLS) run ./wheel -dist $(abspath $(DIST)) -out $(abspath $(WHEELS)) \
	  -python $(abspath python/ckptcheck) -readme $(abspath README.md) \
	  -version '$(VERSION)' -commits $(COMMITS) -platforms '$(PLATFORMS)' -license '$(WHEEL_LICENSE)'
	$(GO) -C $(TOOLS) run ./wheel -verify $(abspath $(WHEELS))/*.whl

# Reproducibility of the wheels: build the release once, zip it twice (the
# second time in another time zone and umask), compare the bytes, and check
# every wheel (RECORD digests, the binary's format and architecture).
wheel-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	  $(MAKE) --no-print-directory dist DIST=$$tmp/dist >/dev/null; \
	  $(MAKE) --no-print-directory wheel-zip DIST=$$tmp/dist WHEELS=$$tmp/a >/dev/null; \
	  (umask 077; TZ=Pacific/Kiritimati $(MAKE) --no-print-directory wheel-zip DIST=$$tmp/dist WHEELS=$$tmp/b >/dev/null); \
	  (cd $$tmp/a && sha256sum *.whl) > $$tmp/a.sums; (cd $$tmp/b && sha256sum *.whl) > $$tmp/b.sums; \
	  if [ $$(wc -l < $$tmp/a.sums) -eq $$(echo $(PLATFORMS) | wc -w) ] && cmp -s $$tmp/a.sums $$tmp/b.sums; then \
	    echo "wheel-check: two zips are byte-identical:"; cat $$tmp/a.sums; \
	  else echo "wheel-check: the wheels differ:"; diff $$tmp/a.sums $$tmp/b.sums; exit 1; fi

# The wheel for this machine installed in a fresh venv: the command, the
# Python API, the uninstall (see .ci/wheel-e2e).
wheel-e2e:
	bash .ci/wheel-e2e

clean:
	rm -rf bin $(DIST)
