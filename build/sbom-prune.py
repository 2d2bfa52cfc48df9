#!/usr/bin/env python3
"""sbom-prune.py SBOM MANIFEST TARGET: keeps in a CycloneDX SBOM only the crates cargo builds
into the artifact.

cargo-cyclonedx reads one feature resolution for the whole workspace, so a feature another
member or a test-only crate turns on (libtest-mimic's clap with colours and suggestions) brings
crates into every member's SBOM that its artifact never holds. `cargo tree -e normal` for the
package and target is what the build uses: components it does not list are dropped, and with
them every dependency edge to them. Nothing is added: a crate the tool missed stays missing,
and the release test (tests/release.rs) says so.
"""
import json
import os
import subprocess
import sys

sbom_path, manifest, target = sys.argv[1:4]
cargo = os.environ.get("CARGO", "cargo")
tree = subprocess.run(
    [cargo, "tree", "--quiet", "--locked", "--offline", "-e", "normal", "--target", target,
     "--manifest-path", manifest, "--prefix", "none", "--format", "{p}"],
    check=True, capture_output=True, text=True).stdout
built = set()
for line in tree.splitlines():
    words = line.split()
    if len(words) >= 2 and words[1].startswith("v"):
        built.add(f"{words[0]}@{words[1][1:]}")

with open(sbom_path) as f:
    sbom = json.load(f)
kept, dropped = [], set()
for c in sbom.get("components", []):
    if f"{c.get('name')}@{c.get('version')}" in built:
        kept.append(c)
    else:
        dropped.add(c.get("bom-ref"))
sbom["components"] = kept
deps = []
for d in sbom.get("dependencies", []):
    if d.get("ref") in dropped:
        continue
    d["dependsOn"] = [r for r in d.get("dependsOn", []) if r not in dropped]
    deps.append(d)
sbom["dependencies"] = deps
with open(sbom_path, "w") as f:
    json.dump(sbom, f, indent=2)
    f.write("\n")
print(f"{os.path.basename(sbom_path)}: {len(kept)} components, {len(dropped)} dropped (not built into the artifact)")
