#!/usr/bin/env python3
"""What judging ApplicationSets costs a plan: `capi2argo plan` over a fleet of N clusters with
their Argo CD Secrets, nine ApplicationSets (cluster generators: every cluster, label selectors,
a matrix with a list, Go and fasttemplate names) and the nine Applications each cluster has, in
two shapes, measured in one run, interleaved, never asserted by a test:

    python3 bench/appsets.py                    # N = 1500, 3000, 6000; target/release/capi2argo
    python3 bench/appsets.py --n 1000 2000 --reps 5

- `steady`: every Argo CD Secret is what the run writes (as the function's own output gives it):
  the plan changes nothing, and nothing is judged;
- `pruned`: every kubeconfig Secret is gone (allowEmpty, maxPrune and maxApplicationDeletes let
  it through): every cluster's Applications are judged deleted, the most work a plan can ask of
  the judgment;
- `no-apps`: the pruned fleet without ApplicationSets or Applications, the same plan unjudged.

For each, the median wall time and the peak RSS (`/usr/bin/time`) of `capi2argo plan`, and the ratio of
N to N/2 (about 2 where the cost grows with the fleet, not with its square). Results:
bench/results/appsets.md (and printed). Scratch fleets go under target/bench-appsets/.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "target" / "release" / "capi2argo"
SCRATCH = ROOT / "target" / "bench-appsets"

# (name, generator, name template, Go template)
APPSETS = [
    ("all", "- clusters: {}", "{{.name}}-all", True),
    ("all-fast", "- clusters: {}", "{{name}}-fast", False),
    ("prod", "- clusters:\n      selector:\n        matchLabels:\n          env: prod", "{{.name}}-prod", True),
    ("staging", "- clusters:\n      selector:\n        matchLabels:\n          env: staging", "{{.name}}-staging", True),
    ("in", "- clusters:\n      selector:\n        matchExpressions:\n        - {key: env, operator: In, values: [prod, staging]}", "{{.nameNormalized}}-in", True),
    ("typed", "- clusters:\n      selector:\n        matchLabels:\n          argocd.argoproj.io/secret-type: cluster", "{{.name}}-typed", True),
    ("values", "- clusters:\n      selector:\n        matchLabels:\n          argocd.argoproj.io/secret-type: cluster\n      values:\n        app: guestbook", "{{.values.app}}-{{.name}}", True),
    ("lower", "- clusters:\n      selector:\n        matchLabels:\n          argocd.argoproj.io/secret-type: cluster", "{{ .name | lower }}-lower", True),
    ("matrix", "- matrix:\n      generators:\n      - clusters:\n          selector:\n            matchLabels:\n              argocd.argoproj.io/secret-type: cluster\n      - list:\n          elements:\n          - addon: metrics", "{{.name}}-{{.addon}}", True),
]


def kubeconfig_secret(c, env):
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {c}\n  cluster:\n    server: https://{c}.fleet.example:6443\n"
        "users:\n- name: admin\n  user:\n    token: token-of-{c}\ncontexts:\n- name: {c}\n  context: {{cluster: {c}, user: admin}}\n"
        "current-context: {c}\n"
    ).format(c=c)
    body = "\n".join("      " + line for line in kubeconfig.splitlines())
    return (
        f"- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: {c}-kubeconfig\n    namespace: fleet\n"
        f"    labels:\n      cluster.x-k8s.io/cluster-name: {c}\n  type: cluster.x-k8s.io/secret\n"
        f"  stringData:\n    value: |\n{body}\n"
    )


def capi_cluster(c, env):
    return (
        f"- apiVersion: cluster.x-k8s.io/v1beta2\n  kind: Cluster\n  metadata:\n    name: {c}\n    namespace: fleet\n"
        f"    labels: {{env: {env}}}\n  spec: {{}}\n"
    )


COPY = ["--set", "copyClusterLabels=true"]


def appset(name, generator, template, go):
    dest = "{{.server}}" if go else "{{server}}"
    return (
        f"- apiVersion: argoproj.io/v1alpha1\n  kind: ApplicationSet\n  metadata: {{name: {name}, namespace: argocd}}\n"
        f"  spec:\n    goTemplate: {str(go).lower()}\n    generators:\n    {generator.replace(chr(10), chr(10) + '  ')}\n"
        f"    template:\n      metadata: {{name: '{template}'}}\n"
        f"      spec: {{project: default, destination: {{server: '{dest}', namespace: x}}}}\n"
    )


def application(owner, name, c):
    return (
        f"- apiVersion: argoproj.io/v1alpha1\n  kind: Application\n  metadata:\n    name: {name}\n    namespace: argocd\n"
        f"    finalizers: [resources-finalizer.argocd.argoproj.io]\n"
        f"    ownerReferences: [{{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, name: {owner}, controller: true}}]\n"
        f"  spec: {{project: default, destination: {{server: 'https://{c}.fleet.example:6443', namespace: x}}}}\n"
    )


def listing(items):
    return "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ''}\nitems:\n" + "".join(items)


def fleets(n):
    """The three inputs at N, written once."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    paths = {shape: SCRATCH / f"{shape}-{n}.yaml" for shape in ("steady", "pruned", "no-apps")}
    if all(p.exists() for p in paths.values()):
        return paths
    clusters = [f"c{i:05d}" for i in range(n)]
    envs = {c: ("prod", "staging", "dev")[i % 3] for i, c in enumerate(clusters)}
    # Each cluster's kubeconfig Secret and its Cluster, whose env label the run copies.
    kubeconfigs = listing([kubeconfig_secret(c, envs[c]) + capi_cluster(c, envs[c]) for c in clusters])
    # The Argo CD Secrets, as the function writes them.
    out = subprocess.run([str(BINARY), *COPY], input=kubeconfigs.encode(), capture_output=True,
                         check=True).stdout.decode()
    docs = [d for d in out.split("\n---\n") if "kind: Secret" in d and "namespace: argocd" in d]
    argo = ["- " + "\n  ".join(d.strip().removeprefix("---\n").splitlines()) + "\n" for d in docs]
    assert len(argo) == n, f"{len(argo)} Argo CD Secrets for {n} clusters"
    sets = [appset(*a) for a in APPSETS]
    apps = []
    for c in clusters:
        for name, _, template, go in APPSETS:
            if name == "prod" and envs[c] != "prod" or name == "staging" and envs[c] != "staging":
                continue
            if name == "in" and envs[c] == "dev":
                continue
            app = (template.replace("{{.name}}", c).replace("{{name}}", c).replace("{{.nameNormalized}}", c)
                   .replace("{{.values.app}}", "guestbook").replace("{{ .name | lower }}", c).replace("{{.addon}}", "metrics"))
            apps.append(application(name, app, c))
    paths["steady"].write_text(kubeconfigs + "---\n" + listing(argo) + "---\n" + listing(sets + apps))
    paths["pruned"].write_text(listing(argo) + "---\n" + listing(sets + apps))
    paths["no-apps"].write_text(listing(argo))
    return paths


ARGS = {
    "steady": ["plan", *COPY],
    "pruned": ["plan", *COPY, "--set", "allowEmpty=true", "--set", "maxPrune=100%", "--set", "maxApplicationDeletes=100%"],
    "no-apps": ["plan", *COPY, "--set", "allowEmpty=true", "--set", "maxPrune=100%"],
}


def once(shape, path):
    """Wall time of one plan."""
    with open(path, "rb") as stdin:
        start = time.perf_counter()
        code = subprocess.call([str(BINARY), *ARGS[shape]], stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
    if code not in (0, 1):
        sys.exit(f"{shape}: capi2argo plan failed on {path}")
    return elapsed


def peak_rss(shape, path):
    """Peak RSS (KiB) of one more, untimed plan, read by /usr/bin/time: a child of this Python
    process would inherit its high-water mark in wait4's figure."""
    with open(path, "rb") as stdin:
        out = subprocess.run(["/usr/bin/time", "-f", "%M", str(BINARY), *ARGS[shape]], stdin=stdin,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).stderr.decode()
    return int(out.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1500, 3000, 6000])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if not BINARY.exists():
        sys.exit(f"{BINARY} is missing: cargo build --release")
    inputs = {n: fleets(n) for n in args.n}
    samples = {(s, n): [] for n in args.n for s in ARGS}
    rss = {}
    for rep in range(args.reps):
        order = [(s, n) for n in args.n for s in ARGS]
        order = order[rep % len(order):] + order[:rep % len(order)]
        for shape, n in order:
            samples[(shape, n)].append(once(shape, inputs[n][shape]))
    for shape, n in samples:
        rss[(shape, n)] = peak_rss(shape, inputs[n][shape])
    lines = [
        f"# ApplicationSets in the plan (bench/appsets.py, median of {args.reps} interleaved runs)",
        "",
        "| shape | N clusters | Applications | median | peak RSS | ×N/2 |",
        "|---|---|---|---|---|---|",
    ]
    for shape in ARGS:
        for n in args.n:
            median = statistics.median(samples[(shape, n)])
            half = samples.get((shape, n // 2))
            ratio = f"{median / statistics.median(half):.2f}" if half else ""
            apps = "" if shape == "no-apps" else str(inputs[n][shape].read_text().count("kind: Application\n"))
            lines.append(f"| {shape} | {n} | {apps} | {median:.2f} s | {rss[(shape, n)] // 1024} MiB | {ratio} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "appsets.md").write_text(text)


if __name__ == "__main__":
    main()
