#!/usr/bin/env python3
"""The WASI module (dist/capi2argo.wasm) under wasmtime: every golden case, byte for byte, same exit code.

Runs with no preopened directories: the module can read nothing but its standard input.
Usage: python3 tests/wasm/wasi_wasmtime.py   (needs the `wasmtime` package from PyPI)
"""

import sys
import tempfile
from pathlib import Path

import wasmtime

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "dist" / "capi2argo.wasm"


def pinned_now(case=None):
    """The time a test runs the module at (tests/golden/now, or a case's own `now`): what
    certificates say about "now" then never changes with the day the tests run."""
    own = case / "now" if case else None
    path = own if own and own.exists() else ROOT / "tests" / "golden" / "now"
    return path.read_text().strip()


def pinned_random():
    """The randomness every test runs the module with (tests/golden/random): sealed output is
    then the same bytes as the native binary's."""
    return (ROOT / "tests" / "golden" / "random").read_text().strip()


def run(engine, module, stdin: bytes, args, program="capi2argo", now=None):
    """Runs a WASI command module: stdout, stderr and exit code; argv is program and args; the
    clock pinned at `now` (CAPI2ARGO_NOW)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "in").write_bytes(stdin)
        wasi = wasmtime.WasiConfig()
        wasi.argv = [program, *args]
        wasi.env = [("CAPI2ARGO_NOW", now or pinned_now()), ("CAPI2ARGO_RANDOM", pinned_random())]
        wasi.stdin_file = str(tmp / "in")
        wasi.stdout_file = str(tmp / "out")
        wasi.stderr_file = str(tmp / "err")
        store = wasmtime.Store(engine)
        store.set_wasi(wasi)
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        instance = linker.instantiate(store, module)
        code = 0
        try:
            instance.exports(store)["_start"](store)
        except wasmtime.ExitTrap as exit_trap:
            code = exit_trap.code
        return (tmp / "out").read_bytes().decode(), (tmp / "err").read_bytes().decode(), code


def main():
    engine = wasmtime.Engine()
    module = wasmtime.Module.from_file(engine, str(MODULE))
    passed, failed = 0, 0
    for case in sorted((ROOT / "tests" / "golden").iterdir()):
        if not (case / "input.yaml").is_file():
            continue
        # Bytes, decoded without newline translation: some cases hold CR line breaks on purpose.
        expected = lambda name, default="": (case / "expected" / name).read_bytes().decode() if (case / "expected" / name).exists() else default
        args = [a for a in (case / "args").read_text().splitlines() if a] if (case / "args").exists() else []
        out, err, code = run(engine, module, (case / "input.yaml").read_bytes(), args, now=pinned_now(case))
        problems = []
        if out != expected("output.yaml"):
            problems.append("stdout differs")
        if err != expected("stderr.txt"):
            problems.append(f"stderr differs: {err[:300]!r}")
        if code != int(expected("exit-code", "0").strip()):
            problems.append(f"exit code {code}")
        if problems:
            failed += 1
            print(f"FAIL wasi/wasmtime: {case.name}: {'; '.join(problems)}")
        else:
            passed += 1
    # One large fleet (bench/fleet.py, 3,000 clusters), byte for byte against the native binary.
    fleet = ROOT / "target" / "fleet" / "fleet-3000.yaml"
    native = ROOT / "target" / "fleet" / "fleet-3000.native.yaml"
    skipped = 0
    if fleet.exists() and native.exists():
        out, err, code = run(engine, module, fleet.read_bytes(), [])
        if code == 0 and out == native.read_bytes().decode():
            passed += 1
        else:
            failed += 1
            print(f"FAIL wasi/wasmtime: large fleet: exit {code}, output differs: {out != native.read_bytes().decode()}; {err[:300]!r}")
    else:
        skipped += 1
        print("*** SKIPPED check: the wasmtime large-fleet run: target/fleet is missing (`make wasm-test` makes it) ***")
    # In the Rust harness's words, so `make test`'s summary counts it the same way.
    print(f"wasmtime: test result: {'FAILED' if failed else 'ok'}. {passed} passed; {failed} failed; 0 ignored")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
