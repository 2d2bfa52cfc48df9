#!/usr/bin/env python3
"""The controller's benchmark: capi2argo-controller over the benchmark's fleet (bench/fleet.py,
N kubeconfig Secrets) served by the API stand-in (tests/kube/apiserver.py), measured by hand,
never asserted by a test.

    python3 bench/controller.py                 # N = 3000; `make controller` and the fleet first
    python3 bench/controller.py --n 1000 3000

For each N, three runs, each its own process, its peak RSS read from the kernel (wait4):

- `--once` over a fleet with no Argo CD Secret yet: lists every Secret, plans, creates N Argo CD
  Secrets (the first sync);
- `--once` again over the synced fleet: lists, plans, writes nothing;
- the controller left running over the synced fleet: its watches list, it plans once, and it is
  read after it has been idle for a few seconds (its resident set with the caches full).

The stand-in is Python and answers a request in milliseconds, so the times say more about it
than about the controller; the peak RSS is the controller's own whatever the server. Results:
bench/results/controller.md (and printed).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target/x86_64-unknown-linux-musl/controller/capi2argo-controller"


def fleet_secrets(n):
    """The kubeconfig Secrets of the benchmark's fleet of `n`, as JSON objects (PyYAML, from the
    tools' venv, with libyaml's loader)."""
    import yaml

    path = ROOT / "target/bench" / f"fleet-{n}.yaml"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "bench/fleet.py"), "--n", str(n), "--no-package"], check=True)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    doc = yaml.load(path.read_text(), Loader=loader)
    return [o for o in doc["items"] if o.get("kind") == "Secret"]


def standin(objects, directory):
    store, log, port = (Path(directory) / f for f in ("store.json", "log.jsonl", "port"))
    store.write_text(json.dumps(objects))
    log.write_text("")
    process = subprocess.Popen([sys.executable, str(ROOT / "tests/kube/apiserver.py"), str(store), str(log), str(port)])
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
    return process, kubeconfig, log


def run_once(kubeconfig):
    started = time.monotonic()
    process = subprocess.Popen(
        [str(BINARY), "--kubeconfig", str(kubeconfig), "--once", "--argo-namespace=argocd"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.monotonic() - started
    stderr = process.stderr.read().decode()
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), stderr.strip().splitlines()[-1:]


def writes(log):
    return sum(1 for line in log.read_text().splitlines() if json.loads(line)["method"] in ("POST", "PUT", "DELETE")
               and "/secrets" in json.loads(line)["path"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[3000])
    args = ap.parse_args()
    if not BINARY.exists():
        sys.exit(f"{BINARY} is missing: make controller")
    rows = []
    for n in args.n:
        secrets = fleet_secrets(n)
        with tempfile.TemporaryDirectory(prefix="capi2argo-controller-bench-") as directory:
            process, kubeconfig, log = standin(secrets, directory)
            try:
                first = run_once(kubeconfig)
                made = writes(log)
                again = run_once(kubeconfig)
                after = writes(log)
                controller = subprocess.Popen(
                    [str(BINARY), "--kubeconfig", str(kubeconfig), "--argo-namespace=argocd",
                     "--metrics-bind-address=0", "--health-probe-bind-address=0"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(5 + n / 500)
                status = Path(f"/proc/{controller.pid}/status").read_text()
                hwm = next(int(l.split()[1]) for l in status.splitlines() if l.startswith("VmHWM")) / 1024
                controller.send_signal(signal.SIGTERM)
                controller.wait(40)
            finally:
                process.kill()
                process.wait()
        rows.append((n, len(secrets), first, made, again, after - made, hwm))
    lines = [
        "# capi2argo-controller against the API stand-in",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `python3 bench/controller.py --n {' '.join(map(str, args.n))}`;"
        " times are dominated by the Python stand-in; peak RSS is the controller's own.",
        "",
        "| N | kubeconfig Secrets | first sync (`--once`) | creates | peak RSS | synced (`--once`) | writes | peak RSS | running, idle, caches full: peak RSS |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, count, first, made, again, more, hwm in rows:
        lines.append(
            f"| {n:,} | {count:,} | {first[0]:.1f} s (exit {first[2]}) | {made:,} | {first[1]:.0f} MiB"
            f" | {again[0]:.1f} s (exit {again[2]}) | {more} | {again[1]:.0f} MiB | {hwm:.0f} MiB |"
        )
    text = "\n".join(lines) + "\n"
    (ROOT / "bench/results").mkdir(exist_ok=True)
    (ROOT / "bench/results/controller.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
