#!/usr/bin/env python3
"""Embeds Kubewarden metadata in a WebAssembly module, as `kwctl annotate` does.

kwctl reads metadata.yml into its Metadata struct, sets protocolVersion ("Unknown" for WASI
policies), serializes it as JSON and adds it as the custom section `io.kubewarden.metadata`
(kubewarden-controller crates/kwctl/src/annotate.rs, crates/policy-evaluator/src/constants.rs).
A custom section may sit anywhere in a module; it is appended here.

Usage: annotate.py MODULE.wasm METADATA.yml OUT.wasm
"""

import json
import sys

import yaml

SECTION = "io.kubewarden.metadata"
# Metadata's fields in its struct order (serde writes them so).
ORDER = ["protocolVersion", "rules", "annotations", "mutating", "backgroundAudit",
         "executionMode", "policyType", "contextAwareResources"]


def leb128(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def main():
    module_path, metadata_path, out_path = sys.argv[1:4]
    metadata = yaml.safe_load(open(metadata_path))
    metadata["protocolVersion"] = "Unknown"
    unknown = set(metadata) - set(ORDER)
    if unknown:
        sys.exit(f"{metadata_path}: fields Kubewarden's Metadata does not have: {sorted(unknown)}")
    ordered = {key: metadata[key] for key in ORDER if key in metadata}
    data = json.dumps(ordered, separators=(",", ":")).encode()
    name = SECTION.encode()
    payload = leb128(len(name)) + name + data
    module = open(module_path, "rb").read()
    if module[:4] != b"\0asm":
        sys.exit(f"{module_path}: not a WebAssembly module")
    open(out_path, "wb").write(module + b"\0" + leb128(len(payload)) + payload)


if __name__ == "__main__":
    main()
