#!/usr/bin/env python3
"""The capi2argo benchmark: every row measured in ONE run, interleaved, so ratios hold on a
noisy machine. See bench/README.md for what each row measures.

    python3 bench/run.py                     # what `make bench` runs (after building the artifacts)
    python3 bench/run.py --reps 3 --n 0 100 1000 --kpt-n 100   # quicker

Needs: target/release/capi2argo (`cargo build --release`), dist/capi2argo.wasm and dist/npm
(`make wasm`), the venv with the PyPI `wasmtime` package (`make tools`), node, kpt, cargo (the
floor crate bench/floor is built here), openssl (fleet certificates).

Writes bench/results/<date>.json (every sample), bench/results/latest.md (the table, the
target ratios, the machine) and bench/results/latest.svg (time against N, log-log), and prints
the Markdown.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
NATIVE = ROOT / "target" / "release" / "capi2argo"
WASI = ROOT / "dist" / "capi2argo.wasm"
NPM = ROOT / "dist" / "npm" / "node" / "capi2argo.js"
# `make bench` runs this script with the tools' venv python (wasmtime, PyYAML with libyaml).
VENV_PY = Path(sys.executable)
FLOOR_TARGET = ROOT / "target" / "bench-floor"
FLOOR = FLOOR_TARGET / "release" / "capi2argo-floor"

EMPTY_RESOURCE_LIST = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"

# Row name -> what its time figure is (shown in the README/table legend).
ROWS = {
    "native": "target/release/capi2argo < fleet > /dev/null: process wall time (spawn to exit)",
    "floor": "bench/floor (saphyr-parser events of the list + each decoded kubeconfig, input written back): process wall time",
    "floor+data": "floor --decode-data (also base64-decodes the kubeconfigs' *-data fields): process wall time",
    "floor-scan": "floor --scan --decode-data: a line scan for `value:` lines instead of parsing the list, then the same kubeconfig work (the \"scan + kubeconfig parse\" floor): process wall time",
    "pyyaml": "bench/peer.py: the Python + PyYAML (libyaml C loader and dumper) script a user would write instead: process wall time",
    "wasi": "dist/capi2argo.wasm under wasmtime (PyPI): WASI context + store + instantiate + _start, timed in-process; precompiled module",
    "npm": "dist/npm under Node: one transform(input) call, timed in-process (string in, run, string out)",
}
KPT_ROWS = {
    "kpt-cat": "kpt fn eval PKG --exec cat (identity)",
    "kpt-replay": "kpt fn eval PKG --exec <script printing capi2argo's precomputed output> (kpt's cost of the bigger output)",
    "kpt-capi2argo": "kpt fn eval PKG --exec target/release/capi2argo",
}


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------

TIME = Path("/usr/bin/time")
_WHICH = {}


def spawn(argv, stdin_path=None, capture=False, rss_run=False):
    """Runs argv once with os.posix_spawn (vfork-style: no copy of this Python process, so the
    least spawn overhead Python allows), stdin from stdin_path, stdout to /dev/null (or a file
    read back when capture), stderr to /dev/null. Returns the wall time (spawn to reaped, seen
    from here), the child's CPU time and ru_maxrss from wait4(2), and the exit code.

    wait4's ru_maxrss of a child spawned from here is floored at this Python process's own RSS
    (exec records the high-water mark of the memory it replaces), so exact peak RSS comes from
    one extra run per row and N (rss_run=True) wrapped in `/usr/bin/time -f %M`, a small program
    whose children do not inherit a large high-water mark; that run is not timed. For a child
    that forks (kpt), ru_maxrss is the largest of the child and its reaped descendants."""
    exe = _WHICH.setdefault(argv[0], shutil.which(argv[0]) or argv[0])
    argv = [exe, *argv[1:]]
    tag = f"/tmp/capi2argo-bench-{os.getpid()}"
    rss_file = out_file = None
    if rss_run and TIME.exists():
        rss_file = Path(tag + ".rss")
        argv = [str(TIME), "-f", "%M", "-o", str(rss_file), *argv]
    if capture:
        out_file = Path(tag + ".out")
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, str(stdin_path) if stdin_path else os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(out_file) if capture else os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    rss_kb = ru.ru_maxrss
    if rss_file:
        # `time` prints "Command exited with non-zero status N" before the figure when it fails.
        rss_kb = int(rss_file.read_text().split()[-1])
        rss_file.unlink()
    out = b""
    if out_file:
        out = out_file.read_bytes()
        out_file.unlink()
    return {"wall": t1 - t0, "rss_kb": rss_kb, "cpu": ru.ru_utime + ru.ru_stime,
            "exit": os.waitstatus_to_exitcode(status), "out": out}


def measure(row, n, paths, rss_run=False):
    """One sample of one row at one N; 'time' is the row's figure (see ROWS)."""
    fleet = paths["fleet"][n]
    if row == "native":
        r = spawn([str(paths["native"])], fleet, rss_run=rss_run)
        r["time"] = r["wall"]
    elif row == "floor":
        r = spawn([str(FLOOR)], fleet, rss_run=rss_run)
        r["time"] = r["wall"]
    elif row == "floor+data":
        r = spawn([str(FLOOR), "--decode-data"], fleet, rss_run=rss_run)
        r["time"] = r["wall"]
    elif row == "floor-scan":
        r = spawn([str(FLOOR), "--scan", "--decode-data"], fleet, rss_run=rss_run)
        r["time"] = r["wall"]
    elif row == "pyyaml":
        r = spawn([str(VENV_PY), str(BENCH / "peer.py")], fleet, rss_run=rss_run)
        r["time"] = r["wall"]
    elif row == "wasi":
        r = spawn([str(VENV_PY), str(BENCH / "wasi_run.py"), str(paths["cwasm"]), str(fleet)], capture=True, rss_run=rss_run)
        j = json.loads(r["out"])
        r.update(time=j["run"], load=j["load"], exit=j["exit"] or r["exit"])
    elif row == "npm":
        r = spawn(["node", str(BENCH / "npm_run.cjs"), str(fleet), str(paths["npm"])], capture=True, rss_run=rss_run)
        j = json.loads(r["out"])
        if j.get("error"):
            r["exit"] = 1
        r.update(time=j["transform"], load=j["load"])
    elif row.startswith("kpt-"):
        work = paths["work"] / "kpt-run"
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(paths["pkg"][n], work)  # a fresh copy every run, outside the timing
        fn = {"kpt-cat": "cat", "kpt-replay": str(paths["replay"][n]), "kpt-capi2argo": str(paths["native"])}[row]
        r = spawn(["kpt", "fn", "eval", str(work), "--exec", fn], rss_run=rss_run)
        r["time"] = r["wall"]
        shutil.rmtree(work)
    else:
        raise ValueError(row)
    r.pop("out", None)
    if r["exit"] != 0:
        print(f"warning: {row} at N={n} exited {r['exit']}", file=sys.stderr)
    return r


# --------------------------------------------------------------------------
# Preparation
# --------------------------------------------------------------------------

def digest(path):
    """sha256 (first 16 hex digits) and modification time of an artifact, for the record."""
    import hashlib
    st = path.stat()
    return {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16], "bytes": st.st_size,
            "mtime": datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}


def check_artifacts(rows):
    missing = []
    if not NATIVE.exists():
        missing.append(f"{NATIVE} (cargo build --release)")
    if "wasi" in rows and not WASI.exists():
        missing.append(f"{WASI} (make wasm)")
    if "npm" in rows and not NPM.exists():
        missing.append(f"{NPM} (make wasm)")
    if "wasi" in rows and not VENV_PY.exists():
        missing.append(f"{VENV_PY} (make tools)")
    if missing:
        sys.exit("missing: " + ", ".join(missing))


def prepare(args):
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    print("building the floor (bench/floor) ...", file=sys.stderr)
    subprocess.run(["cargo", "build", "--quiet", "--release", "--manifest-path", str(BENCH / "floor" / "Cargo.toml"),
                    "--target-dir", str(FLOOR_TARGET)], check=True, stdin=subprocess.DEVNULL)
    ns = sorted(set(args.n) | set(args.kpt_n))
    print(f"generating fleets N = {ns} (seed {args.seed}) ...", file=sys.stderr)
    subprocess.run([sys.executable, str(BENCH / "fleet.py"), "--out", str(work), "--seed", str(args.seed),
                    "--n", *map(str, ns)], check=True)
    paths = {"work": work, "fleet": {n: work / f"fleet-{n}.yaml" for n in ns},
             "pkg": {n: work / f"pkg-{n}" for n in ns}, "replay": {}}
    (work / "empty.yaml").write_bytes(EMPTY_RESOURCE_LIST)
    paths["empty"] = work / "empty.yaml"
    # A private copy of every artifact, taken once: a rebuild of target/ or dist/ during the run
    # (other work in the checkout) must not change what is measured half-way.
    snap = work / "artifacts"
    if snap.exists():
        shutil.rmtree(snap)
    snap.mkdir()
    paths["native"] = snap / "capi2argo"
    shutil.copy2(NATIVE, paths["native"])
    paths["artifacts"] = {"native": digest(paths["native"])}
    if "npm" in args.rows:
        shutil.copytree(NPM.parent, snap / "npm-node")
        paths["npm"] = snap / "npm-node" / NPM.name
        paths["artifacts"]["npm"] = digest(snap / "npm-node" / "capi2argo_bg.wasm")
    if "wasi" in args.rows:
        shutil.copy2(WASI, snap / WASI.name)
        paths["artifacts"]["wasi"] = digest(snap / WASI.name)
        # Ahead-of-time compilation, as `wasmtime compile` would: Cranelift time is not a per-call cost.
        paths["cwasm"] = work / "capi2argo.cwasm"
        subprocess.run([str(VENV_PY), str(BENCH / "wasi_run.py"), "--precompile", str(snap / WASI.name), str(paths["cwasm"])],
                       check=True)
    for n in args.kpt_n:
        # The function's own output for what kpt sends it (fleet-N.yaml is byte-identical to kpt's
        # input): replayed by a script that reads its stdin and prints it, to separate kpt's cost of
        # parsing and writing the bigger output from the function's compute.
        out = work / f"replay-{n}.yaml"
        with open(paths["fleet"][n], "rb") as fin, open(out, "wb") as fout:
            subprocess.run([str(paths["native"])], stdin=fin, stdout=fout, stderr=subprocess.DEVNULL)
        script = work / f"replay-{n}.sh"
        script.write_text(f"#!/bin/sh\ncat >/dev/null\nexec cat '{out}'\n")
        script.chmod(0o755)
        paths["replay"][n] = script
    return paths


# --------------------------------------------------------------------------
# Machine
# --------------------------------------------------------------------------

def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass

    def version(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return None

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": mem_gb,
        "kernel": platform.release(),
        "rustc": version(["rustc", "--version"]),
        "node": version(["node", "--version"]),
        "kpt": version(["kpt", "version"]),
        "wasmtime_py": version([str(VENV_PY), "-c", "import importlib.metadata as m; print(m.version('wasmtime'))"]),
        "native_binary_bytes": NATIVE.stat().st_size if NATIVE.exists() else None,
    }


# --------------------------------------------------------------------------
# Statistics and reports
# --------------------------------------------------------------------------

def summarize(samples, rss_sample=None):
    times = [s["time"] for s in samples]
    out = {"runs": len(samples), "median": statistics.median(times), "min": min(times), "max": max(times),
           "process_median": statistics.median(s["wall"] for s in samples),
           "cpu_median": statistics.median(s["cpu"] for s in samples),
           "peak_rss_mb": (rss_sample or max(samples, key=lambda s: s["rss_kb"]))["rss_kb"] / 1024,
           "failed_runs": sum(1 for s in samples if s["exit"] != 0)}
    if "load" in samples[0]:
        out["load_median"] = statistics.median(s["load"] for s in samples)
    return out


def fmt_s(x):
    if x is None:
        return "–"
    if x < 0.01:
        return f"{x * 1000:.2f} ms"
    if x < 1:
        return f"{x * 1000:.0f} ms"
    return f"{x:.2f} s"


def ratio_line(name, value, target, ok, detail=""):
    mark = "met" if ok else "**missed**"
    return f"| {name} | {value} | {target} | {mark} | {detail} |"


def compute_targets(res, startup, sizes, n_big, n_mid, kpt_n):
    """The issue's targets, from this run's medians."""
    t = []

    def med(row, n):
        return res.get(row, {}).get(n, {}).get("median")

    def fastest(row, over, n):
        """The same ratio from each row's fastest run: on a machine whose load comes and goes,
        the runs nothing disturbed."""
        return f"fastest runs: {res[row][n]['min'] / res[over][n]['min']:.2f}×"

    if med("native", n_big) and med("floor", n_big):
        v = med("native", n_big) / med("floor", n_big)
        extra = ""
        if med("floor+data", n_big):
            extra = f"vs floor+data: {med('native', n_big) / med('floor+data', n_big):.2f}×"
        t.append(("native / floor", f"N={n_big}", v, "≤ 1.5", v <= 1.5, f"{v:.2f}×", extra))
    if med("native", n_big):
        mbps = sizes[n_big] / med("native", n_big) / 1e6
        t.append(("native throughput", f"N={n_big}", mbps, "≥ 200 MB/s", mbps >= 200, f"{mbps:.0f} MB/s", ""))
    if med("native", n_big) and med("floor-scan", n_big):
        v = med("native", n_big) / med("floor-scan", n_big)
        t.append(("native / scan + kubeconfig parse floor", f"N={n_big}", v, "≤ 1.5", v <= 1.5, f"{v:.2f}×",
                  fastest("native", "floor-scan", n_big)))
    peer_n = max((n for n in res.get("pyyaml", {}) if med("native", n)), default=None)
    if peer_n:
        v = med("pyyaml", peer_n) / med("native", peer_n)
        t.append(("Python + PyYAML peer / native", f"N={peer_n}", v, "≥ 20", v >= 20, f"{v:.1f}×", ""))
    if startup:
        v = startup["native"]["median"]
        t.append(("native start-up, empty ResourceList (median)", f"{startup['native']['runs']} runs", v, "≤ 2 ms",
                  v <= 0.002, fmt_s(v),
                  f"spawn baseline /bin/true {fmt_s(startup['true']['median'])}, floor {fmt_s(startup['floor']['median'])}; "
                  f"child CPU {fmt_s(startup['native']['cpu_median'])}"))
    if med("kpt-capi2argo", kpt_n) and med("kpt-cat", kpt_n):
        v = med("kpt-capi2argo", kpt_n) / med("kpt-cat", kpt_n) - 1
        extra = ""
        if med("kpt-replay", kpt_n):
            r = med("kpt-replay", kpt_n) / med("kpt-cat", kpt_n) - 1
            extra = f"replaying the function's output through kpt alone: {r * 100:+.0f}%"
        t.append(("kpt fn eval overhead vs identity (cat)", f"N={kpt_n}", v, "≤ 10%", v <= 0.10, f"{v * 100:+.0f}%", extra))
    if med("wasi", n_big) and med("native", n_big):
        v = med("wasi", n_big) / med("native", n_big)
        extra = fastest("wasi", "native", n_big)
        if med("npm", n_big):
            extra += f"; npm/native: {med('npm', n_big) / med('native', n_big):.2f}×"
        t.append(("WASI (wasmtime) / native", f"N={n_big}", v, "≤ 1.5", v <= 1.5, f"{v:.2f}×", extra))
    if res.get("native", {}).get(n_big):
        v = res["native"][n_big]["peak_rss_mb"] * 1024 * 1024 / sizes[n_big]
        t.append(("native peak RSS / input size", f"N={n_big}", v, "≤ 2", v <= 2, f"{v:.2f}×",
                  f"{res['native'][n_big]['peak_rss_mb']:.0f} MiB for {sizes[n_big] / 1e6:.1f} MB"))
    if n_mid < n_big and med("native", n_big) and med("native", n_mid):
        v = med("native", n_big) / med("native", n_mid)
        ok = v <= 1.25 * (n_big / n_mid)  # within 25% of proportional
        fl = ""
        if med("floor", n_big) and med("floor", n_mid):
            fl = f"floor: {med('floor', n_big) / med('floor', n_mid):.1f}×"
        t.append((f"time growth N={n_mid}→{n_big} (native)", "", v, f"≈ {n_big / n_mid:.0f}× (linear)", ok,
                  f"{v:.1f}×", fl))
    return t


IMAGES = {"function": "ghcr.io/capi2argo/capi2argo:v0.1.0", "argocd-cmp": "ghcr.io/capi2argo/argocd-cmp:v0.1.0"}


def measure_images(empty, runs):
    """Image sizes and `docker run -i --rm --network none` start-up on an empty ResourceList;
    None when no engine answers or the images are not built (`make image cmp-image`)."""
    docker = lambda *a: subprocess.run(["docker", *a], capture_output=True, text=True)
    if docker("version").returncode != 0:
        print("no container engine answers: the image rows are skipped", file=sys.stderr)
        return None
    out = {}
    for name, image in IMAGES.items():
        inspect = docker("image", "inspect", "--format", "{{.Size}}", image)
        if inspect.returncode != 0:
            print(f"{image} is not built: the image rows are skipped", file=sys.stderr)
            return None
        out[name] = {"image": image, "bytes": int(inspect.stdout.strip())}
    starts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(empty, "rb") as stdin:
            run = subprocess.run(["docker", "run", "-i", "--rm", "--network", "none", "--user", "nobody", IMAGES["function"]],
                                 stdin=stdin, capture_output=True)
        starts.append(time.perf_counter() - t0)
        assert run.returncode == 0, run.stderr
    out["startup"] = {"runs": runs, "median": statistics.median(starts), "min": min(starts), "max": max(starts)}
    return out


def markdown(meta, res, startup, sizes, items, targets, args, policy_latency=None, images=None):
    L = []
    L.append(f"# capi2argo benchmark — {meta['date']}")
    L.append("")
    m = meta["machine"]
    L.append(f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gb']} GB RAM, Linux {m['kernel']}; "
             f"{m['rustc']}, Node {m['node']}, kpt {m['kpt']}, wasmtime (PyPI) {m['wasmtime_py']}. "
             f"Median of {args.reps} interleaved runs (kpt rows: {args.kpt_reps}), min–max in brackets; "
             f"peak RSS from one extra untimed run under /usr/bin/time. Fleet seed {args.seed}; "
             f"measuring took {meta['duration_s']:.0f} s.")
    a = meta["artifacts_sha256"]
    L.append("")
    L.append("Artifacts (copied once at the start): " + "; ".join(
        f"{k} sha256 {v['sha256']}… ({v['bytes'] / 1024:.0f} KiB, built {v['mtime']})" for k, v in a.items()) + ".")
    L.append("")
    L.append("## Targets (issues 6 and 20)")
    L.append("")
    L.append("| target | value | goal | | notes |")
    L.append("|---|---|---|---|---|")
    for name, where, _v, goal, ok, shown, extra in targets:
        L.append(ratio_line(f"{name} {('(' + where + ')') if where else ''}".strip(), shown, goal, ok, extra))
    L.append("")
    L.append("## Time and memory against N")
    L.append("")
    L.append("N = kubeconfig Secrets in the fleet (plus a ConfigMap and a Deployment per 4 of them, and the Kptfile).")
    L.append("")
    L.append("| row | N | items | input | time, median [min–max] | process (median) | peak RSS | RSS / input |")
    L.append("|---|---:|---:|---:|---|---:|---:|---:|")
    for row in list(ROWS) + list(KPT_ROWS):
        for n in sorted(res.get(row, {})):
            s = res[row][n]
            proc = fmt_s(s["process_median"]) if row in ("wasi", "npm") else ""
            ratio = f"{s['peak_rss_mb'] * 1048576 / sizes[n]:.1f}×" if sizes[n] > 5_000_000 else ""
            L.append(f"| {row} | {n:,} | {items[n]:,} | {sizes[n] / 1e6:.2f} MB | {fmt_s(s['median'])} "
                     f"[{fmt_s(s['min'])}–{fmt_s(s['max'])}] | {proc} | {s['peak_rss_mb']:.0f} MiB | {ratio} |")
    if startup:
        L.append("")
        L.append("## Start-up: an empty ResourceList (`items: []`), interleaved")
        L.append("")
        L.append("Wall time from posix_spawn to reaped, seen from the Python driver; /bin/true shows what spawning alone costs here.")
        L.append("")
        L.append("| process | runs | wall median [min–max] | child CPU median |")
        L.append("|---|---:|---|---:|")
        for k, label in (("native", "target/release/capi2argo"), ("floor", "bench/floor"), ("true", "/bin/true (spawn baseline)")):
            s = startup[k]
            L.append(f"| {label} | {s['runs']} | {fmt_s(s['median'])} [{fmt_s(s['min'])}–{fmt_s(s['max'])}] | "
                     f"{fmt_s(s['cpu_median'])} |")
    if images:
        s_ = images["startup"]
        L.append("")
        L.append("## Container images")
        L.append("")
        L.append("| image | size | `docker run -i --rm --network none` on an empty ResourceList, median [min–max] |")
        L.append("|---|---:|---|")
        L.append(f"| {images['function']['image']} | {images['function']['bytes'] / 1e6:.2f} MB | "
                 f"{fmt_s(s_['median'])} [{fmt_s(s_['min'])}–{fmt_s(s_['max'])}] |")
        L.append(f"| {images['argocd-cmp']['image']} | {images['argocd-cmp']['bytes'] / 1e6:.2f} MB | |")
    if policy_latency:
        lat = sorted(policy_latency)
        L.append("")
        L.append("## Kubewarden policy: one admission request")
        L.append("")
        L.append(f"`dist/capi2argo-policy.wasm` under wasmtime (PyPI), compiled once and instantiated per request as a "
                 f"policy server does, validating the kubeadm provider's Argo CD Secret: "
                 f"{fmt_s(lat[len(lat) // 2])} per request, median of {len(lat)} runs of 50 "
                 f"[{fmt_s(lat[0])}–{fmt_s(lat[-1])}].")
    L.append("")
    L.append("## What each row measures")
    L.append("")
    for row, what in {**ROWS, **KPT_ROWS}.items():
        L.append(f"- **{row}**: {what}.")
    L.append("- Process rows: wall time from posix_spawn to reaped (the spawn itself costs about as much as /bin/true in the "
             "start-up table). Native and floor read the fleet file on stdin and write to /dev/null. Peak RSS: one extra, "
             "untimed run per row and N under `/usr/bin/time -f %M` (also the warm-up run).")
    L.append("- kpt rows: wall time of the whole `kpt fn eval` process on a fresh copy of the package (copy not timed); "
             "peak RSS is kpt's or its function's, whichever is larger.")
    L.append("- wasi: *process* adds Python start-up, `import wasmtime` and loading the precompiled module; its RSS is "
             "the Python process's. npm: *process* adds Node start-up, `require` (instantiation), reading the file and "
             "writing the output to /dev/null.")
    L.append("")
    L.append("Plot: `latest.svg` (time against N, log-log; N = 0 drawn at the left edge).")
    return "\n".join(L) + "\n"


def svg_plot(res, path):
    """A hand-written log-log line chart: time against N, one line per row."""
    W, H, ml, mr, mt, mb = 820, 520, 70, 190, 30, 55
    pw, ph = W - ml - mr, H - mt - mb
    colors = {"native": "#1f77b4", "floor": "#2ca02c", "floor+data": "#98df8a", "wasi": "#ff7f0e", "npm": "#d62728",
              "kpt-cat": "#7f7f7f", "kpt-replay": "#bcbd22", "kpt-capi2argo": "#9467bd"}
    import math
    xs_all = [n for row in res for n in res[row]]
    ys_all = [res[row][n]["median"] for row in res for n in res[row]] + \
             [res[row][n]["min"] for row in res for n in res[row]] + [res[row][n]["max"] for row in res for n in res[row]]
    xmax = max(xs_all + [10])
    x_lo, x_hi = 1.0, math.log10(xmax) + 0.15   # N = 0 drawn at log10 = 1 ("0")
    y_lo = math.floor(math.log10(max(min(ys_all), 1e-5)))
    y_hi = math.ceil(math.log10(max(ys_all)))
    if y_hi == y_lo:
        y_hi += 1

    def X(n):
        v = 1.0 if n == 0 else math.log10(n)
        v = max(v, 1.0)
        return ml + (v - x_lo) / (x_hi - x_lo) * pw

    def Y(t):
        return mt + ph - (math.log10(max(t, 10 ** y_lo)) - y_lo) / (y_hi - y_lo) * ph

    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{ml}" y="18" font-size="14" font-weight="bold">capi2argo: time against N (median, min–max bars; log-log)</text>']
    for e in range(y_lo, y_hi + 1):
        y = Y(10 ** e)
        o.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        label = {-6: "1 µs", -5: "10 µs", -4: "100 µs", -3: "1 ms", -2: "10 ms", -1: "100 ms", 0: "1 s",
                 1: "10 s", 2: "100 s", 3: "1000 s"}.get(e, f"1e{e} s")
        o.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    ticks = sorted(set(xs_all))
    for n in ticks:
        x = X(n)
        o.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{mt + ph + 18}" text-anchor="middle">{n:,}</text>')
    o.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    o.append(f'<text x="{ml + pw / 2}" y="{H - 12}" text-anchor="middle">N (kubeconfig Secrets in the fleet)</text>')
    o.append(f'<text transform="translate(16,{mt + ph / 2}) rotate(-90)" text-anchor="middle">time</text>')
    for i, row in enumerate(r for r in list(ROWS) + list(KPT_ROWS) if r in res):
        c = colors.get(row, "#000")
        pts = sorted(res[row].items())
        dash = ' stroke-dasharray="6,3"' if row.startswith("kpt-") or row.startswith("floor") else ""
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="' +
                 " ".join(f"{X(n):.1f},{Y(s['median']):.1f}" for n, s in pts) + '"/>')
        for n, s in pts:
            x = X(n)
            o.append(f'<line x1="{x:.1f}" y1="{Y(s["min"]):.1f}" x2="{x:.1f}" y2="{Y(s["max"]):.1f}" stroke="{c}"/>')
            o.append(f'<circle cx="{x:.1f}" cy="{Y(s["median"]):.1f}" r="3" fill="{c}"/>')
        ly = mt + 10 + i * 20
        o.append(f'<line x1="{ml + pw + 12}" y1="{ly}" x2="{ml + pw + 36}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/>')
        o.append(f'<text x="{ml + pw + 42}" y="{ly + 4}">{row}</text>')
    o.append("</svg>")
    path.write_text("\n".join(o) + "\n")


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description="capi2argo benchmark (bench/README.md)")
    ap.add_argument("--n", type=int, nargs="+", default=[0, 100, 1000, 3000, 10000])
    ap.add_argument("--peer-n", type=int, nargs="*", default=[1000, 3000],
                    help="N for the Python + PyYAML peer (slow: not at 10,000)")
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    ap.add_argument("--reps", type=int, default=7, help="runs per row and N (median, min, max)")
    ap.add_argument("--kpt-n", type=int, nargs="*", default=[100, 1000], help="N for the kpt rows (none: skip)")
    ap.add_argument("--kpt-reps", type=int, default=7)
    ap.add_argument("--startup-runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--work", type=Path, default=ROOT / "target" / "bench", help="fleets and scratch space")
    ap.add_argument("--results", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    if args.kpt_n and not shutil.which("kpt"):
        print("kpt not found: the kpt rows are skipped", file=sys.stderr)
        args.kpt_n = []
    check_artifacts(args.rows)
    paths = prepare(args)
    ns = sorted(set(args.n) | set(args.kpt_n))
    sizes = {n: paths["fleet"][n].stat().st_size for n in ns}
    items = {n: paths["fleet"][n].read_text().count("\n- ") for n in ns}  # every item starts a line with "- "
    started = time.time()

    # Interleaved: every repetition runs every row at every N, in a rotating row order.
    samples = {}
    plan = []
    for rep in range(max(args.reps, args.kpt_reps)):
        for n in args.n:
            if rep < args.reps:
                rows = args.rows[rep % len(args.rows):] + args.rows[:rep % len(args.rows)]
                plan += [(row, n) for row in rows if row != "pyyaml" or n in args.peer_n]
        for n in args.kpt_n:
            if rep < args.kpt_reps:
                krows = list(KPT_ROWS)
                krows = krows[rep % 3:] + krows[:rep % 3]
                plan += [(row, n) for row in krows]
    # First, untimed: one run per row and N under /usr/bin/time for the exact peak RSS (also a warm-up).
    rss_samples = {}
    for row, n in dict.fromkeys(plan):
        rss_samples.setdefault(row, {})[n] = measure(row, n, paths, rss_run=True)
        print(f"[rss] {row:14} N={n:<6} {rss_samples[row][n]['rss_kb'] / 1024:7.1f} MB", file=sys.stderr)
    for i, (row, n) in enumerate(plan):
        r = measure(row, n, paths)
        samples.setdefault(row, {}).setdefault(n, []).append(r)
        print(f"[{i + 1}/{len(plan)}] {row:14} N={n:<6} {fmt_s(r['time']):>9}", file=sys.stderr)

    # Start-up: native, the floor and /bin/true on an empty ResourceList, interleaved.
    startup_samples = {"native": [], "floor": [], "true": []}
    for _ in range(args.startup_runs):
        for k, argv in (("native", [str(paths["native"])]), ("floor", [str(FLOOR)]), ("true", ["/bin/true"])):
            r = spawn(argv, paths["empty"])
            r["time"] = r["wall"]
            r.pop("out")
            startup_samples[k].append(r)
    startup = {k: summarize(v) for k, v in startup_samples.items()} if args.startup_runs else None

    # The images: size, and start-up of `docker run` on an empty ResourceList (when an engine answers).
    images = measure_images(paths["empty"], runs=max(args.reps, 7))

    # The Kubewarden policy: per-request latency, one Secret, the module compiled once.
    sys.path.insert(0, str(ROOT / "tests" / "wasm"))
    import policy_wasmtime
    policy_latency = [policy_wasmtime.request_latency(runs=50) for _ in range(args.reps)]

    res = {row: {n: summarize(s, rss_samples[row][n]) for n, s in by_n.items()} for row, by_n in samples.items()}
    n_big = max(args.n)
    n_mid = max([n for n in args.n if 0 < n < n_big] or [n_big])
    kpt_n = 1000 if 1000 in args.kpt_n else (max(args.kpt_n) if args.kpt_n else None)
    targets = compute_targets(res, startup, sizes, n_big, n_mid, kpt_n)

    date = datetime.datetime.now(datetime.timezone.utc)
    meta = {"date": date.strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(), "seed": args.seed,
            "reps": args.reps, "kpt_reps": args.kpt_reps, "duration_s": round(time.time() - started, 1),
            "input_bytes": sizes, "items": items, "rows": {**ROWS, **KPT_ROWS},
            "artifacts_sha256": paths["artifacts"]}
    args.results.mkdir(parents=True, exist_ok=True)
    doc = {"meta": meta, "summary": res, "startup": startup,
           "targets": [{"name": t[0], "where": t[1], "value": t[2], "goal": t[3], "met": t[4], "notes": t[6]}
                       for t in targets],
           "samples": samples, "rss_samples": rss_samples, "startup_samples": startup_samples}
    stamp = date.strftime("%Y-%m-%dT%H%M%SZ")
    (args.results / f"{stamp}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    doc["policy_latency_s"] = policy_latency
    doc["images"] = images
    md = markdown(meta, res, startup, sizes, items, targets, args, policy_latency, images)
    (args.results / "latest.md").write_text(md)
    svg_plot(res, args.results / "latest.svg")
    print(md)
    print(f"wrote {args.results / (stamp + '.json')}, latest.md, latest.svg "
          f"(measuring took {meta['duration_s']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
