#!/usr/bin/env python3
"""The controller's benchmark: capi2argo-controller left running over a fleet of N clusters (a
Cluster API Cluster and its kubeconfig Secret each, every cluster its own server), measured from
outside, never asserted by a test.

    python3 bench/controller.py --kubeconfig K --n 100 1000 10000   # a real kube-apiserver
    python3 bench/controller.py --n 100 1000                        # the API stand-in
    python3 bench/controller.py --kubeconfig K --binary OLD NEW     # two builds, row by row

`make controller` first (the static binary it runs). With `--kubeconfig`, the server is one you
started (kube-apiserver v1.32 and etcd, nothing else is needed): the benchmark installs a
minimal Cluster CRD when the server has none, and works in namespaces of its own
(`bench-fleet`, `bench-argocd`), which it empties first. Without it, the API stand-in
(tests/kube/apiserver.py) serves, in memory: its times say more about Python than about the
controller, but what the controller does (latency ratios, writes, memory) still shows.

For each N, one controller process (a release build, default settings, credentials as the
kubeconfig Secrets give them):

- registered: the fleet is created while the controller runs; the time from the last create
  until every cluster has its Argo CD Secret;
- idle: its CPU over 10 s with nothing changing;
- one new cluster, idle: a kubeconfig Secret and its Cluster created, the time until its Argo
  CD Secret appears (a watch on Argo CD's namespace), `--samples` times;
- the same under churn: 10 Cluster status updates a second (a condition's lastTransitionTime
  and the observedGeneration, which no plan reads), and the CPU during that churn;
- its resident set when idle, its peak RSS (VmHWM), the reconciles it made and their mean time,
  and Secret writes per cluster (the controller's own metrics).

Results: bench/results/controller.md (and printed).
"""

import argparse
import base64
import concurrent.futures
import copy
import json
import os
import random
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import http.client
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target/x86_64-unknown-linux-musl/controller/capi2argo-controller"
FLEET_NS = "bench-fleet"
ARGO_NS = "bench-argocd"
CLK_TCK = os.sysconf("SC_CLK_TCK")

CLUSTER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusters.cluster.x-k8s.io"},
    "spec": {
        "group": "cluster.x-k8s.io",
        "names": {"kind": "Cluster", "listKind": "ClusterList", "plural": "clusters", "singular": "cluster"},
        "scope": "Namespaced",
        "versions": [{
            "name": "v1beta1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "subresources": {"status": {}},
        }],
    },
}


class Server:
    """An API server reached over HTTP(S), as the kubeconfig says (data fields only)."""

    def __init__(self, kubeconfig):
        import yaml

        config = yaml.safe_load(Path(kubeconfig).read_text())
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next((u["user"] for u in config.get("users", []) if u["name"] == context.get("user")), {}) or {}
        url = urllib.parse.urlsplit(cluster["server"])
        self.host, self.port, self.tls = url.hostname, url.port, url.scheme == "https"
        self.context = None
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.tls:
            self.scratch = tempfile.mkdtemp(prefix="capi2argo-bench-tls-")
            ctx = ssl.create_default_context()
            if "certificate-authority-data" in cluster:
                ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
            if "client-certificate-data" in user:
                cert, key = (Path(self.scratch) / n for n in ("cert", "key"))
                cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
                key.write_bytes(base64.b64decode(user["client-key-data"]))
                ctx.load_cert_chain(str(cert), str(key))
            self.context = ctx
        if "token" in user:
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.local = threading.local()

    def connection(self, timeout=30):
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, content_type=None):
        """One request on this thread's connection; (status, parsed body)."""
        for attempt in range(3):
            conn = getattr(self.local, "conn", None) or self.connection()
            self.local.conn = conn
            headers = dict(self.headers)
            if content_type:
                headers["Content-Type"] = content_type
            try:
                conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
                response = conn.getresponse()
                data = response.read()
                return response.status, (json.loads(data) if data.startswith(b"{") else data)
            except (OSError, http.client.HTTPException):
                self.local.conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2)

    def must(self, method, path, body=None, ok=(200, 201), content_type=None):
        status, answer = self.request(method, path, body, content_type)
        if status not in ok:
            raise SystemExit(f"{method} {path}: {status} {str(answer)[:300]}")
        return answer


def fleet_secrets(n):
    """The kubeconfig Secrets of the benchmark's fleet of `n` (bench/fleet.py), as JSON objects,
    without their server-side fields."""
    import yaml

    path = ROOT / "target/bench" / f"fleet-{n}.yaml"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "bench/fleet.py"), "--n", str(n), "--no-package",
                        "--out", str(ROOT / "target/bench")], check=True, stdout=subprocess.DEVNULL)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load(path.read_text(), Loader=loader)
    out = []
    for o in doc["items"]:
        if o.get("kind") != "Secret":
            continue
        meta = o["metadata"]
        labels = meta.get("labels") or {}
        out.append({
            "apiVersion": "v1", "kind": "Secret", "type": o.get("type", "Opaque"),
            "metadata": {"name": meta["name"], "namespace": FLEET_NS, "labels": labels},
            "data": o.get("data", {}),
        })
    return out


def cluster_of(secret):
    name = secret["metadata"]["labels"].get("cluster.x-k8s.io/cluster-name")
    # CAPA and CAPG's `<c>-user-kubeconfig` is a second Secret of the same cluster.
    if not name or not secret["metadata"]["name"].endswith("-kubeconfig") or secret["metadata"]["name"].endswith("-user-kubeconfig"):
        return None
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": FLEET_NS},
        "spec": {"controlPlaneRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                                     "kind": "KubeadmControlPlane", "name": f"{name}-cp"},
                 "topology": {"class": "quick-start", "version": "v1.32.0"}},
    }


def status_of(generation):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"phase": "Provisioned", "controlPlaneReady": True, "infrastructureReady": True,
            "observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}]}


SECRETS = f"/api/v1/namespaces/{FLEET_NS}/secrets"
CLUSTERS = f"/apis/cluster.x-k8s.io/v1beta1/namespaces/{FLEET_NS}/clusters"
ARGO_SECRETS = f"/api/v1/namespaces/{ARGO_NS}/secrets"


def prepare(server):
    """The namespaces, empty, and the Cluster CRD."""
    for ns in (FLEET_NS, ARGO_NS):
        server.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    status, _ = server.request("GET", "/apis/cluster.x-k8s.io/v1beta1")
    if status == 404:
        server.must("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CLUSTER_CRD)
        for _ in range(100):
            if server.request("GET", "/apis/cluster.x-k8s.io/v1beta1")[0] == 200:
                break
            time.sleep(0.2)
        time.sleep(2)
    for path in (SECRETS, CLUSTERS, ARGO_SECRETS):
        server.request("DELETE", path)
    for path in (SECRETS, CLUSTERS, ARGO_SECRETS):
        for _ in range(600):
            items = server.must("GET", path + "?limit=1")["items"]
            if not items:
                break
            time.sleep(0.5)


def create(server, secret):
    cluster = cluster_of(secret)
    if cluster is not None:
        made = server.must("POST", CLUSTERS, cluster)
        made["status"] = status_of(1)
        server.must("PUT", f"{CLUSTERS}/{cluster['metadata']['name']}/status", made)
    server.must("POST", SECRETS, secret)


def argo_count(server):
    """How many Argo CD Secrets there are (a metadata-only list, in pages)."""
    count, token = 0, ""
    while True:
        path = f"{ARGO_SECRETS}?limit=2000" + (f"&continue={urllib.parse.quote(token)}" if token else "")
        answer = server.must("GET", path)
        count += len(answer["items"])
        token = answer["metadata"].get("continue") or ""
        if not token:
            return count


class ArgoWatch:
    """Every Argo CD Secret added from now on, with the moment it was seen."""

    def __init__(self, server):
        self.seen, self.cond = {}, threading.Condition()
        rv = server.must("GET", f"{ARGO_SECRETS}?limit=1")["metadata"]["resourceVersion"]
        conn = server.connection(timeout=3600)
        headers = dict(server.headers)
        conn.request("GET", f"{ARGO_SECRETS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=false", headers=headers)
        self.response = conn.getresponse()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.response:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "ADDED":
                with self.cond:
                    self.seen[event["object"]["metadata"]["name"]] = time.monotonic()
                    self.cond.notify_all()

    def wait(self, name, limit=60):
        deadline = time.monotonic() + limit
        with self.cond:
            while name not in self.seen and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())
            return self.seen.get(name)


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmHWM")) / 1024


def metric(port, name):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    total = 0.0
    for line in conn.getresponse().read().decode().splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def new_cluster(template, i):
    secret = copy.deepcopy(template)
    name = f"bench-new-{i}"
    secret["metadata"]["name"] = f"{name}-kubeconfig"
    secret["metadata"]["labels"] = {**template["metadata"]["labels"], "cluster.x-k8s.io/cluster-name": name}
    config = base64.b64decode(secret["data"]["value"]).decode()
    old = next(l.split("server:", 1)[1].strip() for l in config.splitlines() if "server:" in l)
    config = config.replace(old, f"https://bench-new-{i}.example.com:6443")
    secret["data"]["value"] = base64.b64encode(config.encode()).decode()
    return name, secret


def latencies(server, watch, template, start, samples, gap):
    out = []
    for i in range(start, start + samples):
        name, secret = new_cluster(template, i)
        began = time.monotonic()
        create(server, secret)
        seen = watch.wait(f"cluster-{name}")
        if seen is None:
            raise SystemExit(f"cluster {name} was not registered within 60 s")
        out.append(seen - began)
        time.sleep(gap)
    return out


def churn(server, names, rate, stop):
    """`rate` Cluster status updates a second, to clusters picked at random."""
    generation, pick = 1, random.Random(7)
    while not stop.is_set():
        began = time.monotonic()
        name = pick.choice(names)
        generation += 1
        server.request("PATCH", f"{CLUSTERS}/{name}/status", {"status": status_of(generation)},
                       content_type="application/merge-patch+json")
        time.sleep(max(0.0, 1 / rate - (time.monotonic() - began)))


def resident(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS")) / 1024


def measure(binary, server, kubeconfig, n, samples, workers):
    prepare(server)
    secrets = fleet_secrets(n)
    template = next(s for s in secrets if cluster_of(s) and "client-key-data" in base64.b64decode(s["data"]["value"]).decode())
    log = open(ROOT / "target" / f"bench-controller-{n}.log", "w")
    controller = subprocess.Popen(
        [str(binary), "--kubeconfig", str(kubeconfig), f"--argo-namespace={ARGO_NS}",
         "--metrics-bind-address=127.0.0.1:18080", "--health-probe-bind-address=0"],
        stdout=log, stderr=log)
    try:
        time.sleep(2)
        expected = sum(1 for s in secrets if cluster_of(s))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda s: create(server, s), secrets))
        last_create = time.monotonic()
        while argo_count(server) < expected:
            if time.monotonic() - last_create > 600:
                raise SystemExit(f"N={n}: not every cluster registered within 600 s")
            time.sleep(0.5)
        registered = time.monotonic() - last_create
        time.sleep(5)
        cpu0, t0 = cpu_seconds(controller.pid), time.monotonic()
        time.sleep(10)
        idle_cpu = (cpu_seconds(controller.pid) - cpu0) / (time.monotonic() - t0)
        idle_rss = resident(controller.pid)
        watch = ArgoWatch(server)
        idle = latencies(server, watch, template, 0, samples, 1.0)
        names = [cluster_of(s)["metadata"]["name"] for s in secrets if cluster_of(s)]
        stop = threading.Event()
        churner = threading.Thread(target=churn, args=(server, names, 10, stop))
        churner.start()
        time.sleep(3)
        cpu0, t0 = cpu_seconds(controller.pid), time.monotonic()
        busy = latencies(server, watch, template, samples, samples, 1.0)
        churn_cpu = (cpu_seconds(controller.pid) - cpu0) / (time.monotonic() - t0)
        stop.set()
        churner.join()
        clusters = expected + 2 * samples
        writes = metric(18080, "capi2argo_writes_total")
        reconciles = metric(18080, "capi2argo_reconcile_duration_seconds_count")
        reconcile_mean = metric(18080, "capi2argo_reconcile_duration_seconds_sum") / max(reconciles, 1)
        rss = peak_rss(controller.pid)
    finally:
        controller.send_signal(signal.SIGTERM)
        try:
            controller.wait(40)
        except subprocess.TimeoutExpired:
            controller.kill()
        log.close()
    return {
        "n": n, "registered": registered, "idle_cpu": idle_cpu,
        "idle_p50": statistics.median(idle), "idle_p95": percentile(idle, 95),
        "churn_p50": statistics.median(busy), "churn_p95": percentile(busy, 95),
        "churn_cpu": churn_cpu, "rss": rss, "idle_rss": idle_rss, "writes": writes / clusters,
        "reconciles": reconciles, "reconcile_mean": reconcile_mean,
    }


def standin(directory):
    store, log, port = (Path(directory) / f for f in ("store.json", "log.jsonl", "port"))
    store.write_text("[]")
    process = subprocess.Popen([sys.executable, str(ROOT / "tests/kube/apiserver.py"), str(store), "/dev/null",
                                str(port), "--in-memory", "--history", "100000"])
    for _ in range(400):
        if port.exists() and port.read_text():
            break
        time.sleep(0.05)
    kubeconfig = Path(directory) / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n"
        f"    server: http://127.0.0.1:{port.read_text()}\nusers:\n- name: u\n  user: {{}}\n"
        "contexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n"
    )
    return process, kubeconfig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--kubeconfig", help="a running API server's (default: the stand-in)")
    ap.add_argument("--samples", type=int, default=20, help="new clusters timed, idle and under churn")
    ap.add_argument("--workers", type=int, default=8, help="clients creating the fleet")
    ap.add_argument("--label", default="", help="what this run measures, for the table's heading")
    ap.add_argument("--binary", nargs="+", type=Path, default=[BINARY],
                    help="the controller binaries to compare, each over every N (default: make controller's)")
    args = ap.parse_args()
    for binary in args.binary:
        if not binary.exists():
            sys.exit(f"{binary} is missing: make controller")
    rows = []
    with tempfile.TemporaryDirectory(prefix="capi2argo-controller-bench-") as directory:
        process = None
        kubeconfig = args.kubeconfig
        if kubeconfig is None:
            process, kubeconfig = standin(directory)
        try:
            server = Server(kubeconfig)
            for n in args.n:
                for binary in args.binary:
                    row = measure(binary, server, kubeconfig, n, args.samples, args.workers)
                    row["binary"] = binary.name
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        finally:
            if process is not None:
                process.kill()
                process.wait()
    where = "a kube-apiserver" if args.kubeconfig else "the API stand-in"
    lines = [
        f"# capi2argo-controller over {where}{' — ' + args.label if args.label else ''}",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `python3 bench/controller.py"
        f"{' --kubeconfig …' if args.kubeconfig else ''} --n {' '.join(map(str, args.n))}`; {args.samples} new clusters"
        " idle and as many under 10 Cluster status updates/s.",
        "",
        "| fleet | binary | registered after the last create | one new cluster, p50 / p95 (idle) | p50 / p95 under churn | CPU idle | CPU under churn | RSS idle / peak | Secret writes per cluster | reconciles (mean) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['binary']} | {r['registered']:.1f} s | {r['idle_p50']:.2f} s / {r['idle_p95']:.2f} s"
            f" | {r['churn_p50']:.2f} s / {r['churn_p95']:.2f} s | {r['idle_cpu']:.2f} core | {r['churn_cpu']:.2f} core"
            f" | {r['idle_rss']:.0f} / {r['rss']:.0f} MiB | {r['writes']:.2f} | {r['reconciles']:.0f} ({r['reconcile_mean']:.2f} s) |"
        )
    text = "\n".join(lines) + "\n"
    (ROOT / "bench/results").mkdir(exist_ok=True)
    (ROOT / "bench/results/controller.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
