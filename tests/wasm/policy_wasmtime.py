#!/usr/bin/env python3
"""The Kubewarden policies (dist/capi2argo-policy.wasm, dist/capi2argo-raw-policy.wasm) under
wasmtime, called exactly as Kubewarden's WASI runtime calls a policy
(kubewarden-controller crates/policy-evaluator/src/runtimes/wasi_cli/runtime.rs, stack.rs):
`_start` with argv ["policy.wasm", "validate"] and stdin {"request": …, "settings": …}, or argv
["policy.wasm", "validate-settings"] and the settings on stdin; no preopened directory; stdout
parsed as ValidationResponse / SettingsValidationResponse; a non-zero exit is a failure.

Also checks the io.kubewarden.metadata custom section against the metadata files, and prints the
per-request latency (precompiled module, one Secret) the benchmark reports.

Usage: python3 tests/wasm/policy_wasmtime.py   (needs `wasmtime` and PyYAML from PyPI)
"""

import importlib.metadata
import json
import re
import sys
import time
from pathlib import Path

import wasmtime
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wasi_wasmtime  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "dist" / "capi2argo-policy.wasm"
RAW_POLICY = ROOT / "dist" / "capi2argo-raw-policy.wasm"


def run(engine, module, argv1, stdin: bytes, now=None):
    """The policy's answer, as Kubewarden reads it: stdout parsed as JSON; a non-zero exit fails."""
    out, err, code = wasi_wasmtime.run(engine, module, stdin, [argv1], program="policy.wasm", now=now)
    if code != 0:
        raise AssertionError(f"exit {code}: {err}")
    return json.loads(out)


def custom_sections(path):
    """Name → data of every custom section (id 0) of a module."""
    data = path.read_bytes()
    assert data[:4] == b"\0asm", path

    def leb(i):
        value, shift = 0, 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, i

    sections, i = {}, 8
    while i < len(data):
        section_id = data[i]
        size, i = leb(i + 1)
        end = i + size
        if section_id == 0:
            name_len, j = leb(i)
            sections[data[j:j + name_len].decode()] = data[j + name_len:end]
        i = end
    return sections


def argo_secret(config, labels=None):
    return {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cluster-a", "namespace": "argocd",
                     "labels": {"argocd.argoproj.io/secret-type": "cluster", **(labels or {})}},
        "stringData": {"name": "a", "server": "https://a.example:6443", "config": json.dumps(config)},
    }


def admission(operation, obj, settings=None, old=None):
    request = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "", "version": "v1", "kind": "Secret"},
        "resource": {"group": "", "version": "v1", "resource": "secrets"},
        "requestKind": {"group": "", "version": "v1", "kind": "Secret"},
        "requestResource": {"group": "", "version": "v1", "resource": "secrets"},
        "name": "cluster-a", "namespace": "argocd", "operation": operation,
        "userInfo": {"username": "admin", "groups": ["system:masters"]},
        "object": obj, "oldObject": old, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return json.dumps({"request": request, "settings": settings or {}}).encode()


def provider_secret():
    """The Argo CD Secret the kubeadm golden case expects, as JSON."""
    text = (ROOT / "tests" / "golden" / "provider-kubeadm" / "expected" / "output.yaml").read_text()
    for item in yaml.safe_load(text)["items"]:
        if (item.get("metadata", {}).get("labels") or {}).get("argocd.argoproj.io/secret-type") == "cluster":
            return item
    raise AssertionError("no Argo CD Secret in provider-kubeadm")


def request_latency(engine=None, module=None, secret=None, runs=50):
    """Seconds per `validate` call of the policy on one Argo CD Secret: the module compiled once,
    instantiated per request, as a policy server does (the benchmark reports it)."""
    engine = engine or wasmtime.Engine()
    module = module or wasmtime.Module.from_file(engine, str(POLICY))
    request = admission("CREATE", secret or provider_secret())
    run(engine, module, "validate", request)  # warm-up
    start = time.perf_counter()
    for _ in range(runs):
        run(engine, module, "validate", request)
    return (time.perf_counter() - start) / runs


def main():
    engine = wasmtime.Engine()
    policy = wasmtime.Module.from_file(engine, str(POLICY))
    raw_policy = wasmtime.Module.from_file(engine, str(RAW_POLICY))
    checks = []

    def check(name, ok, detail=""):
        checks.append((name, ok, detail))

    good = provider_secret()
    r = run(engine, policy, "validate", admission("CREATE", good))
    check("CREATE of a provider's Argo CD Secret is accepted", r.get("accepted") is True, r)
    r = run(engine, policy, "validate", admission("UPDATE", good, old=good))
    check("UPDATE of it is accepted", r.get("accepted") is True, r)
    # The policy server's clock (WASI), pinned here: the fixtures' client certificates are valid
    # for a year from 2026-11-21.
    r = run(engine, policy, "validate", admission("CREATE", good), now="2027-12-01T00:00:00Z")
    check("a client certificate that has expired is rejected, with its date",
          r.get("accepted") is False and "certData" in r.get("message", "")
          and "expired on 2027-11-21" in r.get("message", ""), r)
    r = run(engine, policy, "validate", admission("CREATE", good), now="2027-11-10T00:00:00Z")
    check("one that expires within expiryWarningDays is accepted with a warning",
          r.get("accepted") is True and any("expires on 2027-11-21" in w for w in r.get("warnings") or []), r)
    bad = argo_secret({"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
        "command": "sh", "args": ["-c", "id"], "apiVersion": "client.authentication.k8s.io/v1beta1"}})
    r = run(engine, policy, "validate", admission("CREATE", bad))
    check("an exec command outside the policy is rejected, naming the field",
          r.get("accepted") is False and r.get("code") == 400
          and "execProviderConfig.command" in r.get("message", ""), r)
    typo = argo_secret({"tlsClientConfig": {"insecure": "no"}})
    r = run(engine, policy, "validate", admission("UPDATE", typo, old=good))
    check("a config Argo CD cannot read is rejected on UPDATE", r.get("accepted") is False, r)
    secret_in_message = argo_secret({"tlsClientConfig": {"insecure": False}, "bearerToken": 987654321})
    r = run(engine, policy, "validate", admission("CREATE", secret_in_message))
    check("no value of the Secret in the message", r.get("accepted") is False and "987654321" not in r.get("message", ""), r)
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "argocd"},
             "stringData": {"password": "x"}}
    r = run(engine, policy, "validate", admission("CREATE", plain))
    check("a Secret that is not an Argo CD cluster Secret is accepted untouched", r == {"accepted": True}, r)
    r = run(engine, policy, "validate", admission("DELETE", None, old=good))
    check("DELETE is accepted", r.get("accepted") is True, r)
    lab = argo_secret({"tlsClientConfig": {"insecure": True}})
    r = run(engine, policy, "validate", admission("CREATE", lab, settings={"forbidInsecure": True}))
    check("settings apply (forbidInsecure)", r.get("accepted") is False and "insecure" in r.get("message", ""), r)

    r = run(engine, policy, "validate-settings", b'{"allowedExecCommands": ["argocd-k8s-auth"], "requiredLabels": ["team"]}')
    check("valid settings", r == {"valid": True, "message": None}, r)
    r = run(engine, policy, "validate-settings", b'{"forbidInsecur": true}')
    check("a mistyped setting is invalid, with a hint", r.get("valid") is False and "forbidInsecure" in (r.get("message") or ""), r)
    r = run(engine, policy, "validate-settings", b'[1, 2]')
    check("settings that are not an object are invalid", r.get("valid") is False, r)

    fixture = (ROOT / "tests" / "fixtures" / "providers" / "kubeadm.yaml").read_text()
    items = [d for d in yaml.safe_load_all(fixture) if d]
    raw = json.dumps({"request": {"apiVersion": "v1", "kind": "List", "items": items},
                      "settings": {"namespacedNames": True}}).encode()
    r = run(engine, raw_policy, "validate", raw)
    names = [i["metadata"]["name"] for i in (r.get("mutated_object") or {}).get("items", [])]
    check("the raw policy returns the input and the Argo CD Secret in mutated_object",
          r.get("accepted") is True and "cluster-fleet-eu-prod-eu-1" in names and len(names) == len(items) + 1, names)

    for path, metadata in ((POLICY, "metadata.yml"), (RAW_POLICY, "metadata-raw.yml")):
        sections = custom_sections(path)
        embedded = json.loads(sections.get("io.kubewarden.metadata", b"{}"))
        written = yaml.safe_load((ROOT / "wasm" / "policy" / metadata).read_text())
        check(f"{path.name}: io.kubewarden.metadata is {metadata}",
              embedded.get("protocolVersion") == "Unknown" and embedded.get("executionMode") == "wasi"
              and all(embedded.get(k) == v for k, v in written.items()), embedded)

    latency = request_latency(engine, policy, good, runs=50)
    print(f"policy latency: {latency * 1000:.2f} ms per request (wasmtime {importlib.metadata.version('wasmtime')}, precompiled module, one Secret)")

    failed = [c for c in checks if not c[1]]
    for name, _, detail in failed:
        print(f"FAIL kubewarden policy: {name}: {str(detail)[:400]}")
    print(f"kubewarden policy: test result: {'FAILED' if failed else 'ok'}. {len(checks) - len(failed)} passed; {len(failed)} failed; 0 ignored")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
