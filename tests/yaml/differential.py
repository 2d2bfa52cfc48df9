#!/usr/bin/env python3
"""The function's output read by libyaml (PyYAML's C loader) equals its input, on YAML other
tools wrote: generated Kubernetes-shaped streams as PyYAML writes them, the same files as kpt
rewrites and sends them, and the YAML test suite's valid cases. Also: `kpt fn eval --exec
capi2argo` leaves every file of such a package exactly as `kpt fn eval --exec cat` does.

    differential.py BINARY [SUITE_DATA_DIR]

Prints a result line in the Rust harness's words (`test result: ok. N passed; …`) for
`make test`'s summary; exits 1 on any failure.
"""

import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

# libyaml's oracle is the YAML reader's own (crates/yaml/tests/oracle.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "crates" / "yaml" / "tests"))
import oracle  # noqa: E402


class Loader(yaml.CSafeLoader):
    """libyaml's reading, with any tag kept as data instead of refused."""


def _tagged(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return ("!tag", suffix, loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return ("!tag", suffix, loader.construct_sequence(node, deep=True))
    return ("!tag", suffix, loader.construct_mapping(node, deep=True))


Loader.add_multi_constructor("", _tagged)
Loader.add_multi_constructor("!", _tagged)
Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: ("!value", loader.construct_scalar(node)))


def canonical(value):
    """Data in a form that compares by meaning (NaN equals NaN, dict order and hashability aside)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return ("map", sorted((repr(canonical(k)), canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq", [canonical(v) for v in value])
    if isinstance(value, set):
        return ("set", sorted(repr(canonical(v)) for v in value))
    return (type(value).__name__, value)


def items(text):
    """The resources of a ResourceList, a List or a stream, as the function reads them."""
    docs = [d for d in yaml.load_all(text, Loader=Loader) if d is not None]
    if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == "ResourceList":
        return [i for i in docs[0].get("items") or []]
    out = []

    def flatten(d):
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), (list, type(None))):
            for i in d.get("items") or []:
                if i is not None:
                    flatten(i)
        else:
            out.append(d)

    for d in docs:
        flatten(d)
    return out


def run(binary, text):
    return subprocess.run([binary], input=text.encode("utf-8"), capture_output=True)


class Results:
    def __init__(self):
        self.passed = 0
        self.failures = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failures.append(f"{name}: {detail}")


def same_items(binary, name, text, results, must_accept=True):
    try:
        want = [canonical(i) for i in items(text)]
    except yaml.YAMLError:
        return  # libyaml refuses it: the parity tests check that the function does too
    except RecursionError:
        return
    done = run(binary, text)
    if done.returncode == 2:
        results.check(name, not must_accept, f"refused: {done.stderr.decode()[:300]}")
        return
    try:
        got = [canonical(i) for i in items(done.stdout.decode())]
    except yaml.YAMLError as e:
        results.check(name, False, f"output is not YAML libyaml reads: {e}")
        return
    results.check(name, got[: len(want)] == want, f"items read differently\n  input: {text[:400]!r}\n  output: {done.stdout.decode()[:400]!r}")


def kpt_package(streams, root):
    """A kpt package holding the streams as files, one file each."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
    )
    for i, text in enumerate(streams):
        (pkg / f"f{i:04d}.yaml").write_text(text)
    return pkg


def files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def kpt_checks(binary, streams, results):
    if shutil.which("kpt") is None:
        print("*** SKIPPED check: `kpt` is not on PATH, so kpt-written YAML and `--exec cat` equality were NOT checked ***")
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # kpt reads only what it can parse itself; files go in one by one through a first eval.
        accepted = []
        for text in streams:
            try:
                items(text)
            except yaml.YAMLError:
                continue
            # kpt splits files at lines that are exactly `---`; it refuses content on that line.
            if "kind: ResourceList" in text or "kind: List" in text or re.search(r"^--- ", text, re.M):
                continue
            accepted.append(text)
        pkg = kpt_package(accepted, tmp)
        tee = tmp / "tee.sh"
        sent = tmp / "sent.yaml"
        tee.write_text(f"#!/bin/sh\ntee {sent}\n")
        tee.chmod(0o755)
        first = subprocess.run(["kpt", "fn", "eval", str(pkg), "--exec", str(tee)], capture_output=True)
        if first.returncode != 0:
            results.check("kpt eval --exec tee", False, first.stderr.decode()[-500:])
            return
        # What kpt sends a function: the function reads it as libyaml does and gives it back.
        same_items(binary, "kpt-sent ResourceList", sent.read_text(), results)
        # Every file kpt rewrote, on its own.
        for name, data in files(pkg).items():
            same_items(binary, f"kpt-written {name}", data.decode(), results)
        # kpt fn eval with the function leaves every file as kpt fn eval with cat does.
        with_cat = tmp / "cat"
        with_fn = tmp / "fn"
        shutil.copytree(pkg, with_cat)
        shutil.copytree(pkg, with_fn)
        cat = subprocess.run(["kpt", "fn", "eval", str(with_cat), "--exec", "cat"], capture_output=True)
        fn = subprocess.run(["kpt", "fn", "eval", str(with_fn), "--exec", binary], capture_output=True)
        results.check("kpt fn eval --exec cat", cat.returncode == 0, cat.stderr.decode()[-300:])
        results.check("kpt fn eval --exec capi2argo", fn.returncode == 0, fn.stderr.decode()[-300:])
        a, b = files(with_cat), files(with_fn)
        for name in sorted(set(a) | set(b)):
            results.check(f"kpt --exec cat vs capi2argo: {name}", a.get(name) == b.get(name), "files differ")


def main():
    binary = sys.argv[1]
    suite_dir = sys.argv[2] if len(sys.argv) > 2 else None
    results = Results()
    streams = oracle.corpus(23, 600)
    for i, text in enumerate(streams):
        same_items(binary, f"corpus[{i}]", text, results)
    kpt_checks(binary, oracle.corpus(29, 150, kpt=True), results)
    if suite_dir:
        for case in oracle.suite(suite_dir):
            if not case["fail"]:
                same_items(binary, f"suite {case['id']}", case["yaml"], results, must_accept=True)
    else:
        print("*** SKIPPED check: no yaml-test-suite data, so the suite's pass-through was NOT checked ***")
    for failure in results.failures[:20]:
        print(f"FAIL {failure}")
    failed = len(results.failures)
    print(f"yaml differential: test result: {'FAILED' if failed else 'ok'}. {results.passed} passed; {failed} failed; 0 ignored")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    sys.exit(main())
