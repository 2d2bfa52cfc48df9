# Developer entry points. `make test` is the one command CI runs (see .ci/run).

CARGO ?= cargo

.PHONY: test lint unit example

## Every check and test: formatting, lints, unit and golden tests.
test: lint unit

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

unit:
	$(CARGO) test --locked

## Runs the function on a shipped example (a kubectl-style List of CAPI Secrets).
example:
	$(CARGO) run --quiet --release --locked -- tests/fixtures/providers/kubeadm.yaml
