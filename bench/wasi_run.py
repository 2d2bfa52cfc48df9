#!/usr/bin/env python3
"""One WASI row run for bench/run.py: dist/capi2argo.wasm under wasmtime (the PyPI package).

    VENV/bin/python bench/wasi_run.py --precompile dist/capi2argo.wasm target/bench/capi2argo.cwasm
    VENV/bin/python bench/wasi_run.py target/bench/capi2argo.cwasm INPUT.yaml

A run loads the precompiled module (Module.deserialize_file: machine code made ahead of time by
`--precompile`, as `wasmtime compile` does, so Cranelift compilation is not counted), then
times, in-process, what a WASI host does per call: create the WASI context (stdin = INPUT,
stdout and stderr = /dev/null), a Store and Linker, instantiate the module and run `_start` to
its exit. Prints one JSON line: {"load": s, "run": s, "exit": code}. `load` is the module
deserialization; Python start-up and `import wasmtime` are in neither figure (the caller's
process time includes them).
"""

import json
import sys
import time

import wasmtime


def main():
    if sys.argv[1] == "--precompile":
        engine = wasmtime.Engine()
        module = wasmtime.Module.from_file(engine, sys.argv[2])
        with open(sys.argv[3], "wb") as f:
            f.write(module.serialize())
        return 0
    cwasm, input_path = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    engine = wasmtime.Engine()
    module = wasmtime.Module.deserialize_file(engine, cwasm)
    t1 = time.perf_counter()
    wasi = wasmtime.WasiConfig()
    wasi.argv = ["capi2argo"]
    wasi.stdin_file = input_path
    wasi.stdout_file = "/dev/null"
    wasi.stderr_file = "/dev/null"
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
    t2 = time.perf_counter()
    print(json.dumps({"load": t1 - t0, "run": t2 - t1, "exit": code}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
