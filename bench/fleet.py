#!/usr/bin/env python3
"""Fleet generator for the benchmark: N realistic CAPI kubeconfig Secrets in a kpt package and
in the ResourceList `kpt fn eval` sends for that package.

    python3 bench/fleet.py --n 1000 --out target/bench            # -> fleet-1000.yaml, pkg-1000/
    python3 bench/fleet.py --n 0 100 1000 10000 --out target/bench

N counts kubeconfig Secrets (the ones the function converts). The fleet is:

- about 70 % of clusters Cluster API / KubeadmControlPlane: one `<c>-kubeconfig` Secret with an
  admin kubeconfig holding real-size CA, client certificate and client key (RSA-2048), exactly
  the shape of tests/fixtures/providers/kubeadm.yaml;
- about 15 % CAPA EKS: `<c>-kubeconfig` (presigned STS token, plus the `relative` and
  `token-file` keys CAPA writes) and `<c>-user-kubeconfig` (aws-iam-authenticator exec),
  as in tests/fixtures/providers/eks.yaml;
- about 15 % CAPG GKE: `<c>-kubeconfig` (OAuth access token) and `<c>-user-kubeconfig`
  (gke-gcloud-auth-plugin exec), as in tests/fixtures/providers/gke.yaml;
- unrelated resources: for every 4 kubeconfig Secrets, an application file with a ConfigMap
  and a Deployment (the function must copy them through untouched).

Secrets are printed as `kubectl get -o yaml` prints them (sorted keys, server fields), the
kubeconfigs as client-go's clientcmd writes them. Every cluster has a distinct name, namespace
mix and API server, so no two clusters collide.

Certificates: generating 10,000 RSA keys would take minutes and change nothing in what is
measured (only sizes and shapes matter), so a handful of real RSA-2048 CA + client cert/key sets
are made once with the `openssl` CLI, cached (default target/bench/certs) and reused across
clusters; names, servers, UIDs and tokens vary per cluster. Everything besides the key material
comes from a PRNG seeded by --seed, so the output is byte-for-byte deterministic given the seed
and the cached certificate sets.

The ResourceList is the package's items in kpt's reading order (the Kptfile, then files in
lexical path order, documents in file order) with the annotations kpt adds
(`config.kubernetes.io/index|path`, `internal.config.kubernetes.io/index|path|seqindent|id|
annotations-migration-resource-id`, `config.k8s.io/id`) at the end of `metadata`, and the empty
ConfigMap functionConfig kpt adds: byte-for-byte what kpt 1.0.0-beta.56 pipes to an exec function
for the package (checked with an exec that tees its input).
"""

import argparse
import base64
import random
import shutil
import string
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CERT_SETS = 4

OPENSSL_CNF = """\
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = placeholder
[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, digitalSignature, keyEncipherment, keyCertSign
subjectKeyIdentifier = hash
[ v3_client ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""


# --------------------------------------------------------------------------
# Certificates: a handful of real sets, made once and reused.
# --------------------------------------------------------------------------

def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_cert_set(directory: Path):
    """CA (10 years) and a system:masters client certificate (1 year) with PKCS#1 RSA-2048 keys,
    as kubeadm/KCP write them."""
    directory.mkdir(parents=True, exist_ok=True)
    cnf = directory / "openssl.cnf"
    cnf.write_text(OPENSSL_CNF)
    d = str(directory)
    openssl("genrsa", "-traditional", "-out", "ca.key", "2048", cwd=d)
    openssl("req", "-config", "openssl.cnf", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=kubernetes",
            "-days", "3650", "-extensions", "v3_ca", "-out", "ca.crt", cwd=d)
    openssl("genrsa", "-traditional", "-out", "client.key", "2048", cwd=d)
    openssl("req", "-config", "openssl.cnf", "-new", "-key", "client.key",
            "-subj", "/O=system:masters/CN=kubernetes-admin", "-out", "client.csr", cwd=d)
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "365", "-extfile", "openssl.cnf", "-extensions", "v3_client", "-out", "client.crt", cwd=d)
    (directory / "done").write_text("ok\n")


def cert_sets(cache: Path):
    sets = []
    for i in range(CERT_SETS):
        d = cache / f"set{i}"
        if not (d / "done").exists():
            if d.exists():
                shutil.rmtree(d)
            make_cert_set(d)
        sets.append({name: (d / f"{name}").read_text() for name in ("ca.crt", "client.crt", "client.key")})
    return sets


# --------------------------------------------------------------------------
# Seeded values
# --------------------------------------------------------------------------

class Rand:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def s(self, n, alphabet=string.ascii_letters + string.digits):
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def hex(self, n, upper=False):
        h = "".join(self.r.choice("0123456789abcdef") for _ in range(n))
        return h.upper() if upper else h

    def uid(self):
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def rv(self):
        return str(self.r.randrange(100000, 9999999))

    def ts(self, day, second):
        return f"2025-{1 + day // 28:02d}-{1 + day % 28:02d}T08:{second // 60 % 60:02d}:{second % 60:02d}Z"


def b64(text):
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def b64url_nopad(raw: bytes):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --------------------------------------------------------------------------
# Kubeconfigs (clientcmd.Write shape: sorted keys) and Secrets (kubectl -o yaml shape)
# --------------------------------------------------------------------------

def kubeconfig(cluster_name, cluster_lines, user_name, user_lines, context_name):
    c = "".join(f"    {l}\n" for l in cluster_lines)
    u = "".join(f"    {l}\n" for l in user_lines)
    return (
        "apiVersion: v1\nclusters:\n- cluster:\n" + c + f"  name: {cluster_name}\n"
        f"contexts:\n- context:\n    cluster: {cluster_name}\n    user: {user_name}\n  name: {context_name}\n"
        f"current-context: {context_name}\nkind: Config\npreferences: {{}}\n"
        f"users:\n- name: {user_name}\n  user:\n" + u
    )


def secret(rnd, name, namespace, cluster_label, data, owner, day, second, type_="cluster.x-k8s.io/secret"):
    data_lines = "".join(f"  {k}: {v}\n" for k, v in sorted(data.items()))
    api_version, kind, owner_name, owner_uid = owner
    return (
        f"apiVersion: v1\ndata:\n{data_lines}kind: Secret\nmetadata:\n"
        f"  creationTimestamp: \"{rnd.ts(day, second)}\"\n"
        f"  labels:\n    cluster.x-k8s.io/cluster-name: {cluster_label}\n"
        f"  name: {name}\n  namespace: {namespace}\n"
        f"  ownerReferences:\n  - apiVersion: {api_version}\n    blockOwnerDeletion: true\n    controller: true\n"
        f"    kind: {kind}\n    name: {owner_name}\n    uid: {owner_uid}\n"
        f"  resourceVersion: \"{rnd.rv()}\"\n  uid: {rnd.uid()}\ntype: {type_}\n"
    )


REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1"]
GCP_LOCATIONS = ["europe-west4", "europe-west1", "us-central1", "asia-east1"]
ENVS = ["prod", "staging", "dev", "edge", "perf"]
TEAMS = ["payments", "search", "data", "platform", "ml", "web", "iot", "retail"]
DOMAINS = ["example.net", "k8s.acme.io", "clusters.corp.example", "infra.example.org"]


def kcp_cluster(rnd, certs, c, ns, day):
    """One KubeadmControlPlane cluster: `<c>-kubeconfig` with the admin client certificate."""
    if rnd.r.random() < 0.3:
        server = f"https://10.{rnd.r.randrange(256)}.{rnd.r.randrange(256)}.{rnd.r.randrange(1, 255)}:6443"
    else:
        server = f"https://{c}-api.{rnd.r.choice(DOMAINS)}:6443"
    user = c + "-admin"
    kc = kubeconfig(c, [f"certificate-authority-data: {b64(certs['ca.crt'])}", f"server: {server}"],
                    user, [f"client-certificate-data: {b64(certs['client.crt'])}",
                           f"client-key-data: {b64(certs['client.key'])}"],
                    f"{user}@{c}")
    owner = ("controlplane.cluster.x-k8s.io/v1beta1", "KubeadmControlPlane", c + "-control-plane", rnd.uid())
    return [secret(rnd, c + "-kubeconfig", ns, c, {"value": b64(kc)}, owner, day, 25)]


def eks_token(rnd, region):
    day = "20250114"
    query = [
        ("Action", "GetCallerIdentity"),
        ("Version", "2011-06-15"),
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
        ("X-Amz-Credential", "ASIA%s%%2F%s%%2F%s%%2Fsts%%2Faws4_request"
         % (rnd.s(16, string.ascii_uppercase + "234567"), day, region)),
        ("X-Amz-Date", day + "T091244Z"),
        ("X-Amz-Expires", "60"),
        ("X-Amz-Security-Token", rnd.s(360, string.ascii_letters + string.digits + "%")),
        ("X-Amz-SignedHeaders", "host%3Bx-k8s-aws-id"),
        ("X-Amz-Signature", rnd.hex(64)),
    ]
    url = "https://sts.%s.amazonaws.com/?%s" % (region, "&".join("%s=%s" % kv for kv in query))
    return "k8s-aws-v1." + b64url_nopad(url.encode())


def eks_cluster(rnd, certs, c, ns, day):
    region = rnd.r.choice(REGIONS)
    cp = c + "-control-plane"
    eks = f"{ns}_{cp}"
    server = f"https://{rnd.hex(32, upper=True)}.gr7.{region}.eks.amazonaws.com"
    cluster = [f"certificate-authority-data: {b64(certs['ca.crt'])}", f"server: {server}"]
    admin = eks + "-capi-admin"
    token = eks_token(rnd, region)
    owner = ("controlplane.cluster.x-k8s.io/v1beta2", "AWSManagedControlPlane", cp, rnd.uid())
    value = kubeconfig(eks, cluster, admin, [f"token: {token}"], f"{admin}@{eks}")
    relative = kubeconfig(eks, cluster, admin, ["tokenFile: ./token-file"], f"{admin}@{eks}")
    user = eks + "-user"
    exec_lines = ["exec:", "  apiVersion: client.authentication.k8s.io/v1beta1", "  args:", "  - token",
                  "  - -i", f"  - {eks}", "  command: aws-iam-authenticator", "  env: null",
                  "  provideClusterInfo: false"]
    user_kc = kubeconfig(eks, cluster, user, exec_lines, f"{user}@{eks}")
    return [
        secret(rnd, c + "-kubeconfig", ns, c,
               {"value": b64(value), "relative": b64(relative), "token-file": b64(token)}, owner, day, 51),
        secret(rnd, c + "-user-kubeconfig", ns, c + "-user", {"value": b64(user_kc)}, owner, day, 103),
    ]


def gke_cluster(rnd, certs, c, ns, day):
    cp = c + "-control-plane"
    name = f"gke_acme-{rnd.r.choice(TEAMS)}_{rnd.r.choice(GCP_LOCATIONS)}_{cp}"
    server = f"https://34.{rnd.r.randrange(32, 160)}.{rnd.r.randrange(256)}.{rnd.r.randrange(1, 255)}"
    cluster = [f"certificate-authority-data: {b64(certs['ca.crt'])}", f"server: {server}"]
    owner = ("infrastructure.cluster.x-k8s.io/v1beta1", "GCPManagedControlPlane", cp, rnd.uid())
    token = "ya29.c." + rnd.s(250, string.ascii_letters + string.digits + "-_")
    value = kubeconfig(name, cluster, name, [f"token: {token}"], name)
    exec_lines = ["exec:", "  apiVersion: client.authentication.k8s.io/v1beta1", "  args: null",
                  "  command: gke-gcloud-auth-plugin", "  env: null",
                  "  installHint: Install gke-gcloud-auth-plugin for use with kubectl by following"
                  " https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke",
                  "  provideClusterInfo: true"]
    user_kc = kubeconfig(name, cluster, name, exec_lines, name)
    return [
        secret(rnd, c + "-kubeconfig", ns, c, {"value": b64(value)}, owner, day, 29),
        secret(rnd, c + "-user-kubeconfig", ns, c + "-user", {"value": b64(user_kc)}, owner, day, 80),
    ]


def app_file(rnd, app, ns):
    """Unrelated resources: an application's ConfigMap and Deployment, as a person writes them."""
    replicas = rnd.r.choice([1, 2, 3, 5])
    port = rnd.r.choice([8080, 8443, 9090, 3000])
    cm = (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}-config\n  namespace: {ns}\n"
        f"  labels:\n    app.kubernetes.io/name: {app}\n    app.kubernetes.io/part-of: fleet-apps\n"
        f"data:\n  LOG_LEVEL: {rnd.r.choice(['info', 'debug', 'warn'])}\n"
        f"  FEATURE_FLAGS: \"{rnd.s(8).lower()},{rnd.s(6).lower()}\"\n"
        f"  settings.yaml: |\n    server:\n      port: {port}\n      timeout: {rnd.r.randrange(5, 60)}s\n"
        f"    cache:\n      size: {rnd.r.randrange(64, 1024)}Mi\n      ttl: {rnd.r.randrange(1, 24)}h\n"
        f"    upstreams: [{app}-db, {app}-cache]  # flow list, kept as written\n"
    )
    dep = (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {app}\n  namespace: {ns}\n"
        f"  labels:\n    app.kubernetes.io/name: {app}\n    app.kubernetes.io/version: \"1.{rnd.r.randrange(30)}.{rnd.r.randrange(10)}\"\n"
        f"spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {app}\n"
        f"  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: {app}\n"
        f"    spec:\n      containers:\n      - name: {app}\n"
        f"        image: registry.example.com/{ns}/{app}:1.{rnd.r.randrange(30)}.{rnd.r.randrange(10)}\n"
        f"        args: [\"--config=/etc/{app}/settings.yaml\", \"--port={port}\"]\n"
        f"        ports:\n        - containerPort: {port}\n          name: http\n"
        f"        envFrom:\n        - configMapRef:\n            name: {app}-config\n"
        f"        resources:\n          requests:\n            cpu: {rnd.r.choice([50, 100, 250])}m\n"
        f"            memory: {rnd.r.choice([64, 128, 256])}Mi\n          limits:\n            memory: {rnd.r.choice([256, 512])}Mi\n"
        f"        readinessProbe:\n          httpGet:\n            path: /healthz\n            port: http\n"
        f"          periodSeconds: 10\n        volumeMounts:\n        - name: config\n          mountPath: /etc/{app}\n"
        f"      volumes:\n      - name: config\n        configMap:\n          name: {app}-config\n"
    )
    return [cm, dep]


KPTFILE = """\
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: fleet
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: Benchmark fleet (bench/fleet.py)
"""


def fleet_files(n, seed, certs):
    """{relative path: [documents]} for a fleet with n kubeconfig Secrets."""
    rnd = Rand(seed)
    files = {}
    secrets = 0
    index = 0
    while secrets < n:
        pick = rnd.r.random()
        kind = "kcp" if pick < 0.70 or n - secrets < 2 else ("eks" if pick < 0.85 else "gke")
        env, team = rnd.r.choice(ENVS), rnd.r.choice(TEAMS)
        ns = f"fleet-{team}-{env}"
        c = f"{team}-{env}-{kind}-{index:05d}"
        day = rnd.r.randrange(300)
        certset = certs[rnd.r.randrange(len(certs))]
        docs = {"kcp": kcp_cluster, "eks": eks_cluster, "gke": gke_cluster}[kind](rnd, certset, c, ns, day)
        files[f"clusters/{ns}/{c}.yaml"] = docs
        for _ in docs:
            if secrets % 4 == 3:
                files[f"apps/{ns}/app-{secrets:05d}.yaml"] = app_file(rnd, f"{team}-app-{secrets:05d}", ns)
            secrets += 1
        index += 1
    return files


def kpt_item(doc, path, index, ident):
    """One resource as a ResourceList item, exactly as kpt 1.0 sends it (checked against
    `kpt fn eval --exec` on the generated package): kpt's annotations are appended at the end of
    `metadata.annotations`, which kpt adds as the last field of `metadata` when missing."""
    lines = doc.rstrip("\n").split("\n")
    annotations = [
        f"config.kubernetes.io/index: '{index}'",
        f"config.kubernetes.io/path: '{path}'",
        f"internal.config.kubernetes.io/index: '{index}'",
        f"internal.config.kubernetes.io/path: '{path}'",
        "internal.config.kubernetes.io/seqindent: 'compact'",
        f"internal.config.kubernetes.io/annotations-migration-resource-id: '{ident - 1}'",
        f"internal.config.kubernetes.io/id: '{ident}'",
        f"config.k8s.io/id: '{ident}'",
    ]
    start = lines.index("metadata:") + 1
    end = start
    while end < len(lines) and (lines[end].startswith("  ")):
        end += 1
    meta = lines[start:end]
    if "  annotations:" in meta:
        a = meta.index("  annotations:") + 1
        while a < len(meta) and meta[a].startswith("    "):
            a += 1
        meta[a:a] = ["    " + x for x in annotations]
    else:
        meta += ["  annotations:"] + ["    " + x for x in annotations]
    out = lines[:start] + meta + lines[end:]
    body = "\n".join(("  " + l) if l else l for l in out)
    return "- " + body[2:] + "\n"


# What `kpt fn eval PKG --exec FN` sends as functionConfig when no `-- k=v` is given.
KPT_FUNCTION_CONFIG = "functionConfig:\n  metadata:\n    name: function-input\n  data: {}\n  kind: ConfigMap\n  apiVersion: v1\n"


def write_fleet(n, seed, out: Path, certs, package=True):
    files = {"Kptfile": [KPTFILE]}
    files.update(fleet_files(n, seed, certs))
    order = ["Kptfile"] + sorted(p for p in files if p != "Kptfile")
    items, ident = [], 0
    for path in order:
        for index, doc in enumerate(files[path]):
            ident += 1
            items.append(kpt_item(doc, path, index, ident))
    rl = out / f"fleet-{n}.yaml"
    rl.write_text("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + "".join(items) + KPT_FUNCTION_CONFIG)
    if package:
        pkg = out / f"pkg-{n}"
        if pkg.exists():
            shutil.rmtree(pkg)
        for path in order:
            f = pkg / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("---\n".join(files[path]))
    kubeconfigs = sum(1 for p, docs in files.items() if p.startswith("clusters/") for _ in docs)
    return rl, kubeconfigs, ident


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[0, 100, 1000, 10000])
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "bench")
    ap.add_argument("--certs", type=Path, default=None, help="certificate cache (default OUT/certs)")
    ap.add_argument("--no-package", action="store_true", help="write only the ResourceList")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    certs = cert_sets(args.certs or args.out / "certs")
    for n in args.n:
        rl, secrets, items = write_fleet(n, args.seed, args.out, certs, package=not args.no_package)
        print(f"{rl}: {secrets} kubeconfig Secrets, {items} items, {rl.stat().st_size / 1e6:.1f} MB",
              file=sys.stderr)


if __name__ == "__main__":
    main()
