#!/usr/bin/env python3
"""Write the input side of every golden case under tests/golden/<case>/.

Each case directory holds what goes in (`input.yaml`, and `args` with one
command-line argument per line when the case needs any) and what must come out
(`expected/output.yaml`, `expected/stderr.txt`, `expected/exit-code`). This
script writes only the inputs; the expectations are the function's own output,
written with `UPDATE_GOLDEN=1 cargo test --test golden` and then read and
checked by a person before they are committed.

Provider cases wrap tests/fixtures/providers/*.yaml into a ResourceList shaped
exactly as `kpt fn eval` sends it (path/index/id annotations on every item).
The other cases are small hand-written inputs, each about one rule.

Usage: python3 tests/golden/build.py
"""

import base64
import json
import re
import textwrap
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROVIDERS = HERE.parent / "fixtures" / "providers"


def split_docs(text):
    docs = re.split(r"^---\n", text, flags=re.M)
    return [d for d in docs if d.strip() and not all(l.startswith("#") for l in d.strip().splitlines())]


def kpt_item(doc, path, index, ident):
    """Indent one resource as a ResourceList item with the annotations kpt adds."""
    lines = [l for l in doc.rstrip("\n").split("\n") if not l.startswith("#")]
    out = []
    annotations = [
        f"config.kubernetes.io/index: '{index}'",
        f"config.kubernetes.io/path: '{path}'",
        f"internal.config.kubernetes.io/index: '{index}'",
        f"internal.config.kubernetes.io/path: '{path}'",
        "internal.config.kubernetes.io/seqindent: 'compact'",
        f"internal.config.kubernetes.io/id: '{ident}'",
        f"config.k8s.io/id: '{ident}'",
    ]
    has_annotations = "  annotations:" in lines
    for line in lines:
        out.append(line)
        if line == ("  annotations:" if has_annotations else "metadata:"):
            if not has_annotations:
                out.append("  annotations:")
            out.extend("    " + a for a in annotations)
    body = "\n".join(("  " + l) if l else l for l in out)
    return "- " + body[2:] + "\n"


def resource_list(items, function_config=None):
    text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + "".join(items)
    if function_config:
        text += "functionConfig:\n" + textwrap.indent(function_config, "  ")
    return text


def kpt_package(files, function_config=None):
    """Items for a package: {path: multi-doc text}; each document gets kpt's annotations."""
    items, ident = [], 0
    for path, text in files.items():
        for index, doc in enumerate(split_docs(text)):
            ident += 1
            items.append(kpt_item(doc, path, index, ident))
    return resource_list(items, function_config)


def config_map(**data):
    lines = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in data.items())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n{lines}"


def kubeconfig(server=None, user="token: fake-token-value", cluster_extra="", name="c", more=""):
    """A small kubeconfig; token auth keeps hand-written cases readable. Each cluster has a
    server of its own (two of one server are a collision)."""
    cluster = f"server: {server or f'https://{name}.example:6443'}\n" + cluster_extra
    return (
        "apiVersion: v1\nkind: Config\nclusters:\n"
        f"- name: {name}\n  cluster:\n{textwrap.indent(cluster, '    ')}"
        f"users:\n- name: {name}-admin\n  user:\n{textwrap.indent(user.rstrip() + chr(10), '    ')}"
        f"contexts:\n- name: {name}-admin@{name}\n  context:\n    cluster: {name}\n    user: {name}-admin\n"
        f"current-context: {name}-admin@{name}\n" + more
    )


def secret(name, namespace, cluster_label, value=None, string_value=None, extra_labels="", type_line="type: cluster.x-k8s.io/secret\n", extra=""):
    doc = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  labels:\n    cluster.x-k8s.io/cluster-name: {cluster_label}\n{extra_labels}"
    doc += type_line
    if value is not None:
        doc += f"data:\n  value: {value}\n"
    if string_value is not None:
        doc += "stringData:\n  value: |\n" + textwrap.indent(string_value, "    ")
    return doc + extra


def b64(text):
    return base64.b64encode(text.encode()).decode()


def argo_secret(name, source, source_ns, owned=True, annotations="", server="https://old.example:6443", cluster="old", config=None):
    labels = "    argocd.argoproj.io/secret-type: cluster\n"
    if owned:
        labels += f'    capi-to-argocd/owned: "true"\n    capi-to-argocd/cluster-secret-name: {source}\n    capi-to-argocd/cluster-namespace: {source_ns}\n'
    text = (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n{annotations}  labels:\n{labels}"
        f"type: Opaque\nstringData:\n  name: {cluster}\n  server: {server}\n"
    )
    if config is not None:
        text += "  config: |-\n" + textwrap.indent(json.dumps(config, indent=2), "    ") + "\n"
    return text


def write(case, input_text, args=(), now=None):
    """A case: its input, its arguments, and the time it runs at when not tests/golden/now."""
    d = HERE / case
    d.mkdir(exist_ok=True)
    (d / "input.yaml").write_text(input_text)
    for name, content in (("args", "".join(a + "\n" for a in args)), ("now", f"{now}\n" if now else "")):
        path = d / name
        if content:
            path.write_text(content)
        elif path.exists():
            path.unlink()


def provider_cases():
    for f in sorted(PROVIDERS.glob("*.yaml")):
        write(f"provider-{f.stem}", kpt_package({f"capi/{f.name}": f.read_text()}))


def rule_cases():
    ok = lambda ns, c, **kw: secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"), **kw)

    write("namespaced-names", kpt_package(
        {"a.yaml": ok("team-a", "prod"), "b.yaml": ok("team-b", "prod")},
        config_map(namespacedNames="true"),
    ))
    write("name-collision", kpt_package(
        {"a.yaml": ok("team-a", "prod"), "b.yaml": ok("team-b", "prod"), "c.yaml": ok("team-c", "other")},
    ))
    write("allowed-namespaces", kpt_package(
        {"a.yaml": ok("team-a", "a1"), "b.yaml": ok("team-b", "b1"), "c.yaml": ok("team-c", "c1")},
        config_map(allowedNamespaces="team-a, team-c"),
    ))
    write("typed-config", kpt_package(
        {"a.yaml": ok("team-a", "a1")},
        "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: fleet\nspec:\n  argoNamespace: gitops\n  dataField: data\n  namespacedNames: true\n",
    ))
    write("pull-mode", kpt_package(
        {"eks.yaml": (PROVIDERS / "eks.yaml").read_text(), "insecure.yaml": (PROVIDERS / "insecure.yaml").read_text()},
        config_map(mode="pull"),
    ))
    write("prune-owned", kpt_package({
        "capi.yaml": ok("team-a", "live") + "---\n" + secret("broken-kubeconfig", "team-a", "broken", value="'%%%'"),
        "argocd.yaml": "---\n".join([
            argo_secret("cluster-live", "live-kubeconfig", "team-a", cluster="live"),
            argo_secret("cluster-gone", "gone-kubeconfig", "team-a"),
            argo_secret("cluster-broken", "broken-kubeconfig", "team-a"),
            argo_secret("hand-made", "", "", owned=False),
        ]),
    }))
    write("prune-disabled", kpt_package(
        {"argocd.yaml": argo_secret("cluster-gone", "gone-kubeconfig", "team-a")},
        config_map(prune="false"),
    ))
    write("unowned-conflict", kpt_package({
        "capi.yaml": ok("team-a", "prod"),
        "argocd.yaml": argo_secret("cluster-prod", "", "", owned=False),
    }))
    write("strict-false", kpt_package(
        {"capi.yaml": ok("team-a", "good") + "---\n" + secret("bad-kubeconfig", "team-a", "bad", string_value=kubeconfig(name="bad", user="client-key: /home/me/.kube/key.pem\nclient-certificate: /home/me/.kube/cert.pem"))},
        config_map(strict="false"),
    ))
    write("config-unknown-key", kpt_package({"capi.yaml": ok("team-a", "prod")}, config_map(namespaceNames="true")))
    write("config-bad-value", kpt_package({"capi.yaml": ok("team-a", "prod")}, config_map(mode="fetch")))

    two_contexts = (
        "apiVersion: v1\nkind: Config\nclusters:\n- {name: blue, cluster: {server: 'https://blue.example:6443'}}\n- {name: green, cluster: {server: 'https://green.example:6443'}}\n"
        "users:\n- {name: admin, user: {token: t0k3n}}\n"
        "contexts:\n- {name: blue, context: {cluster: blue, user: admin}}\n- {name: green, context: {cluster: green, user: admin}}\n"
    )
    broken = [
        secret("file-refs-kubeconfig", "team-x", "file-refs", string_value=kubeconfig(name="file-refs", cluster_extra="certificate-authority: /etc/kubernetes/pki/ca.crt\n", user="client-certificate: /home/me/cert.pem\nclient-key: /home/me/key.pem")),
        secret("auth-provider-kubeconfig", "team-x", "auth-provider", string_value=kubeconfig(name="auth-provider", user="auth-provider:\n  name: oidc\n  config:\n    id-token: do-not-print-me")),
        secret("impersonate-kubeconfig", "team-x", "impersonate", string_value=kubeconfig(name="impersonate", user="token: abc\nas: system:serviceaccount:x:y")),
        secret("bad-base64-kubeconfig", "team-x", "bad-base64", value="not*base64"),
        secret("no-value-kubeconfig", "team-x", "no-value"),
        secret("not-yaml-kubeconfig", "team-x", "not-yaml", value=b64("clusters: [unclosed\n")),
        secret("not-config-kubeconfig", "team-x", "not-config", string_value="apiVersion: v1\nkind: Pod\n"),
        secret("two-contexts-kubeconfig", "team-x", "two-contexts", string_value=two_contexts),
        secret("data-not-map-kubeconfig", "team-x", "data-not-map", extra="data: [value]\n"),
        secret("wrong-types-kubeconfig", "team-x", "wrong-types", string_value=kubeconfig(name="wrong-types", cluster_extra="insecure-skip-tls-verify: \"yes\"\n", user="token: [a, b]")),
        ok("team-x", "still-works"),
    ]
    write("kubeconfig-errors", kpt_package({"capi.yaml": "---\n".join(broken)}))
    write("context-option", kpt_package(
        {"capi.yaml": secret("multi-kubeconfig", "team-a", "multi", string_value=two_contexts)},
        config_map(context="green"),
    ))
    execs = [
        secret("devicecode-kubeconfig-user", "azure", "devicecode", type_line="", string_value=kubeconfig(name="devicecode", user="exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: kubelogin\n  args: [get-token, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630, --tenant-id, 72f988bf-0000-0000-0000-2d7cd011db47]")),
        secret("vault-kubeconfig", "onprem", "vault", string_value=kubeconfig(name="vault", user="exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: /usr/local/bin/vault-k8s-login\n  args: [--role, capi-admin]\n  env:\n  - name: VAULT_ADDR\n    value: https://vault.example:8200\n  installHint: install vault-k8s-login\n  provideClusterInfo: true")),
        secret("outposts-user-kubeconfig", "aws", "outposts-user", string_value=kubeconfig(name="outposts", user="exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: aws\n  args: [eks, get-token, --cluster-id, 0123abcd]")),
        secret("outposts-kubeconfig", "aws", "outposts", string_value=kubeconfig(name="outposts", user="token: k8s-aws-v1.short-lived")),
    ]
    write("exec-plugins", kpt_package({"capi.yaml": "---\n".join(execs)}))

    untouched = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: scripts # keep this comment
          annotations:
            note: "double \\"quoted\\""
        data:
          run.sh: |
            #!/bin/sh
            echo "hello"   # trailing comment inside a block scalar

          folded: >
            folded text
            over lines
          flow: [a, b, {c: d}]
          single: 'it''s'
          empty: ""
          number: "0755"
        ---
        # a comment before a document
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, labels: {app: web}}
        spec:
          replicas: 2
          template:
            spec:
              containers:
                - name: web
                  image: "nginx:1.27"
                  args: ["--port", "8080"]
        """)
    write("untouched-items", kpt_package({"app.yaml": untouched, "capi.yaml": ok("team-a", "prod")}))

    long_cluster = "c" * 63
    write("long-names", kpt_package(
        {"capi.yaml": ok("a-very-long-namespace-name-for-a-platform-team-with-many-clusters", long_cluster) + "---\n" + ok("team-a", "Prod_EU")},
        config_map(namespacedNames="true"),
    ))

    existing_annotations = (
        "  annotations:\n"
        "    config.kubernetes.io/index: '0'\n"
        "    config.kubernetes.io/path: 'argocd/cluster-prod.yaml'\n"
        "    internal.config.kubernetes.io/path: 'argocd/cluster-prod.yaml'\n"
        "    internal.config.kubernetes.io/id: '9'\n"
        "    config.k8s.io/id: '9'\n"
        "    stale-note: dropped-on-regeneration\n"
    )
    write("replace-owned", resource_list([
        kpt_item(ok("team-a", "prod"), "capi.yaml", 0, 1),
        "- " + textwrap.indent(argo_secret("cluster-prod", "prod-kubeconfig", "team-a", annotations=existing_annotations, cluster="prod"), "  ")[2:],
    ]))

    kubectl_list = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": [],
    }
    for doc in split_docs((PROVIDERS / "k3s.yaml").read_text())[:2]:
        kubectl_list["items"].append(doc)
    list_yaml = "apiVersion: v1\nitems:\n" + "".join(
        "- " + textwrap.indent("\n".join(l for l in d.strip().split("\n") if not l.startswith("#")), "  ")[2:]
        .replace("  metadata:\n", "  metadata:\n    managedFields:\n    - apiVersion: v1\n      fieldsType: FieldsV1\n      manager: manager\n      operation: Update\n", 1) + "\n"
        for d in kubectl_list["items"]
    ) + "kind: List\nmetadata:\n  resourceVersion: \"\"\n"
    write("kubectl-list", list_yaml)
    write("yaml-stream", ok("team-a", "one") + "---\n" + ok("team-b", "one") + "---\n" + argo_secret("cluster-team-a-stale", "stale-kubeconfig", "team-a"), args=["--set", "namespacedNames=true"])

    json_rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [{
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "j-kubeconfig", "namespace": "json", "labels": {"cluster.x-k8s.io/cluster-name": "j"}},
            "type": "cluster.x-k8s.io/secret",
            "data": {"value": b64(kubeconfig(name="j", server="https://j.example:6443/"))},
        }, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}, "data": {"n": "1"}}],
    }
    write("json-resource-list", json.dumps(json_rl, indent=2) + "\n")
    json_list = dict(json_rl, apiVersion="v1", kind="List", metadata={"resourceVersion": ""})
    write("kubectl-json-list", json.dumps(json_list, indent=4) + "\n")
    write("invalid-yaml", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {unclosed: [\n")
    write("non-object-items", resource_list(["- 42\n", "- [a, b]\n", "- " + textwrap.indent(ok("team-a", "prod"), "  ")[2:]]))
    write("empty-resource-list", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n")
    write("empty-input", "")


def capi_cluster(name, namespace, labels="", annotations="", spec=""):
    meta = f"apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
    if labels:
        meta += "  labels:\n" + textwrap.indent(labels, "    ")
    if annotations:
        meta += "  annotations:\n" + textwrap.indent(annotations, "    ")
    return meta + ("spec:\n" + textwrap.indent(spec, "  ") if spec else "")


def fleet_cases():
    ok = lambda ns, c, labels="": secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"), extra_labels=labels)
    topology = lambda version, infra: f"topology:\n  class: standard\n  version: {version}\ninfrastructureRef:\n  apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\n  kind: {infra}\n  name: x\n"

    write("cluster-take-along", kpt_package({
        "clusters.yaml": "---\n".join([
            capi_cluster("payments", "team-a",
                labels="team: payments\ncost-center: \"4711\"\ntake-along-label.capi-to-argocd.team: \"\"\ntake-along-label.capi-to-argocd.region: \"\"\n",
                annotations="owner: alice@example.com\ntake-along-annotation.capi-to-argocd.owner: \"\"\n",
                spec=topology("v1.31.2", "AWSCluster")),
            ok("team-a", "payments"),
        ]),
    }))
    write("cluster-ignore", kpt_package({
        "clusters.yaml": "---\n".join([
            capi_cluster("legacy", "team-a", labels="ignore-cluster.capi-to-argocd: \"\"\n"),
            ok("team-a", "legacy"),
            ok("team-a", "kept"),
        ]),
        "argocd.yaml": argo_secret("cluster-legacy", "legacy-kubeconfig", "team-a"),
    }))
    write("cluster-copy-metadata", kpt_package(
        {"clusters.yaml": "---\n".join([
            capi_cluster("edge", "retail",
                labels="env: prod\ncluster.x-k8s.io/cluster-name: edge\ntopology.cluster.x-k8s.io/owned: \"\"\nkubernetes.io/os: linux\n",
                annotations="kubectl.kubernetes.io/last-applied-configuration: \"{}\"\nnote: copied\n",
                spec="controlPlaneRef:\n  apiVersion: controlplane.cluster.x-k8s.io/v1beta2\n  kind: KubeadmControlPlane\n  name: edge-control-plane\ninfrastructureRef:\n  kind: Metal3Cluster\n  name: edge\n"),
            "apiVersion: controlplane.cluster.x-k8s.io/v1beta2\nkind: KubeadmControlPlane\nmetadata:\n  name: edge-control-plane\n  namespace: retail\nspec:\n  version: v1.30.4\n  replicas: 3\n",
            ok("retail", "edge"),
        ])},
        config_map(copyClusterLabels="true", copyClusterAnnotations="true"),
    ))
    inventory = textwrap.dedent("""\
        apiVersion: fn.capi2argo.dev/v1alpha1
        kind: Capi2Argo
        metadata:
          name: fleet
        spec:
          project: default-project
          labels:
            managed-by: capi2argo
            tier: bronze
          shards: 3
          inventory:
          - label: environment
            values:
              prod: {labels: {tier: gold}, project: production, namespaces: [payments, web], clusterResources: true}
              staging: {labels: {tier: silver}, project: staging}
              prd: {labels: {tier: typo}}
          - label: customer
            values:
              acme: {labels: {tier: platinum, customer: acme}, annotations: {contact: ops@acme.example}}
          - infrastructure: true
            values:
              AWSCluster: {labels: {cloud: aws}}
              AzureCluster: {labels: {cloud: azure}, project: azure-only}
        """)
    write("inventory-layers", kpt_package({
        "fleet.yaml": "---\n".join([
            capi_cluster("eu-1", "fleet", labels="environment: prod\ncustomer: acme\n", spec=topology("v1.31.2", "AWSCluster")),
            ok("fleet", "eu-1"),
            capi_cluster("us-1", "fleet", labels="environment: staging\ntier: from-cluster\ntake-along-label.capi-to-argocd.tier: \"\"\n", spec=topology("v1.30.6", "AzureCluster")),
            ok("fleet", "us-1"),
            # No Cluster object: the layer label is read from the kubeconfig Secret.
            ok("fleet", "lab-1", labels="    environment: prod\n"),
        ]),
    }, inventory))
    write("argo-fields-configmap", kpt_package(
        {"capi.yaml": ok("team-a", "one") + "---\n" + ok("team-a", "two")},
        config_map(project="platform", namespaces="kube-system, monitoring", clusterResources="true",
                   labels="team=platform", annotations="example.com/owner=platform-team", shards="4"),
    ))
    write("config-protected-label", kpt_package(
        {"capi.yaml": ok("team-a", "one")},
        config_map(labels="team=platform,argocd.argoproj.io/secret-type=hijack"),
    ))
    # A kustomize generator sees only its config: the Secrets come inline, and only Argo CD Secrets go out.
    def list_entry(doc, indent):
        lines = doc.rstrip("\n").split("\n")
        return " " * indent + "- " + lines[0] + "\n" + "".join(" " * (indent + 2) + l + "\n" if l else "\n" for l in lines[1:])
    generator = "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: gen\n  annotations:\n    config.kubernetes.io/local-config: 'true'\nspec:\n  resources:\n" + list_entry(ok("team-a", "inline"), 2)
    write("config-inline-resources", resource_list([list_entry(generator, 0)], generator))
    write("inventory-bad-entry", kpt_package(
        {"capi.yaml": ok("team-a", "one")},
        "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: fleet\nspec:\n  inventory:\n  - label: environment\n    values:\n      prod: {labels: {tier: gold}, projct: x}\n",
    ))


def hostile_cases():
    """Broken and hostile input: a clear error naming resource and field, and nothing lost."""
    ok = lambda ns, c: secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"))
    good_value = lambda c: b64(kubeconfig(name=c))
    wrong_types = [
        "apiVersion: v1\nkind: Secret\nmetadata: null\ndata:\n  value: x\n",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: labels-list-kubeconfig\n  namespace: h\n  labels: [cluster.x-k8s.io/cluster-name]\n",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: label-number-kubeconfig\n  namespace: h\n  labels:\n    cluster.x-k8s.io/cluster-name: 42\n",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: [not, a, name]\n",
        secret("value-number-kubeconfig", "h", "value-number", value="42"),
        secret("value-list-kubeconfig", "h", "value-list", value="[a, b]"),
        secret("data-string-kubeconfig", "h", "data-string", extra="data: just-a-string\n"),
        "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: a-string\n",
        "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: annotated, namespace: h, annotations: 7}\n",
        ok("h", "still-works"),
    ]
    write("hostile-wrong-types", kpt_package({"h.yaml": "---\n".join(wrong_types)}))

    laughs_kubeconfig = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{n}: &{n} [" + ",".join([f"*{p}"] * 10) + "]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    weird = [
        secret("bom-kubeconfig", "h", "bom", value=base64.b64encode(b"\xef\xbb\xbf" + kubeconfig(name="bom").encode()).decode()),
        secret("crlf-kubeconfig", "h", "crlf", value=b64(kubeconfig(name="crlf").replace("\n", "\r\n"))),
        secret("tabs-kubeconfig", "h", "tabs", value=b64("clusters:\n-\tname: c\n\tcluster: {}\n")),
        secret("laughs-kubeconfig", "h", "laughs", value=b64(laughs_kubeconfig)),
        secret("not-utf8-kubeconfig", "h", "not-utf8", value=base64.b64encode(b"clusters: \xff\xfe\n").decode()),
        secret("empty-lists-kubeconfig", "h", "empty-lists", value=b64("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")),
        secret("dup-names-kubeconfig", "h", "dup-names", value=b64("clusters:\n- {name: c, cluster: {server: 'https://a'}}\n- {name: c, cluster: {server: 'https://b'}}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n")),
        secret("missing-context-kubeconfig", "h", "missing-context", value=b64("clusters:\n- {name: c, cluster: {server: 'https://a'}}\nusers:\n- {name: u, user: {token: t}}\ncontexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: gone\n")),
        secret("multi-doc-kubeconfig", "h", "multi-doc", value=b64(kubeconfig(name="a") + "---\n" + kubeconfig(name="b"))),
        secret("long-token-kubeconfig", "h", "long-token", value=b64(kubeconfig(name="long", user="token: " + "t" * 200_000))),
        secret("ünïcødé-kubeconfig", "h", "ünïcødé", value=good_value("ünïcødé")),
        secret("Upper-Case-kubeconfig", "h", "Upper-Case", value=good_value("upper")),
        ok("h", "still-works"),
    ]
    write("hostile-kubeconfigs", kpt_package({"h.yaml": "---\n".join(weird)}))

    rl_head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
    write("hostile-laughs-input", rl_head + "items:\n- &a {kind: ConfigMap, data: {a: b}}\n" + "".join(
        f"- &{n} [" + ", ".join([f"*{p}"] * 10) + "]\n" for p, n in zip("abcdefg", "bcdefgh")))
    # Regression: one long string repeated by aliases expanded a small input into gigabytes of
    # output; the alias budget counts text too now.
    write("hostile-alias-long-text", "apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap, metadata: {name: a}, data: {k: &x \"" + "x" * 65536 + "\\n\"}}\n- {kind: ConfigMap, metadata: {name: b}, data: {" + ", ".join(f"k{i}: *x" for i in range(200)) + "}}\n")
    write("hostile-deep-nesting", rl_head + "items: " + "[" * 100_000 + "\n")
    write("hostile-deep-block-nesting", rl_head + "items:\n- kind: ConfigMap\n  data:\n" + "".join(" " * (4 + 2 * i) + f"k{i}:\n" for i in range(300)))
    # Regression: offsets on one long non-ASCII line were searched from the line start for every
    # value (quadratic: a 1 MB one-line JSON List took minutes). About 130 KB here.
    one_line = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"ü-{i}"},
         "data": {f"k{j}": "äöü" for j in range(8)}} for i in range(600)]}, ensure_ascii=False)
    write("hostile-one-line-unicode-json", one_line + "\n")
    write("hostile-tabs", rl_head + "items:\n- kind: ConfigMap\n\tdata: {}\n")
    write("hostile-json-invalid", '{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [}\n')
    write("hostile-bom-crlf", ("\ufeff" + resource_list(["- " + textwrap.indent(ok("h", "crlf"), "  ")[2:]])).replace("\n", "\r\n"))
    write("hostile-too-many-items", resource_list(["- {kind: ConfigMap, metadata: {name: a}}\n"] * 3), args=["--max-items", "2"])
    write("hostile-too-large", resource_list(["- {kind: ConfigMap, metadata: {name: a}}\n"] * 3), args=["--max-input-bytes", "100"])
    (HERE / "hostile-not-utf8").mkdir(exist_ok=True)
    (HERE / "hostile-not-utf8" / "input.yaml").write_bytes(rl_head.encode() + b"items:\n- kind: \xff\xfe\n")


def security_cases():
    """Issue "Security round 2": a degraded conversion never replaces a working Secret,
    ambiguity is refused, URLs keep no credentials where none belong."""
    aws_config = {"tlsClientConfig": {"insecure": False}, "awsAuthConfig": {"clusterName": "fleet_prod-eks"}}
    token_config = {"bearerToken": "old-but-working-token", "tlsClientConfig": {"insecure": False}}
    # Rancher keeps the token beside the kubeconfig; here it is corrupt.
    rancher = secret("rancher-kubeconfig", "fleet", "rancher", type_line="", value=b64(kubeconfig(name="rancher", user="{}")),
                     extra="  token: '!!!not-base64!!!'\n").replace("data:\n  value:", "data:\n  value:")
    write("never-weaken-rancher-corrupt-token", kpt_package({
        "capi/rancher.yaml": rancher,
        "argocd/cluster-rancher.yaml": argo_secret("cluster-rancher", "rancher-kubeconfig", "fleet", cluster="rancher", server="https://rancher.example:6443", config=token_config),
    }))
    eks_plain = secret("prod-eks-kubeconfig", "fleet", "prod-eks", value=b64(kubeconfig(name="prod-eks", server="https://abc.gr7.eu-west-1.eks.amazonaws.com", user="token: k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20v")))
    broken_user = kubeconfig(name="prod-eks", server="https://abc.gr7.eu-west-1.eks.amazonaws.com", user=(
        "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: aws\n  args: [eks, get-token, --cluster-name]\n"))
    eks_user = secret("prod-eks-user-kubeconfig", "fleet", "prod-eks", value=b64(broken_user))
    owned_eks = argo_secret("cluster-prod-eks", "prod-eks-user-kubeconfig", "fleet", cluster="prod-eks", server="https://abc.gr7.eu-west-1.eks.amazonaws.com", config=aws_config)
    files = {"capi/eks.yaml": eks_plain + "---\n" + eks_user, "argocd/cluster-prod-eks.yaml": owned_eks}
    write("never-weaken-eks-fallback", kpt_package(files))
    write("never-weaken-eks-fallback-lenient", kpt_package(files, function_config=config_map(strict="false")))
    # Regression (review): the same fallback under a new name replaced the working Secret and
    # deleted it, allowRename given: a rename may not weaken a login either.
    write("never-weaken-on-rename", kpt_package(files, function_config=config_map(namespacedNames="true", allowRename="true")))
    write("server-empty", kpt_package({"capi/c.yaml": "---\n".join([
        secret("empty-kubeconfig", "fleet", "empty", value=b64(kubeconfig(name="empty", server='""'))),
        secret("slash-kubeconfig", "fleet", "slash", value=b64(kubeconfig(name="slash", server="/"))),
        secret("hostless-kubeconfig", "fleet", "hostless", value=b64(kubeconfig(name="hostless", server="api.example:6443"))),
    ])}))
    dup_kubeconfig = kubeconfig(name="dup", server="https://a.example:6443").replace(
        "    server: https://a.example:6443\n", "    server: https://a.example:6443\n    server: https://b.example:6443\n")
    dup_data = secret("dup-data-kubeconfig", "fleet", "dup-data", value=b64(kubeconfig(name="dup-data"))) + "  value: " + b64(kubeconfig(name="other")) + "\n"
    write("duplicate-keys", kpt_package({"capi/c.yaml": "---\n".join([
        secret("dup-kubeconfig", "fleet", "dup", value=b64(dup_kubeconfig)), dup_data])}))
    one = secret("twice-kubeconfig", "fleet", "twice", value=b64(kubeconfig(name="twice", server="https://one.example:6443")))
    two = secret("twice-kubeconfig", "fleet", "twice", value=b64(kubeconfig(name="twice", server="https://two.example:6443")))
    write("duplicate-items", kpt_package({
        "capi/a.yaml": one, "capi/b.yaml": two,
        "argocd/cluster-twice.yaml": argo_secret("cluster-twice", "twice-kubeconfig", "fleet", cluster="twice", server="https://one.example:6443", config=token_config),
    }))
    # What the API server returns for a list (kubectl get --raw): items carry no kind.
    listed = secret("raw-kubeconfig", "fleet", "raw", value=b64(kubeconfig(name="raw"))).replace("apiVersion: v1\nkind: Secret\n", "")
    write("secret-list", "apiVersion: v1\nkind: SecretList\nmetadata:\n  resourceVersion: \"1\"\nitems:\n- " + textwrap.indent(listed, "  ")[2:])
    proxied = kubeconfig(name="proxied", server="https://ops:s3cret@api.example:6443", cluster_extra="proxy-url: http://user:PASSWORD@proxy.example:3128\n")
    write("url-credentials-pull", kpt_package({"capi/c.yaml": secret("proxied-kubeconfig", "fleet", "proxied", value=b64(proxied))}, function_config=config_map(mode="pull")))
    write("url-credentials-push", kpt_package({"capi/c.yaml": secret("proxied-kubeconfig", "fleet", "proxied", value=b64(proxied))}))


def conversion_cases():
    """Issue "Conversion that holds against real providers": kubeconfigs shaped as each
    provider's code writes them; every case's README names the upstream file it follows."""
    docs = split_docs(PROVIDERS.joinpath("aks.yaml").read_text())
    admin, user = docs[0], docs[1]
    encoded = re.search(r"^  value: (\S+)$", user, flags=re.M).group(1)
    # What AKS hands CAPZ for an Entra ID cluster (az aks get-credentials without --admin):
    # kubelogin with its default device-code login and the AKS public client id.
    devicecode = base64.b64decode(encoded).decode().replace(
        "      - 31e2ad10-fa4a-4df5-b585-694f83e95bc4\n", "      - 80faf920-1908-4b52-b5ef-a8e7bedfc67a\n"
    ).replace("      - workloadidentity\n", "      - devicecode\n").replace(
        "      env: null\n",
        "      env: null\n      installHint: |2\n\n        kubelogin is not installed which is required to connect to AAD enabled cluster.\n\n        To learn more, please go to https://aka.ms/aks/kubelogin\n",
    )
    assert "devicecode" in devicecode and "80faf920" in devicecode
    user_devicecode = user.replace(encoded, b64(devicecode))
    # A Secret an earlier capi2argo wrote from the device-code kubeconfig: it never worked.
    old_devicecode = {"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
        "command": "argocd-k8s-auth", "args": ["azure"], "env": {"AAD_LOGIN_METHOD": "devicecode"},
        "apiVersion": "client.authentication.k8s.io/v1beta1"}}
    only_user = user_devicecode.replace("aks-weu-prod", "aks-neu-dev")
    write("aks-devicecode-user", kpt_package({
        "capi/aks.yaml": admin + "---\n" + user_devicecode,
        "capi/aks-dev.yaml": only_user,
        "argocd/cluster-aks-weu-prod.yaml": argo_secret("cluster-aks-weu-prod", "aks-weu-prod-kubeconfig-user", "azure-prod", cluster="aks-weu-prod",
                                                        server="https://aks-weu-prod-dns-1a2b3c4d.hcp.westeurope.azmk8s.io:443", config=old_devicecode),
    }))

    server = "https://api.onprem.example:6443"
    def exec_user(command, args, api="client.authentication.k8s.io/v1beta1", env=None, more=""):
        text = "exec:\n"
        if api:
            text += f"  apiVersion: {api}\n"
        text += f"  command: {command}\n  args:\n" + "".join(f"  - {json.dumps(a)}\n" for a in args)
        if env:
            text += "  env:\n" + "".join(f"  - name: {n}\n    value: {json.dumps(v)}\n" for n, v in env)
        return text + more
    def one(name, ns, user):
        return secret(f"{name}-kubeconfig", ns, name, value=b64(kubeconfig(name=name, server=server, user=user)))

    # int128/kubelogin, as its docs/setup.md has `kubectl oidc-login setup` print it.
    issuer = ["--oidc-issuer-url=https://issuer.example.com", "--oidc-client-id=kubernetes"]
    write("oidc-kubelogin", kpt_package({"capi/oidc.yaml": "---\n".join([
        one("oidc-browser", "onprem", exec_user("kubectl", ["oidc-login", "get-token", *issuer])),
        one("oidc-standalone", "onprem", exec_user("kubelogin", ["get-token", *issuer, "--oidc-extra-scope=email"])),
        one("oidc-device", "onprem", exec_user("kubectl", ["oidc-login", "get-token", *issuer, "--grant-type=device-code"])),
        one("oidc-robot", "onprem", exec_user("kubectl", ["oidc-login", "get-token", *issuer, "--grant-type=client-credentials", "--oidc-client-secret=s3cret"])),
    ])}))

    spn = ["get-token", "--environment", "AzurePublicCloud", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630",
           "--client-id", "31e2ad10-fa4a-4df5-b585-694f83e95bc4", "--tenant-id", "9a86a9e9-14ed-4fe6-9ed8-0e35fbd581b3"]
    write("azure-kubelogin-flags", kpt_package({"capi/azure.yaml": "---\n".join([
        one("arc-pop", "azure", exec_user("kubelogin", [*spn, "--login", "spn", "--pop-enabled", "--pop-claims",
                                                         "u=/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Kubernetes/connectedClusters/arc-pop"],
                                           env=[("AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "spn-secret")])),
        one("pop-half", "azure", exec_user("kubelogin", [*spn, "--login", "spn", "--pop-enabled"])),
        one("pop-msi", "azure", exec_user("kubelogin", [*spn, "--login", "msi", "--pop-enabled", "--pop-claims", "u=/x"])),
        one("msi-resource", "azure", exec_user("kubelogin", [*spn, "--login", "msi", "--identity-resource-id",
                                                              "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/argo"])),
        one("legacy", "azure", exec_user("kubelogin", [*spn, "--login", "spn", "--legacy"])),
        one("env-wins", "azure", exec_user("kubelogin", [*spn, "--login", "devicecode", "--token-cache-dir", "/tmp/k", "--some-new-flag"],
                                            env=[("AAD_LOGIN_METHOD", "workloadidentity"), ("AZURE_CLIENT_ID", "11111111-2222-3333-4444-555555555555"),
                                                 ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/secrets/azure/tokens/azure-identity-token")])),
    ])}))

    write("exec-api-versions", kpt_package({"capi/exec.yaml": "---\n".join([
        one("alpha-vault", "onprem", exec_user("vault-k8s-login", ["--role", "argocd"], api="client.authentication.k8s.io/v1alpha1")),
        one("no-version", "onprem", exec_user("vault-k8s-login", ["--role", "argocd"], api=None)),
        one("future-version", "onprem", exec_user("vault-k8s-login", ["--role", "argocd"], api="client.authentication.k8s.io/v2")),
        one("alpha-eks", "aws", exec_user("aws-iam-authenticator", ["token", "-i", "alpha-eks"], api="client.authentication.k8s.io/v1alpha1")),
        one("argocd-own", "aws", exec_user("argocd-k8s-auth", ["aws", "--cluster-name", "argocd-own"], api="client.authentication.k8s.io/v1")),
        one("always-interactive", "onprem", exec_user("vault-k8s-login", ["--role", "argocd"], more="  interactiveMode: Always\n")),
    ])}))

    def eks(name, user):
        # Each EKS cluster has an endpoint of its own (two of one server would collide).
        server = f"https://{name.upper().replace('-', '')[:12]:0<12}0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"
        return secret(f"{name}-user-kubeconfig", "aws", f"{name}-user", value=b64(kubeconfig(name=f"aws_{name}-control-plane", server=server, user=user)))
    write("aws-logins", kpt_package({"capi/aws.yaml": "---\n".join([
        eks("region-env", exec_user("aws-iam-authenticator", ["token", "-i", "aws_region-env-control-plane"],
                                    env=[("AWS_REGION", "eu-west-1"), ("AWS_STS_REGIONAL_ENDPOINTS", "regional")])),
        eks("region-flag", exec_user("aws", ["--region", "eu-central-1", "eks", "get-token", "--cluster-name", "aws_region-flag-control-plane", "--output", "json"])),
        eks("external-id", exec_user("aws-iam-authenticator", ["token", "-i", "aws_external-id-control-plane", "-r", "arn:aws:iam::123456789012:role/argo", "-e", "ext-1234"])),
        eks("session", exec_user("aws-iam-authenticator", ["token", "-i", "aws_session-control-plane", "-r", "arn:aws:iam::123456789012:role/argo", "-s", "argocd", "--cache"])),
        eks("not-eks", exec_user("aws", ["sts", "get-caller-identity"])),
    ])}))

    # CAPA writes the plain <cluster>-kubeconfig with a presigned token refreshed on each
    # reconcile (pkg/cloud/services/eks/config.go, createCAPIKubeconfigSecret).
    eks_plain = PROVIDERS.joinpath("eks.yaml").read_text()
    write("eks-plain-only", kpt_package({"capi/eks.yaml": split_docs(eks_plain)[0]}))

    vcluster = PROVIDERS.joinpath("vcluster.yaml").read_text()
    eks_both = PROVIDERS.joinpath("eks.yaml").read_text()
    for case, config in (("name-from-secret", None), ("name-from-kubeconfig", config_map(nameFrom="kubeconfig")),
                         ("name-from-kubeconfig-namespaced", config_map(nameFrom="kubeconfig", namespacedNames="true"))):
        write(case, kpt_package({"capi/vcluster.yaml": vcluster, "capi/eks.yaml": eks_both}, function_config=config))

    ok = lambda ns, c: secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"))
    def cluster_v1beta2(name, ns, spec, status="", annotations="", metadata=""):
        text = f"apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: {ns}\n{metadata}"
        if annotations:
            text += "  annotations:\n" + textwrap.indent(annotations, "    ")
        text += "spec:\n" + textwrap.indent(spec, "  ")
        return text + (("status:\n" + textwrap.indent(status, "  ")) if status else "")
    v1beta2_spec = ("clusterNetwork:\n  pods:\n    cidrBlocks: [192.168.0.0/16]\n"
                    "controlPlaneRef:\n  apiGroup: controlplane.cluster.x-k8s.io\n  kind: KubeadmControlPlane\n  name: {n}-cp\n"
                    "infrastructureRef:\n  apiGroup: infrastructure.cluster.x-k8s.io\n  kind: DockerCluster\n  name: {n}\n"
                    "topology:\n  classRef:\n    name: quick-start\n    namespace: classes\n  version: v1.33.1\n")
    initialised = "initialization:\n  infrastructureProvisioned: true\n  controlPlaneInitialized: true\nphase: Provisioned\n"
    write("capi-v1beta2", kpt_package({"clusters.yaml": "---\n".join([
        cluster_v1beta2("modern", "fleet", v1beta2_spec.format(n="modern"), status=initialised),
        ok("fleet", "modern"),
        cluster_v1beta2("frozen", "fleet", "paused: true\n" + v1beta2_spec.format(n="frozen"), status=initialised),
        ok("fleet", "frozen"),
        capi_cluster("moving", "fleet", annotations="cluster.x-k8s.io/paused: \"\"\n"),
        ok("fleet", "moving"),
    ])}))
    lifecycle = {
        "clusters.yaml": "---\n".join([
            cluster_v1beta2("booting", "fleet", v1beta2_spec.format(n="booting"),
                            status="initialization:\n  infrastructureProvisioned: true\nphase: Provisioning\n"),
            ok("fleet", "booting"),
            capi_cluster("booting-v1beta1", "fleet") + "status:\n  infrastructureReady: true\n  controlPlaneReady: false\n  phase: Provisioning\n",
            ok("fleet", "booting-v1beta1"),
            cluster_v1beta2("leaving", "fleet", v1beta2_spec.format(n="leaving"), status=initialised + "",
                            metadata="  deletionTimestamp: \"2026-11-20T10:00:00Z\"\n  finalizers: [cluster.cluster.x-k8s.io]\n"),
            ok("fleet", "leaving"),
            cluster_v1beta2("steady", "fleet", v1beta2_spec.format(n="steady"), status=initialised),
            ok("fleet", "steady"),
            capi_cluster("manifest-only", "fleet", spec="topology:\n  class: quick-start\n  version: v1.32.0\n"),
            ok("fleet", "manifest-only"),
        ]),
        "argocd/cluster-leaving.yaml": argo_secret("cluster-leaving", "leaving-kubeconfig", "fleet", cluster="leaving", server="https://leaving.fleet.example:6443"),
    }
    write("cluster-lifecycle", kpt_package(lifecycle))
    write("cluster-lifecycle-skip", kpt_package(lifecycle, function_config=config_map(skipNotReady="true")))

    # Cluster API 1.13 and 1.14 (v1.13.0 cf3d8f81, v1.14.0 560d4acf): the Secret is unchanged,
    # the Cluster's v1beta2 conditions say more (api/core/v1beta2/cluster_types.go; the status
    # as core/reconcilers/cluster/cluster_controller_status.go writes it in v1.14.0).
    def conditions(*rows):
        out = "conditions:\n"
        for type_, status, reason, message in rows:
            out += f"- type: {type_}\n  status: \"{status}\"\n  reason: {reason}\n  observedGeneration: 2\n  lastTransitionTime: \"2026-07-30T10:05:00Z\"\n"
            if message:
                out += f"  message: {json.dumps(message)}\n"
        return out
    healthy = [("Available", "True", "Available", ""), ("ControlPlaneInitialized", "True", "Initialized", ""),
               ("Deleting", "False", "NotDeleting", ""), ("Paused", "False", "NotPaused", ""),
               ("RemoteConnectionProbe", "True", "ProbeSucceeded", "")]
    replace = lambda rows, new: [new.get(r[0], r) for r in rows]
    unreachable = replace(healthy, {
        "Available": ("Available", "False", "NotAvailable", "* RemoteConnectionProbe: Remote connection probe failed, probe last succeeded at 2026-07-30T10:10:00Z"),
        "RemoteConnectionProbe": ("RemoteConnectionProbe", "False", "ProbeFailed", "Remote connection probe failed, probe last succeeded at 2026-07-30T10:10:00Z")})
    deleting = replace(healthy, {"Deleting": ("Deleting", "True", "WaitingForWorkersDeletion", "* MachineDeployments: md-0")})
    paused = replace(healthy, {"Paused": ("Paused", "True", "Paused", "")})
    status = lambda rows: conditions(*rows) + initialised
    releases = {
        "clusters.yaml": "---\n".join([
            cluster_v1beta2("healthy", "fleet", v1beta2_spec.format(n="healthy"), status=status(healthy)),
            ok("fleet", "healthy"),
            cluster_v1beta2("unreachable", "fleet", v1beta2_spec.format(n="unreachable"), status=status(unreachable)),
            ok("fleet", "unreachable"),
            cluster_v1beta2("draining", "fleet", v1beta2_spec.format(n="draining"), status=status(deleting)),
            ok("fleet", "draining"),
            cluster_v1beta2("held", "fleet", "paused: true\n" + v1beta2_spec.format(n="held"), status=status(paused)),
            ok("fleet", "held"),
            # A v1beta1 read of the same (as 1.13 and 1.14 still serve it, deprecated): the v1beta2
            # conditions under status.v1beta2.
            capi_cluster("older-client", "fleet") + "status:\n  controlPlaneReady: true\n  infrastructureReady: true\n  phase: Provisioned\n  v1beta2:\n" + textwrap.indent(conditions(*unreachable), "    "),
            ok("fleet", "older-client"),
        ]),
    }
    write("capi-v1-14-conditions", kpt_package(releases))
    write("capi-v1-14-conditions-skip", kpt_package(releases, function_config=config_map(skipNotReady="true")))

    long_labels = ("environment-tier-classification: gold\n"
                   "take-along-label.capi-to-argocd.environment-tier-classification: \"\"\n"
                   "platform.example.com/owning-team-for-escalations: sre\n"
                   "take-along-label.capi-to-argocd.platform.example.com/owning-team-for-escalations: \"\"\n"
                   "team: payments\n"
                   "take-along-label.capi-to-argocd.team: \"\"\n")
    long_annotations = ("runbook-location-for-on-call: https://runbooks.example.com/payments\n"
                        "take-along-annotation.capi-to-argocd.runbook-location-for-on-call: \"\"\n")
    write("long-take-along-keys", kpt_package({"clusters.yaml": "---\n".join([
        capi_cluster("payments", "team-a", labels=long_labels, annotations=long_annotations),
        ok("team-a", "payments"),
        capi_cluster("hand-made", "team-a", labels="owner: \"Jane Doe\"\nteam: ok\n"),
        ok("team-a", "hand-made"),
    ])}, function_config=config_map(copyClusterLabels="true")))


def kubeconfig_field(fixture, field):
    """A `*-data` field of the first kubeconfig in a provider fixture."""
    value = re.search(r"^  value: (\S+)$", PROVIDERS.joinpath(fixture).read_text(), flags=re.M).group(1)
    return re.search(rf"^\s*{field}: (\S+)$", base64.b64decode(value).decode(), flags=re.M).group(1)


def argo_items(expected):
    """The Argo CD cluster Secrets among a ResourceList output's items, as stream documents."""
    text = expected.read_text()
    body = text.split("\nitems:\n", 1)[1]
    body = re.split(r"^(?:results|functionConfig):", body, flags=re.M)[0]
    items = re.split(r"^- ", body, flags=re.M)[1:]
    docs = []
    for item in items:
        lines = item.rstrip("\n").split("\n")
        doc = "\n".join([lines[0]] + [l[2:] for l in lines[1:]]) + "\n"
        if "argocd.argoproj.io/secret-type: cluster" in doc:
            docs.append(doc)
    return docs


def validator_cases():
    """Issue "In policy engines for real": the validator on good Secrets and on each problem."""
    good = []
    for case in sorted(HERE.glob("provider-*")):
        good.extend(argo_items(case / "expected" / "output.yaml"))
    write("validate-providers", "---\n".join(good), args=("validate",))

    cert = kubeconfig_field("kubeadm.yaml", "client-certificate-data")
    key = kubeconfig_field("kubeadm.yaml", "client-key-data")
    ca = kubeconfig_field("kubeadm.yaml", "certificate-authority-data")
    other_key = kubeconfig_field("talos.yaml", "client-key-data")
    def argo(name, config=None, data=None, labels="", server="https://api.example:6443", raw_config=None):
        text = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-{name}\n  namespace: argocd\n  labels:\n"
                f"    argocd.argoproj.io/secret-type: cluster\n{labels}type: Opaque\nstringData:\n  name: {name}\n")
        if server is not None:
            text += f"  server: {server}\n"
        if raw_config is not None:
            text += "  config: " + json.dumps(raw_config) + "\n"
        elif config is not None:
            text += "  config: |-\n" + textwrap.indent(json.dumps(config, indent=2), "    ") + "\n"
        for k, v in (data or {}).items():
            text += f"  {k}: {json.dumps(v)}\n"
        return text
    tls = lambda **kw: {"tlsClientConfig": {"insecure": False, **kw}}
    aws_exec = lambda args, version="client.authentication.k8s.io/v1beta1", **env: {"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
        "command": "argocd-k8s-auth", "args": args, "apiVersion": version, **({"env": env} if env else {})}}
    problems = [
        argo("good-cert", tls(certData=cert, keyData=key, caData=ca)),
        argo("not-json", raw_config="{tlsClientConfig: {insecure: false}"),
        argo("unknown-key", {"tlsClientConfig": {"insecure": False}, "bearer_token": "x"}),
        argo("case-key", {"tlsClientConfig": {"insecure": False}, "BearerToken": "opaque-token"}),
        argo("wrong-type", {"tlsClientConfig": {"insecure": "false"}}),
        argo("ca-not-pem", tls(caData=base64.b64encode(b"not a certificate").decode())),
        argo("ca-not-base64", tls(caData="%%%")),
        argo("key-mismatch", tls(certData=cert, keyData=other_key, caData=ca)),
        argo("cert-without-key", tls(certData=cert, caData=ca)),
        argo("insecure-with-ca", tls(insecure=True, caData=ca)),
        argo("server-not-url", tls(), server="api.example:6443"),
        argo("server-missing", tls(), server=None),
        argo("proxy-scheme", {"tlsClientConfig": {"insecure": False}, "proxyUrl": "ftp://proxy.example:21"}),
        argo("exec-alpha", {"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
            "command": "argocd-k8s-auth", "args": ["gcp"], "apiVersion": "client.authentication.k8s.io/v1alpha1"}}),
        argo("exec-v1", aws_exec(["gcp"], version="client.authentication.k8s.io/v1")),
        argo("aws-region-flag", aws_exec(["aws", "--cluster-name", "c", "--region", "eu-west-1"])),
        argo("azure-devicecode", aws_exec(["azure"], AAD_LOGIN_METHOD="devicecode")),
        argo("any-command", {"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
            "command": "sh", "args": ["-c", "id"], "apiVersion": "client.authentication.k8s.io/v1beta1"}}),
        argo("aws-and-exec", {"tlsClientConfig": {"insecure": False}, "awsAuthConfig": {"clusterName": "c"},
                              "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["gcp"], "apiVersion": "client.authentication.k8s.io/v1beta1"}}),
        argo("bad-label", tls(), labels="    Team_Name!: x\n    tier: \"gold plated\"\n"),
        argo("bad-fields", tls(), data={"shard": "two", "project": "My_Project", "namespaces": "ok-ns, Bad_NS", "clusterResources": "yes", "extra": "x"}),
        argo("expiring-token", {"tlsClientConfig": {"insecure": False}, "bearerToken": "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8"}),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-not-base64\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\ndata:\n  server: '!!!'\n",
    ]
    write("validate-problems", "---\n".join(problems), args=("validate",))
    policy = config_map(action="validate", allowedExecCommands="argocd-k8s-auth,vault-login", forbidInsecure="true",
                        forbidExpiringTokens="true", requiredLabels="team,environment")
    write("validate-policy", resource_list([
        "- " + textwrap.indent(argo("vault", {"tlsClientConfig": {"insecure": False}, "execProviderConfig": {
            "command": "vault-login", "apiVersion": "client.authentication.k8s.io/v1beta1"}}, labels="    team: a\n    environment: prod\n"), "  ")[2:],
        "- " + textwrap.indent(argo("lab", tls(insecure=True), labels="    team: a\n"), "  ")[2:],
        "- " + textwrap.indent(argo("eks", {"tlsClientConfig": {"insecure": False}, "bearerToken": "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8"},
                                    labels="    team: a\n    environment: prod\n"), "  ")[2:],
    ], function_config=policy))
    # The policy on the function's own output: a copied exec plugin outside the list is not written.
    vault_user = "exec:\n  apiVersion: client.authentication.k8s.io/v1beta1\n  command: vault-k8s-login\n  args: [--role, argocd]\n"
    write("policy-on-output", kpt_package({
        "capi/c.yaml": "---\n".join([
            secret("vault-kubeconfig", "onprem", "vault", value=b64(kubeconfig(name="vault", user=vault_user))),
            secret("plain-kubeconfig", "onprem", "plain", value=b64(kubeconfig(name="plain"))),
        ]),
        "argocd/cluster-vault.yaml": argo_secret("cluster-vault", "vault-kubeconfig", "onprem", cluster="vault", server="https://vault.example:6443",
                                                 config={"bearerToken": "old-token", "tlsClientConfig": {"insecure": False}}),
    }, function_config=config_map(allowedExecCommands="argocd-k8s-auth")))


def source_cases():
    """Issue "Beyond Cluster API": each preset on a Secret shaped as its project writes it."""
    cert = kubeconfig_field("kubeadm.yaml", "client-certificate-data")
    key = kubeconfig_field("kubeadm.yaml", "client-key-data")
    ca = kubeconfig_field("kubeadm.yaml", "certificate-authority-data")
    def full_kubeconfig(cluster, user, context, server, auth=None, namespace=None):
        auth = auth or f"client-certificate-data: {cert}\n    client-key-data: {key}"
        ns = f"\n    namespace: {namespace}" if namespace else ""
        return (f"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: {server}\n  name: {cluster}\n"
                f"contexts:\n- context:\n    cluster: {cluster}\n    user: {user}{ns}\n  name: {context}\ncurrent-context: {context}\n"
                f"kind: Config\npreferences: {{}}\nusers:\n- name: {user}\n  user:\n    {auth}\n")
    def opaque(name, namespace, data, labels="", annotations="", extra="", type_line="type: Opaque\n"):
        meta = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        if labels:
            meta += "  labels:\n" + textwrap.indent(labels, "    ")
        if annotations:
            meta += "  annotations:\n" + textwrap.indent(annotations, "    ")
        meta += extra + type_line + "data:\n" + "".join(f"  {k}: {b64(v)}\n" for k, v in data.items())
        return meta

    # vcluster (loft-sh/vcluster pkg/util/kubeconfig/kubeconfig.go): vc-<name>, app=vcluster,
    # vcluster-name=<name>; server https://localhost:8443 unless exportKubeConfig.server is set.
    vc = lambda name, server: full_kubeconfig("kubernetes", "kubernetes-super-admin", "kubernetes-super-admin@kubernetes", server)
    vc_labels = lambda name: f"app: vcluster\nvcluster-name: {name}\n"
    write("source-vcluster", kpt_package({"vclusters.yaml": "---\n".join([
        opaque("vc-dev", "team-a", {"config": vc("dev", "https://localhost:8443"), "certificate-authority": "", "client-certificate": "", "client-key": "", "token": ""}, labels=vc_labels("dev")),
        opaque("vc-prod", "team-a", {"config": vc("prod", "https://localhost:8443"), "token": ""}, labels=vc_labels("prod"),
               annotations="capi2argo.dev/server: https://prod.team-a:443\n"),
        # vcluster's own configuration: same prefix, no kubeconfig key.
        opaque("vc-config-dev", "team-a", {"config.yaml": "controlPlane: {}\n"}, labels=vc_labels("dev")),
    ])}, function_config=config_map(sources="capi,vcluster")))

    # Kamaji (clastix/kamaji internal/resources/kubeconfig.go): <tcp>-admin-kubeconfig with
    # admin.conf (the advertised endpoint), admin.svc (the in-cluster Service) and super-admin.*.
    def kamaji(tcp, ns):
        conf = lambda server, user: full_kubeconfig(tcp, user, f"{user}@{tcp}", server)
        labels = (f"kamaji.clastix.io/certificate_lifecycle_controller: kubeconfig\nkamaji.clastix.io/component: admin-kubeconfig\n"
                  f"kamaji.clastix.io/name: {tcp}\nkamaji.clastix.io/project: kamaji\n")
        return opaque(f"{tcp}-admin-kubeconfig", ns, {
            "admin.conf": conf("https://172.18.255.200:6443", "kubernetes-admin"),
            "admin.svc": conf(f"https://{tcp}.{ns}.svc:6443", "kubernetes-admin"),
            "super-admin.conf": conf("https://172.18.255.200:6443", "kubernetes-super-admin"),
            "super-admin.svc": conf(f"https://{tcp}.{ns}.svc:6443", "kubernetes-super-admin"),
        }, labels=labels, type_line="")
    write("source-kamaji", kpt_package({"tenants.yaml": kamaji("tenant-00", "tenants")},
                                       function_config=config_map(sources="kamaji")))
    write("source-kamaji-svc", kpt_package({"tenants.yaml": kamaji("tenant-00", "tenants")},
                                           function_config=config_map(sources="- preset: kamaji\n  key: admin.svc\n")))

    # k0smotron (k0sproject/k0smotron internal/controller/k0smotron.io/k0smotroncluster_kubeconfig.go):
    # <kmc>-kubeconfig, stringData value, type cluster.x-k8s.io/secret, no cluster-name label.
    kmc = full_kubeconfig("edge-k0s", "edge-admin", "edge-admin@edge-k0s", "https://edge.k0s.example.com:30443")
    write("source-k0smotron", kpt_package({"k0smotron.yaml": (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: edge-kubeconfig\n  namespace: k0smotron\n  labels:\n"
        "    app: k0smotron\n    app.kubernetes.io/component: kubeconfig\n    cluster: edge\n    component: cluster\n"
        "type: cluster.x-k8s.io/secret\nstringData:\n  value: |\n" + textwrap.indent(kmc, "    "))},
        function_config=config_map(sources="capi,k0smotron")))

    # HyperShift (openshift/hypershift hypershift-operator/controllers/manifests/manifests.go,
    # hostedcluster_controller.go reconcileKubeconfigSync): <hc>-admin-kubeconfig, key kubeconfig,
    # Opaque, owned by the HostedCluster; kubeconfig names cluster/admin/admin.
    hc = full_kubeconfig("cluster", "admin", "admin", "https://api.prod-hc.example.com:6443", namespace="default")
    write("source-hypershift", kpt_package({"hostedclusters.yaml": opaque("prod-hc-admin-kubeconfig", "clusters", {"kubeconfig": hc},
        labels="environment: prod\n",
        extra="  ownerReferences:\n  - apiVersion: hypershift.openshift.io/v1beta1\n    kind: HostedCluster\n    name: prod-hc\n    uid: 2f1e4d6c-0000-4000-8000-000000000001\n    blockOwnerDeletion: true\n    controller: true\n")},
        function_config=config_map(sources="hypershift")))

    # Crossplane (crossplane-contrib/provider-upjet-aws internal/controller/cluster/eks/clusterauth/eks.go):
    # the connection Secret the user names, keys kubeconfig, endpoint, clusterCA; a 15-minute token.
    eks = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " + ca + "\n    server: https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com\n  name: prod-eks\n"
           "contexts:\n- context:\n    cluster: prod-eks\n    user: prod-eks\n  name: prod-eks\ncurrent-context: prod-eks\nkind: Config\npreferences: {}\n"
           "users:\n- name: prod-eks\n  user:\n    token: k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20v\n")
    write("source-crossplane", kpt_package({"connections.yaml": opaque("prod-eks-conn", "crossplane-system",
        {"kubeconfig": eks, "endpoint": "https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com", "clusterCA": ""},
        type_line="type: connection.crossplane.io/v1alpha1\n")}, function_config=config_map(sources="crossplane")))

    # Gardener before v1.114 (gardener/gardener pkg/gardenlet/operation/botanist/kubeapiserver.go at
    # 3b181bac^): <shoot>.kubeconfig, keys kubeconfig and ca.crt, label gardener.cloud/role=kubeconfig.
    shoot = full_kubeconfig("shoot--garden-dev--alpha", "shoot--garden-dev--alpha", "shoot--garden-dev--alpha",
                            "https://api.alpha.dev.gardener.example.com", auth="token: 8c4f1f4e7d2b4a0c9e6b3d1a5f7e9c2b")
    write("source-gardener", kpt_package({"shoots.yaml": opaque("alpha.kubeconfig", "garden-dev", {"kubeconfig": shoot, "ca.crt": ""},
        labels="gardener.cloud/role: kubeconfig\n", annotations="url: https://api.alpha.dev.gardener.example.com\n")},
        function_config=config_map(sources="gardener")))

    # A kubeconfig anyone puts in a Secret, labelled for capi2argo.
    write("source-labelled", kpt_package({"clusters.yaml": opaque("legacy-datacenter", "platform",
        {"kubeconfig": full_kubeconfig("dc1", "dc1-admin", "dc1-admin@dc1", "https://k8s.dc1.example.net:6443")},
        labels="capi2argo.dev/kubeconfig: \"true\"\n")}, function_config=config_map(sources="capi,labelled")))

    # A custom source, and pruning that stays within the sources this run reads.
    custom = ("apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: sources\nspec:\n  sources:\n  - capi\n"
              "  - name: platform-x\n    suffix: -access\n    key: kubeconfig\n    clusterName: label:platform.example.com/cluster\n"
              "    labels:\n      platform.example.com/kind: cluster\n")
    owned_elsewhere = argo_secret("cluster-dev", "vc-dev", "team-a", cluster="dev", server="https://dev.team-a:443").replace(
        "    capi-to-argocd/owned", "    capi2argo.dev/source: vcluster\n    capi-to-argocd/owned")
    owned_gone = argo_secret("cluster-retired", "retired-access", "platform", cluster="retired", server="https://retired.example:6443").replace(
        "    capi-to-argocd/owned", "    capi2argo.dev/source: platform-x\n    capi-to-argocd/owned")
    write("source-custom", kpt_package({
        "clusters.yaml": opaque("blue-access", "platform", {"kubeconfig": full_kubeconfig("blue", "blue-admin", "blue-admin@blue", "https://blue.platform.example.com:6443")},
                                labels="platform.example.com/kind: cluster\nplatform.example.com/cluster: blue-prod\n"),
        "argocd/cluster-dev.yaml": owned_elsewhere,
        "argocd/cluster-retired.yaml": owned_gone,
    }, function_config=custom))

    # Issue 36: every preset with its labels (they narrow it), clusterName and key adjusted. The
    # Secret labelled team=platform converts under the name its label gives, read from the
    # adjusted key; the other is left to another run, and so is the Argo CD Secret made from it.
    adjusted = ("- preset: {preset}\n  labels: {{team: platform}}\n  clusterName: label:fleet.example.com/name\n"
                "  key: managed.kubeconfig\n")
    hc_owner = lambda c: ("  ownerReferences:\n  - apiVersion: hypershift.openshift.io/v1beta1\n    kind: HostedCluster\n"
                          f"    name: {c}\n    uid: 2f1e4d6c-0000-4000-8000-00000000000{len(c)}\n    controller: true\n")
    shapes = {
        # preset: (Secret name, its own labels, extra metadata, type line)
        "capi": (lambda c: f"{c}-kubeconfig", lambda c: f"cluster.x-k8s.io/cluster-name: {c}\n", lambda c: "", "type: cluster.x-k8s.io/secret\n"),
        "vcluster": (lambda c: f"vc-{c}", lambda c: f"app: vcluster\nvcluster-name: {c}\n", lambda c: "", "type: Opaque\n"),
        "kamaji": (lambda c: f"{c}-admin-kubeconfig", lambda c: f"kamaji.clastix.io/component: admin-kubeconfig\nkamaji.clastix.io/name: {c}\n", lambda c: "", ""),
        "k0smotron": (lambda c: f"{c}-kubeconfig", lambda c: f"app: k0smotron\napp.kubernetes.io/component: kubeconfig\ncluster: {c}\n", lambda c: "", "type: cluster.x-k8s.io/secret\n"),
        "hypershift": (lambda c: f"{c}-admin-kubeconfig", lambda c: "", hc_owner, "type: Opaque\n"),
        "crossplane": (lambda c: f"{c}-conn", lambda c: "", lambda c: "", "type: connection.crossplane.io/v1alpha1\n"),
        "gardener": (lambda c: f"{c}.kubeconfig", lambda c: "gardener.cloud/role: kubeconfig\n", lambda c: "", ""),
        "labelled": (lambda c: f"{c}-access", lambda c: 'capi2argo.dev/kubeconfig: "true"\n', lambda c: "", "type: Opaque\n"),
    }
    for preset, (name, own_labels, extra, type_line) in shapes.items():
        def one(c, team):
            labels = own_labels(c) + f"fleet.example.com/name: eu-{c}\n" + (f"team: {team}\n" if team else "")
            config = full_kubeconfig(c, f"{c}-admin", f"{c}-admin@{c}", f"https://{c}.{preset}.example.com:6443")
            return opaque(name(c), "fleet", {"managed.kubeconfig": config}, labels=labels, extra=extra(c), type_line=type_line)
        theirs = argo_secret("cluster-eu-beta", name("beta"), "fleet", cluster="eu-beta", server=f"https://beta.{preset}.example.com:6443")
        if preset != "capi":
            theirs = theirs.replace("    capi-to-argocd/owned", f"    capi2argo.dev/source: {preset}\n    capi-to-argocd/owned")
        write(f"source-{preset}-adjusted", kpt_package({
            "clusters.yaml": one("alpha", "platform") + "---\n" + one("beta", "storage"),
            "argocd/cluster-eu-beta.yaml": theirs,
        }, function_config=config_map(sources=adjusted.format(preset=preset))))

    # Sources round 2: every shape each platform writes, release by release; one Argo CD cluster
    # per cluster. Each case's README.md names the upstream file and commit.
    owner = lambda api, kind, name, controller=True: (
        f"  ownerReferences:\n  - apiVersion: {api}\n    kind: {kind}\n    name: {name}\n"
        f"    uid: 0c0ffee0-0000-4000-8000-{zlib.crc32(name.encode()):012d}\n    controller: {str(controller).lower()}\n")
    vc_keys = lambda server: {"config": vc("x", server), "certificate-authority": ca, "client-certificate": cert, "client-key": key, "token": ""}

    # vcluster up to v0.23, and later releases upgraded from them: vc-<name> without labels.
    write("source-vcluster-unlabelled", kpt_package({"vclusters.yaml": "---\n".join([
        opaque("vc-dev", "team-a", vc_keys("https://dev.vcluster.example.com"),
               extra=owner("v1", "Service", "dev", controller=False)),
        # vcluster's own configuration and certificates: not kubeconfig Secrets.
        opaque("vc-config-dev", "team-a", {"config.yaml": "controlPlane: {}\n"},
               labels="app: vcluster\nchart: vcluster-0.23.0\nrelease: dev\nheritage: Helm\n"),
        opaque("dev-certs", "team-a", {"ca.crt": "", "ca.key": ""}, labels="app: vcluster\nvcluster-name: dev\n"),
    ])}, function_config=config_map(sources="capi,vcluster")))

    # vcluster v0.24+: exportKubeConfig.additionalSecrets beside vc-<name>, the one Secret with a
    # reachable server; in the same namespace, and in another one.
    labelled_vc = lambda name: f"app: vcluster\nvcluster-name: {name}\n"
    write("source-vcluster-additional-secrets", kpt_package({"vclusters.yaml": "---\n".join([
        opaque("vc-dev", "team-a", vc_keys("https://localhost:8443"), labels=labelled_vc("dev")),
        opaque("dev-external", "team-a", vc_keys("https://dev.vcluster.example.com"), labels=labelled_vc("dev")),
        opaque("vc-prod", "team-a", vc_keys("https://localhost:8443"), labels=labelled_vc("prod")),
        opaque("prod-for-argocd", "exports", vc_keys("https://prod.vcluster.example.com"), labels=labelled_vc("prod")),
    ])}, function_config=config_map(sources="vcluster")))

    # k0smotron standalone before v1.10.3 (no app.kubernetes.io/component label): v1.9 names its
    # entries <name>-k0s/<name>-admin, v1.6 k0s/admin. K0sControlPlane's tunneling siblings.
    def kmc_secret(name, kubeconfig_text):
        return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}-kubeconfig\n  namespace: k0smotron\n  labels:\n"
                f"    app: k0smotron\n    cluster: {name}\n    component: cluster\n"
                + owner("k0smotron.io/v1beta1", "Cluster", name)
                + "type: cluster.x-k8s.io/secret\nstringData:\n  value: |\n" + textwrap.indent(kubeconfig_text, "    "))
    k0s_capi = lambda name, server, extra="": secret(name, "edge", "edge", string_value=full_kubeconfig("edge", "edge-admin", "edge-admin@edge", server, namespace=None) + extra)
    write("source-k0smotron-releases", kpt_package({
        "k0smotron.yaml": "---\n".join([
            kmc_secret("v19", full_kubeconfig("v19-k0s", "v19-admin", "v19-admin@v19-k0s", "https://v19.k0s.example.com:30443")),
            kmc_secret("v16", full_kubeconfig("k0s", "admin", "k0s", "https://v16.k0s.example.com:30443")),
        ]),
        "k0s-controlplane.yaml": "---\n".join([
            k0s_capi("edge-kubeconfig", "https://edge.example.com:6443"),
            k0s_capi("edge-proxied-kubeconfig", "https://edge.example.com:6443", "    proxy-url: http://tunnel.example.com:31443\n"),
            k0s_capi("edge-tunneled-kubeconfig", "https://tunnel.example.com:31443"),
        ]),
    }, function_config=config_map(sources="capi,k0smotron")))

    # HyperShift: <hc>-custom-admin-kubeconfig beside <hc>-admin-kubeconfig (a sibling), and a
    # HostedCluster that is itself named <x>-custom.
    hc_secret = lambda secret_name, owner_name, server: opaque(secret_name, "clusters", {"kubeconfig": full_kubeconfig("cluster", "admin", "admin", server, namespace="default")},
        extra=owner("hypershift.openshift.io/v1beta1", "HostedCluster", owner_name))
    write("source-hypershift-custom", kpt_package({"hostedclusters.yaml": "---\n".join([
        hc_secret("prod-admin-kubeconfig", "prod", "https://api.prod.hypershift.example.com:6443"),
        hc_secret("prod-custom-admin-kubeconfig", "prod", "https://api.prod.custom.example.com:6443"),
        hc_secret("lab-custom-admin-kubeconfig", "lab-custom", "https://api.lab-custom.hypershift.example.com:6443"),
    ])}, function_config=config_map(sources="hypershift")))
    # With nameFrom=kubeconfig every HyperShift kubeconfig names its cluster `cluster`.
    write("source-hypershift-name-from-kubeconfig", kpt_package({"hostedclusters.yaml": "---\n".join([
        hc_secret("prod-admin-kubeconfig", "prod", "https://api.prod.hypershift.example.com:6443"),
        hc_secret("lab-admin-kubeconfig", "lab", "https://api.lab.hypershift.example.com:6443"),
    ])}, function_config=config_map(sources="hypershift", nameFrom="kubeconfig")))

    # HyperShift's control-plane namespace under the default `capi` source: the <infraID>-kubeconfig
    # its Cluster API controllers use (server https://kube-apiserver:6443), and the HostedCluster's
    # own Secret, which only the hypershift preset takes.
    infra = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: prod-8x2kq-kubeconfig\n  namespace: clusters-prod\n  labels:\n"
             "    cluster.x-k8s.io/cluster-name: prod-8x2kq\n    hypershift.openshift.io/kubeconfig: capi\n"
             + owner("hypershift.openshift.io/v1beta1", "HostedControlPlane", "prod")
             + "type: Opaque\nstringData:\n  value: |\n" + textwrap.indent(full_kubeconfig("cluster", "admin", "admin", "https://kube-apiserver:6443", namespace="default"), "    "))
    write("source-hypershift-capi-infraid", kpt_package({"clusters.yaml": "---\n".join([
        infra,
        hc_secret("prod-admin-kubeconfig", "prod", "https://api.prod.hypershift.example.com:6443"),
    ])}))

    # Crossplane: one connection's details in the managed resource's, the composite's (named after
    # its UID) and the claim's Secrets; the claim's wins.
    conn = lambda name, ns, api, kind: opaque(name, ns, {"kubeconfig": full_kubeconfig("prod-eks", "prod-eks", "prod-eks", "https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com"), "endpoint": "https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com"},
        type_line="type: connection.crossplane.io/v1alpha1\n", extra=owner(api, kind, name))
    write("source-crossplane-claim", kpt_package({"connections.yaml": "---\n".join([
        conn("4f6a3a52-9a1c-4b8e-9d6f-2c1e5b7a8d90-auth", "crossplane-system", "eks.aws.upbound.io/v1beta1", "ClusterAuth"),
        conn("4f6a3a52-9a1c-4b8e-9d6f-2c1e5b7a8d90", "crossplane-system", "platform.example.org/v1alpha1", "XKubernetesCluster"),
        conn("prod-eks", "team-a", "platform.example.org/v1alpha1", "KubernetesCluster"),
    ])}, function_config=config_map(sources="crossplane")))

    # Kamaji under Cluster API: the TenantControlPlane's <tcp>-admin-kubeconfig, and the copy the
    # KamajiControlPlane writes as <cluster>-kubeconfig (here from admin.svc, as v0.19+ does with
    # an advertise address): one cluster, whatever the servers.
    tcp_labels = ("kamaji.clastix.io/component: admin-kubeconfig\nkamaji.clastix.io/name: edge-cp\nkamaji.clastix.io/project: kamaji\n")
    tcp = opaque("edge-cp-admin-kubeconfig", "fleet", {
        "admin.conf": full_kubeconfig("edge-cp", "kubernetes-admin", "kubernetes-admin@edge-cp", "https://172.18.255.201:6443"),
        "admin.svc": full_kubeconfig("edge-cp", "kubernetes-admin", "kubernetes-admin@edge-cp", "https://edge-cp.fleet.svc:6443"),
    }, labels=tcp_labels, type_line="", extra=owner("kamaji.clastix.io/v1alpha1", "TenantControlPlane", "edge-cp"))
    copy = secret("edge-kubeconfig", "fleet", "edge",
                  extra_labels="    kamaji.clastix.io/cluster: edge\n    kamaji.clastix.io/component: capi\n    kamaji.clastix.io/secret: kubeconfig\n    kamaji.clastix.io/tcp: edge-cp\n",
                  value=b64(full_kubeconfig("edge-cp", "kubernetes-admin", "kubernetes-admin@edge-cp", "https://edge-cp.fleet.svc:6443")))
    write("source-kamaji-capi", kpt_package({"fleet.yaml": tcp + "---\n" + copy}, function_config=config_map(sources="capi,kamaji")))

    # Hints under the default sources: each platform's Secret names its preset; a labelled Secret
    # whose kubeconfig is under another key is a warning.
    write("source-hints", kpt_package({"secrets.yaml": "---\n".join([
        kamaji("tenant-00", "tenants"),
        kmc_secret("edge", full_kubeconfig("edge-k0s", "edge-admin", "edge-admin@edge-k0s", "https://edge.k0s.example.com:30443")),
        hc_secret("prod-admin-kubeconfig", "prod", "https://api.prod.hypershift.example.com:6443"),
        opaque("vc-dev", "team-a", vc_keys("https://localhost:8443"), labels=labelled_vc("dev")),
        opaque("alpha.kubeconfig", "garden-dev", {"kubeconfig": shoot, "ca.crt": ""}, labels="gardener.cloud/role: kubeconfig\n"),
        conn("prod-eks", "team-a", "platform.example.org/v1alpha1", "KubernetesCluster"),
    ])}))
    write("source-near-miss-key", kpt_package({"clusters.yaml": "---\n".join([
        opaque("legacy-datacenter", "platform", {"value": full_kubeconfig("dc1", "dc1-admin", "dc1-admin@dc1", "https://k8s.dc1.example.net:6443")},
               labels="capi2argo.dev/kubeconfig: \"true\"\n"),
        opaque("edge-admin-kubeconfig", "tenants", {"admin.yaml": ""}, labels="kamaji.clastix.io/component: admin-kubeconfig\nkamaji.clastix.io/name: edge\n"),
    ])}, function_config=config_map(sources="labelled,kamaji")))

    # One Argo CD cluster per server: two Clusters pointing at one endpoint, and a cluster Secret
    # someone wrote by hand for the server of a third.
    same = lambda c, server: secret(f"{c}-kubeconfig", "fleet", c, value=b64(kubeconfig(name=c, server=server)))
    hand_made = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: legacy-prod\n  namespace: argocd\n  labels:\n"
                 "    argocd.argoproj.io/secret-type: cluster\ntype: Opaque\nstringData:\n  name: legacy-prod\n"
                 "  server: https://prod.fleet.example.net:6443\n  config: '{\"tlsClientConfig\":{\"insecure\":false}}'\n")
    write("source-server-collision", kpt_package({
        "clusters.yaml": "---\n".join([
            same("blue", "https://shared.fleet.example.net:6443"),
            same("green", "https://shared.fleet.example.net:6443"),
            same("prod", "https://prod.fleet.example.net:6443"),
            same("stage", "https://stage.fleet.example.net:6443"),
        ]),
        "argocd/legacy-prod.yaml": hand_made,
    }))


def owned_secret(ns, c, server=None, cluster=None, config=None, annotations="", secret_name=None):
    """An owned Argo CD Secret exactly as the function writes it for `ok(ns, c)`."""
    return argo_secret(
        secret_name or f"cluster-{c}", f"{c}-kubeconfig", ns, cluster=cluster or c,
        server=server or f"https://{c}.{ns}.example:6443", annotations=annotations,
        config=config or {"bearerToken": "fake-token-value", "tlsClientConfig": {"insecure": False}},
    )


def kubectl_list(docs, uid_prefix=None):
    """What `kubectl get secrets -o yaml` prints: a List, each item with the server's fields."""
    items = []
    for i, doc in enumerate(docs):
        if uid_prefix:
            doc = doc.replace("metadata:\n", f"metadata:\n  uid: {uid_prefix}-{i:04d}-4a6e-9c1d-2b7f3e5a8c90\n  resourceVersion: \"{1000 + i}\"\n", 1)
        items.append("- " + textwrap.indent(doc, "  ")[2:])
    return "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n" + "".join(items)


def guard_cases():
    """The fleet guards (allowEmpty, maxPrune, allowRename), each holding and letting through,
    and the plan view. Shapes as kpt sends a package and as kubectl prints Secrets."""
    ok = lambda ns, c: secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"))
    owned = owned_secret
    # Only the owned Secrets: what a failed `kubectl get`, a selector with a typo or a package
    # rendered without its clusters/ folder gives.
    three = {"argocd.yaml": "---\n".join(owned("fleet", c) for c in ["one", "two", "three"])}
    write("guard-empty-input", kpt_package(three))
    write("guard-empty-allowed", kpt_package(three, config_map(allowEmpty="true", maxPrune="100%")))
    # One source empty, the other not: allowEmpty holds per source.
    vcluster_owned = argo_secret("cluster-tenant-a", "vc-tenant-a", "vclusters", cluster="tenant-a",
                                 server="https://tenant-a.vclusters:443").replace(
        '    capi-to-argocd/owned: "true"\n', '    capi-to-argocd/owned: "true"\n    capi2argo.dev/source: vcluster\n')
    write("guard-empty-one-source", kpt_package(
        {"clusters.yaml": ok("fleet", "one"), "argocd.yaml": owned("fleet", "one") + "---\n" + vcluster_owned},
        config_map(sources="capi, vcluster"),
    ))
    # Ten clusters, three kubeconfig Secrets missing: 30 % of the fleet, over maxPrune's 10 %.
    ten = [f"c{i}" for i in range(10)]
    files = {
        "clusters.yaml": "---\n".join(ok("fleet", c) for c in ten[:7]),
        "argocd.yaml": "---\n".join(owned("fleet", c) for c in ten),
    }
    write("guard-mass-prune", kpt_package(files))
    write("guard-mass-prune-allowed", kpt_package(files, config_map(maxPrune="3")))
    # One cluster of three decommissioned: routine, always let through.
    write("guard-one-of-three", kpt_package({
        "clusters.yaml": ok("fleet", "one") + "---\n" + ok("fleet", "two"),
        "argocd.yaml": "---\n".join(owned("fleet", c) for c in ["one", "two", "three"]),
    }))
    # Renames, by each setting that makes one.
    base = {
        "clusters.yaml": ok("team-a", "prod") + "---\n" + ok("team-a", "dev"),
        "argocd.yaml": owned("team-a", "prod") + "---\n" + owned("team-a", "dev"),
    }
    write("guard-rename-namespaced-names", kpt_package(base, config_map(namespacedNames="true")))
    write("guard-rename-argo-namespace", kpt_package(base, config_map(argoNamespace="gitops")))
    write("guard-rename-allowed", kpt_package(base, config_map(namespacedNames="true", allowRename="true", maxPrune="100%")))
    # nameFrom=kubeconfig: the kubeconfig's cluster entry is not the Secret's cluster name.
    eks_like = lambda c: secret(f"{c}-kubeconfig", "team-a", c,
                                string_value=kubeconfig(name=f"team-a_{c}-control-plane", server=f"https://{c}.team-a.example:6443"))
    named = {
        "clusters.yaml": eks_like("prod") + "---\n" + eks_like("dev"),
        "argocd.yaml": owned("team-a", "prod") + "---\n" + owned("team-a", "dev"),
    }
    write("guard-rename-name-from", kpt_package(named, config_map(nameFrom="kubeconfig")))
    # A source's clusterName rule: the cluster named by a label of the kubeconfig Secret.
    labelled = lambda c: ok("team-a", c).replace(
        f"    cluster.x-k8s.io/cluster-name: {c}\n", f"    cluster.x-k8s.io/cluster-name: {c}\n    fleet.example.com/name: eu-{c}\n")
    write("guard-rename-cluster-name-rule", kpt_package(
        {"clusters.yaml": labelled("prod"), "argocd.yaml": owned("team-a", "prod")},
        config_map(sources="- preset: capi\n  clusterName: label:fleet.example.com/name\n"),
    ))
    # A kubeconfig Secret of another namespace would take over a cluster's Argo CD Secret (its
    # own kubeconfig Secret missing): the server changes under the same name, held back.
    write("guard-takeover", kpt_package({
        "clusters.yaml": ok("team-b", "prod") + "---\n" + ok("team-a", "dev"),
        "argocd.yaml": owned("team-a", "prod") + "---\n" + owned("team-a", "dev"),
    }))
    # Owned Secrets that are another run's: of a namespace allowedNamespaces leaves out, and
    # standing outside this run's argoNamespace; neither is pruned, whatever the input holds.
    write("guard-other-runs", kpt_package({
        "clusters.yaml": ok("team-a", "one"),
        "argocd.yaml": "---\n".join([
            owned("team-a", "one"),
            owned("team-b", "two"),
            owned("team-a", "three").replace("namespace: argocd", "namespace: argocd-staging"),
        ]),
    }, config_map(allowedNamespaces="team-a")))
    # First sight: clusters the function has never written are created, never renamed, whatever
    # the naming settings; the cluster it did write is unchanged.
    write("guard-first-sight", kpt_package(
        {
            "clusters.yaml": "---\n".join([ok("team-a", "old"), ok("team-a", "new"), ok("team-b", "new")]),
            "argocd.yaml": owned("team-a", "old", secret_name="cluster-team-a-old", cluster="team-a-old"),
        },
        config_map(namespacedNames="true"),
    ))
    # Steady state: the function's own Secrets, each in the file it wrote it to.
    steady = {"clusters.yaml": "---\n".join(ok("fleet", c) for c in ["one", "two", "three"])}
    for c in ["one", "two", "three"]:
        steady[f"argocd/cluster-{c}.yaml"] = owned("fleet", c)
    write("guard-steady-state", kpt_package(steady))

    # The plan view, on what kubectl prints (two Lists): a cluster to create, one whose server
    # moved, one unchanged, one gone, one whose kubeconfig is broken, and one whose Argo CD
    # name would change (written earlier under another name), which the rename guard keeps.
    clusters = kubectl_list([
        ok("fleet", "new"),
        ok("fleet", "moved"),
        ok("fleet", "steady"),
        ok("fleet", "renamed"),
        secret("broken-kubeconfig", "fleet", "broken", value="'%%%'"),
    ], uid_prefix="0c1a")
    argocd = kubectl_list([
        owned("fleet", "moved", server="https://moved.old-dc.example:6443"),
        owned("fleet", "steady"),
        owned("fleet", "gone"),
        owned("fleet", "broken"),
        owned("fleet", "renamed", cluster="renamed-old-name"),
    ], uid_prefix="7e2b")
    plan_input = clusters + "---\n" + argocd
    write("plan-text", plan_input, args=["plan"])
    write("plan-json", plan_input, args=["plan", "--output", "json"])
    write("plan-requests", plan_input, args=["plan", "-o", "requests"])
    write("plan-requests-renamed", plan_input, args=["plan", "-o", "requests", "--set", "namespacedNames=true", "--set", "allowRename=true", "--set", "maxPrune=100%"])


# The ApplicationSet cases follow argoproj/argo-cd at v3.5.1 (commit
# 109ca7ca71139e514114499d294a492e7910a965): its examples under applicationset/examples/, the
# selectors and labels of applicationset/generators/cluster_test.go, and the documentation's
# examples (docs/operator-manual/applicationset/). Each case's README.md names its files.

def example_appset(name, generators, template_name, go=True, sync_policy="", options=True, destination="server: '{{.server}}'", project='"default"'):
    """An ApplicationSet in the form of Argo CD's examples (cluster/cluster-example.yaml)."""
    head = f"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n"
    if go:
        head += "  goTemplate: true\n"
        if options:
            head += '  goTemplateOptions: ["missingkey=error"]\n'
    head += "  generators:\n" + textwrap.indent(generators, "  ")
    head += (
        f"  template:\n    metadata:\n      name: '{template_name}'\n    spec:\n      project: {project}\n"
        "      source:\n        repoURL: https://github.com/argoproj/argocd-example-apps/\n        targetRevision: HEAD\n        path: guestbook\n"
        f"      destination:\n        {destination}\n        namespace: guestbook\n"
    )
    return head + sync_policy


def application(appset, name, server, finalizer=True, uid="5e7a0000-0000-4000-8000-000000000001"):
    """An Application as the ApplicationSet controller creates it: in its ApplicationSet's
    namespace, controlled by it (the index deleteInCluster lists by), with the resources
    finalizer RenderTemplateParams adds unless preserveResourcesOnDeletion, and a status."""
    fin = "  finalizers:\n  - resources-finalizer.argocd.argoproj.io\n" if finalizer else ""
    return (
        f"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n{fin}"
        f"  ownerReferences:\n  - apiVersion: argoproj.io/v1alpha1\n    kind: ApplicationSet\n    name: {appset}\n    uid: {uid}\n    controller: true\n    blockOwnerDeletion: true\n"
        "spec:\n  project: default\n  source:\n    repoURL: https://github.com/argoproj/argocd-example-apps/\n    targetRevision: HEAD\n    path: guestbook\n"
        f"  destination:\n    server: {server}\n    namespace: guestbook\n"
        "status:\n  sync:\n    status: Synced\n  health:\n    status: Healthy\n"
    )


def labelled_owned(ns, c, labels):
    """An owned Argo CD Secret carrying labels (a dict), as the function writes them."""
    text = owned_secret(ns, c)
    extra = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in sorted(labels.items()))
    return text.replace("    capi-to-argocd/cluster-namespace: %s\n" % ns, "    capi-to-argocd/cluster-namespace: %s\n" % ns + extra, 1)


def appset_cases():
    """What a plan makes ApplicationSets do to Applications, and maxApplicationDeletes."""
    owned = owned_secret
    ok = lambda ns, c: secret(f"{c}-kubeconfig", ns, c, string_value=kubeconfig(name=c, server=f"https://{c}.{ns}.example:6443"))
    srv = lambda c, ns="fleet": f"https://{c}.{ns}.example:6443"
    in_cluster = "https://kubernetes.default.svc"

    # cluster/cluster-example.yaml (Go template) and cluster-example-fasttemplate.yaml: every
    # cluster and the local one. `three`'s kubeconfig Secret is gone (a prune), `four` is new.
    for case, go, name in [("appset-cluster-generator", True, "{{.name}}-guestbook"),
                           ("appset-cluster-generator-fasttemplate", False, "{{name}}-guestbook")]:
        dest = "server: '{{.server}}'" if go else "server: '{{server}}'"
        argocd = kubectl_list([owned("fleet", c) for c in ["one", "two", "three"]], uid_prefix="7e2b")
        apps = kubectl_list(
            [example_appset("guestbook", "- clusters: {}\n", name, go=go, destination=dest)]
            + [application("guestbook", f"{c}-guestbook", srv(c)) for c in ["one", "two", "three"]]
            + [application("guestbook", "in-cluster-guestbook", in_cluster)],
            uid_prefix="a995")
        clusters = kubectl_list([ok("fleet", c) for c in ["one", "two", "four"]], uid_prefix="0c1a")
        write(case, clusters + "---\n" + argocd + "---\n" + apps, args=["plan"])

    # cluster_test.go's selectors and labels (TestGenerateParams): `environment` and `org`, here
    # taken along from each Cluster. production-01's Cluster moves to staging (org foo): it
    # leaves the production-only selector, stays in the In one, enters the In-and-org one.
    take = 'take-along-label.capi-to-argocd.environment: ""\ntake-along-label.capi-to-argocd.org: ""\n'
    marks = {"taken-from-cluster-label.capi-to-argocd.environment": "", "taken-from-cluster-label.capi-to-argocd.org": ""}
    before = {"staging-01": ("staging", "foo"), "production-01": ("production", "bar")}
    after = {"staging-01": ("staging", "foo"), "production-01": ("staging", "foo")}
    selectors = [
        ("secret-type", "- clusters:\n    selector:\n      matchLabels:\n        argocd.argoproj.io/secret-type: cluster\n"),
        ("production-only", "- clusters:\n    selector:\n      matchLabels:\n        environment: production\n"),
        ("production-or-staging", "- clusters:\n    selector:\n      matchExpressions:\n      - key: environment\n        operator: In\n        values:\n        - staging\n        - production\n"),
        ("production-or-staging-org-foo", "- clusters:\n    selector:\n      matchExpressions:\n      - key: environment\n        operator: In\n        values:\n        - staging\n        - production\n      matchLabels:\n        org: foo\n"),
    ]
    appsets = [example_appset(n, g, "{{.nameNormalized}}-" + n) for n, g in selectors]
    selected = {
        "secret-type": ["staging-01", "production-01"],
        "production-only": ["production-01"],
        "production-or-staging": ["staging-01", "production-01"],
        "production-or-staging-org-foo": ["staging-01"],
    }
    apps = [application(n, f"{c}-{n}", srv(c, "clusters")) for n, cs in selected.items() for c in cs]
    cluster_objects = [capi_cluster(c, "clusters", labels=f"environment: {e}\norg: {o}\n{take}") for c, (e, o) in after.items()]
    argocd = [labelled_owned("clusters", c, {"environment": e, "org": o, **marks}) for c, (e, o) in before.items()]
    text = (kubectl_list([ok("clusters", c) for c in after] + cluster_objects, uid_prefix="0c1a")
            + "---\n" + kubectl_list(argocd, uid_prefix="7e2b")
            + "---\n" + kubectl_list(appsets + apps, uid_prefix="a995"))
    write("appset-label-selectors", text, args=["plan"])
    write("appset-plan-json", text, args=["plan", "--output", "json"])

    # matrix/cluster-and-git.yaml: a git generator's directories (argo-workflows,
    # prometheus-operator) for every cluster; the plan cannot know the directories, so a
    # cluster's Applications are found by their destination, and a new one's counted.
    matrix = ("- matrix:\n    generators:\n      - git:\n          repoURL: https://github.com/argoproj/argo-cd.git\n"
              "          revision: HEAD\n          directories:\n          - path: applicationset/examples/matrix/cluster-addons/*\n"
              "      - clusters:\n          selector:\n            matchLabels:\n              argocd.argoproj.io/secret-type: cluster\n")
    addons = ["argo-workflows", "prometheus-operator"]
    text = (kubectl_list([ok("fleet", c) for c in ["one", "four"]], uid_prefix="0c1a")
            + "---\n" + kubectl_list([owned("fleet", c) for c in ["one", "three"]], uid_prefix="7e2b")
            + "---\n" + kubectl_list(
                [example_appset("cluster-git", matrix, "{{.path.basename}}-{{.name}}", project="'{{.metadata.labels.environment}}'")]
                + [application("cluster-git", f"{a}-{c}", srv(c)) for c in ["one", "three"] for a in addons],
                uid_prefix="a995"))
    write("appset-matrix-git", text, args=["plan", "--set", "maxApplicationDeletes=2"])

    # Controlling-Resource-Modification.md: preserveResourcesOnDeletion (the generated
    # Applications carry no resources finalizer), and the examples'
    # applications-sync-policies: create-only and create-update delete no Application.
    policies = [
        ("preserved", "  syncPolicy:\n    preserveResourcesOnDeletion: true\n", False),
        ("create-only", "  syncPolicy:\n    applicationsSync: create-only\n", True),
        ("create-update", "  syncPolicy:\n    applicationsSync: create-update\n", True),
    ]
    text = (kubectl_list([ok("fleet", "one")], uid_prefix="0c1a")
            + "---\n" + kubectl_list([owned("fleet", c) for c in ["one", "gone"]], uid_prefix="7e2b")
            + "---\n" + kubectl_list(
                [example_appset(n, "- clusters: {}\n", "{{.name}}-" + n, sync_policy=p) for n, p, _ in policies]
                + [application(n, f"{c}-{n}", srv(c), finalizer=f) for n, _, f in policies for c in ["one", "gone"]],
                uid_prefix="a995"))
    write("appset-sync-policies", text, args=["plan"])
    # The controller's own --policy (argocd-cmd-params-cm) wins where it allows no override.
    params = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cmd-params-cm\n  namespace: argocd\ndata:\n  applicationsetcontroller.policy: sync\n"
    write("appset-controller-policy", text + "---\n" + params, args=["plan"])

    # Generators-Cluster.md's values example (index .metadata.annotations "…"), Argo CD's
    # normalize, and a rename (namespacedNames, let through): the Applications whose name holds
    # the cluster's name are replaced, by name; the one whose name does not is kept.
    # A selector leaves the local cluster out: it has no metadata (cluster.go), so the values
    # and the index names would fail on it, and Argo CD would refuse both ApplicationSets.
    selected = "    selector:\n      matchLabels:\n        argocd.argoproj.io/secret-type: cluster\n"
    values = ("- clusters:\n" + selected + "    values:\n      revision: '{{index .metadata.annotations \"my-custom-annotation\"}}'\n"
              "      clusterName: '{{.name}}'\n")
    # The annotation comes from each Cluster, taken along (so the run writes it).
    annotated = '  annotations:\n    my-custom-annotation: v1.2.3\n    taken-from-cluster-annotation.capi-to-argocd.my-custom-7ed44d06: ""\n'
    clusters = [capi_cluster(c, "team-a", annotations='my-custom-annotation: v1.2.3\ntake-along-annotation.capi-to-argocd.my-custom-annotation: ""\n') for c in ["prod", "dev"]]
    def names_case(annotate):
        return (kubectl_list([ok("team-a", c) for c in ["prod", "dev"]] + (clusters if annotate else []), uid_prefix="0c1a")
                + "---\n" + kubectl_list([owned("team-a", c, annotations=annotated if annotate else "") for c in ["prod", "dev"]], uid_prefix="7e2b")
                + "---\n" + kubectl_list(
                    [example_appset("by-name", values, "{{.values.clusterName | normalize}}-guestbook"),
                     example_appset("by-namespace", "- clusters:\n" + selected,
                                    "{{index .metadata.labels \"capi-to-argocd/cluster-namespace\"}}-{{index .metadata.labels \"capi-to-argocd/cluster-secret-name\"}}", options=False)]
                    + [application("by-name", f"{c}-guestbook", srv(c, "team-a")) for c in ["prod", "dev"]]
                    + [application("by-namespace", f"team-a-{c}-kubeconfig", srv(c, "team-a")) for c in ["prod", "dev"]],
                    uid_prefix="a995"))
    write("appset-go-template-names", names_case(True), args=["plan", "--set", "namespacedNames=true", "--set", "allowRename=true", "--set", "maxPrune=100%", "--set", "maxApplicationDeletes=100%"])
    # The same example on clusters without that annotation: with missingkey=error, Go fails on
    # `.metadata.annotations` (the map is absent, cluster.go adds it only when there are some),
    # so the controller generates nothing for the ApplicationSet, and deletes nothing.
    write("appset-values-fail", names_case(False), args=["plan", "--set", "namespacedNames=true", "--set", "allowRename=true", "--set", "maxPrune=100%"])

    # maxApplicationDeletes: twelve clusters, three kubeconfig Secrets gone and maxPrune let
    # through: the ApplicationSet would lose 3 of its 12 Applications, over 10 % (one). In
    # kpt's form: the owned Secrets stay in the output, the error is a result.
    twelve = [f"c{i:02d}" for i in range(12)]
    package = {
        "clusters.yaml": "---\n".join(ok("fleet", c) for c in twelve[3:]),
        "argocd.yaml": "---\n".join(owned("fleet", c) for c in twelve),
        "apps.yaml": "---\n".join([example_appset("guestbook", "- clusters:\n    selector:\n      matchLabels:\n        argocd.argoproj.io/secret-type: cluster\n", "{{.name}}-guestbook")]
                                  + [application("guestbook", f"{c}-guestbook", srv(c)) for c in twelve]),
    }
    write("appset-guard-max-deletes", kpt_package(package, config_map(maxPrune="100%")))
    write("appset-guard-max-deletes-allowed", kpt_package(package, config_map(maxPrune="100%", maxApplicationDeletes="3")))
    # Regression (issue 47): five of twelve clusters deleted on purpose meets maxPrune first and,
    # once that is let through, maxApplicationDeletes: the plan names both overrides at once.
    text = (kubectl_list([ok("fleet", c) for c in twelve[5:]], uid_prefix="0c1a")
            + "---\n" + kubectl_list([owned("fleet", c) for c in twelve], uid_prefix="7e2b")
            + "---\n" + kubectl_list(
                [example_appset("guestbook", "- clusters:\n    selector:\n      matchLabels:\n        argocd.argoproj.io/secret-type: cluster\n", "{{.name}}-guestbook")]
                + [application("guestbook", f"{c}-guestbook", srv(c)) for c in twelve],
                uid_prefix="a995"))
    write("guard-every-override-at-once", text, args=["plan"])
    # The overrides it names, given: the whole change goes through, no guard holds.
    write("guard-every-override-at-once-given", text,
          args=["plan", "--set", "maxPrune=5", "--set", "maxApplicationDeletes=5"])

    # A mass relabel: the label an ApplicationSet selects on was put on the Argo CD Secrets by
    # hand; a run writes them without it. No Secret is deleted, so no other guard counts it.
    ten = [f"c{i}" for i in range(10)]
    text = (kubectl_list([ok("fleet", c) for c in ten], uid_prefix="0c1a")
            + "---\n" + kubectl_list([labelled_owned("fleet", c, {"env": "prod"}) for c in ten], uid_prefix="7e2b")
            + "---\n" + kubectl_list(
                [example_appset("prod", "- clusters:\n    selector:\n      matchLabels:\n        env: prod\n", "{{.name}}-prod")]
                + [application("prod", f"{c}-prod", srv(c)) for c in ten],
                uid_prefix="a995"))
    write("appset-mass-relabel", text, args=["plan"])

    # A selector Argo CD refuses (an operator apimachinery does not know): the ApplicationSet
    # generates and deletes nothing, before the plan and after it.
    text = (kubectl_list([ok("fleet", "one")], uid_prefix="0c1a")
            + "---\n" + kubectl_list([owned("fleet", c) for c in ["one", "gone"]], uid_prefix="7e2b")
            + "---\n" + kubectl_list(
                [example_appset("broken", "- clusters:\n    selector:\n      matchExpressions:\n      - key: env\n        operator: Equals\n        values: [prod]\n", "{{.name}}-broken")]
                + [application("broken", f"{c}-broken", srv(c)) for c in ["one", "gone"]],
                uid_prefix="a995"))
    write("appset-refused", text, args=["plan"])


def anchor_cases():
    """Issue "Sources round 2": an anchor defined again, as libyaml's parser and go-yaml v3 read
    it (the most recent node of the anchor counts); PyYAML's composer alone refuses it."""
    kc = b64(kubeconfig(name="prod", server="https://prod.team-a.example:6443"))
    write("yaml-redefined-anchor", (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: notes\n    namespace: &ns team-old\n"
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: prod-kubeconfig\n    namespace: &ns team-a\n"
        "    labels:\n      cluster.x-k8s.io/cluster-name: &cluster prod\n  type: cluster.x-k8s.io/secret\n"
        f"  data:\n    value: {kc}\n"
        "- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: prod-ca\n    namespace: *ns\n"
        "    labels:\n      cluster.x-k8s.io/cluster-name: *cluster\n  type: cluster.x-k8s.io/secret\n"
        "  data:\n    tls.crt: \"\"\n"
    ))


def expiry_cases():
    """Issue "Ship it": certificates that expire, said before they do, against the time the
    case pins (the fixtures' client certificates are valid for a year from 2026-11-21, KCP's
    lifetime); and a certificate Cluster API rotated, reported in the update."""
    cert = lambda f: kubeconfig_field(f, "client-certificate-data")
    key = lambda f: kubeconfig_field(f, "client-key-data")
    ca = lambda f: kubeconfig_field(f, "certificate-authority-data")
    config = lambda f: {"tlsClientConfig": {"insecure": False, "certData": cert(f), "keyData": key(f), "caData": ca(f)}}
    owned = argo_secret("cluster-prod-eu-1", "prod-eu-1-kubeconfig", "fleet-eu", cluster="prod-eu-1",
                        server="https://prod-eu-1-api.example.net:6443", config=config("kubeadm.yaml"))
    argo_only = lambda name: owned.replace("name: cluster-prod-eu-1", f"name: cluster-{name}")
    write("validate-certificate-expiring", argo_only("soon"), args=("validate",), now="2027-11-10T00:00:00Z")
    write("validate-certificate-expired", argo_only("late"), args=("validate",), now="2027-12-01T00:00:00Z")
    kubeadm = (PROVIDERS / "kubeadm.yaml").read_text()
    write("convert-certificate-expired", kubeadm, now="2027-12-01T00:00:00Z")
    # The kubeconfig Secret now holds a newer certificate (and its key and CA) than the Argo CD
    # Secret made before: an update that says it is a rotation.
    rotated = kubeadm
    for field in ("client-certificate-data", "client-key-data", "certificate-authority-data"):
        old = kubeconfig_field("kubeadm.yaml", field)
        new = kubeconfig_field("talos.yaml", field)
        value = re.search(r"^  value: (\S+)$", rotated, flags=re.M).group(1)
        text = base64.b64decode(value).decode().replace(old, new)
        rotated = rotated.replace(value, b64(text))
    write("plan-certificate-rotated", rotated + "---\n" + owned, args=("plan",))
    write("certificate-rotated", rotated + "---\n" + owned)


def profile(name, ns, providers="", conditions=None, labels="", created="2026-11-01T00:00:00Z", api="multicluster.x-k8s.io/v1alpha1", manager="open-cluster-management", list_name="accessProviders", extra_status=""):
    """A ClusterProfile as cluster-inventory-api v0.1.2 types it and a cluster manager writes it:
    spec.displayName and clusterManager, the manager's label, ControlPlaneHealthy, the access
    providers (each `name` and a clientcmd `cluster`)."""
    healthy, reason, message = conditions or ("True", "Healthy", "the control plane is healthy")
    doc = (f"apiVersion: {api}\nkind: ClusterProfile\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
           f"  creationTimestamp: \"{created}\"\n  labels:\n    x-k8s.io/cluster-manager: {manager}\n{textwrap.indent(labels, '    ')}"
           f"spec:\n  displayName: {name}\n  clusterManager:\n    name: {manager}\n"
           f"status:\n  conditions:\n  - type: ControlPlaneHealthy\n    status: \"{healthy}\"\n    reason: {reason}\n"
           f"    message: {message}\n    lastTransitionTime: \"{created}\"\n  version:\n    kubernetes: v1.33.2\n{extra_status}")
    if providers:
        doc += f"  {list_name}:\n" + textwrap.indent(providers, "  ")
    return doc


def access_provider(name, server, ca=None, more=""):
    """An entry of status.accessProviders: the provider's name and its cluster's connection."""
    text = f"- name: {name}\n  cluster:\n    server: {server}\n"
    if ca:
        text += f"    certificate-authority-data: {ca}\n"
    return text + textwrap.indent(more, "    ")


def exec_extension(**values):
    """The cluster's client.authentication.k8s.io/exec extension (given to a plugin as `config`)."""
    body = "".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items())
    return "extensions:\n- name: client.authentication.k8s.io/exec\n  extension:\n" + textwrap.indent(body, "    ")


def typed_config(spec):
    return "apiVersion: fn.capi2argo.dev/v1alpha1\nkind: Capi2Argo\nmetadata:\n  name: fleet\nspec:\n" + textwrap.indent(spec, "  ")


# The consumer's exec plugins: cluster-inventory-api's own secretreader example
# (cmd/secretreader-plugin), as the reference consumer's tests configure it.
SECRETREADER = """accessProviders:
- name: secretreader
  execConfig:
    command: /plugins/secretreader/bin/secretreader-plugin
    apiVersion: client.authentication.k8s.io/v1
    provideClusterInfo: true
- name: ocm-token
  execConfig:
    command: /plugins/ocm/bin/cp-creds
    apiVersion: client.authentication.k8s.io/v1
    args: ["--managed-serviceaccount=argocd"]
    env:
    - name: OCM_HUB
      value: hub
  profileSourcedCLIArgsPolicy: Ignore
  profileSourcedEnvVarsPolicy: Replace
"""


def profile_cases():
    """Issue "ClusterProfile": SIG Multicluster's ClusterProfiles into Argo CD cluster Secrets,
    as argoproj-labs/clusterprofile-integration-for-argocd (f49fb228) turns them."""
    ca = kubeconfig_field("kubeadm.yaml", "certificate-authority-data")
    sources = "sources: [clusterprofile]\n"
    # Each provider kind the reference knows: Argo CD's built-in clouds (GKE Fleet writes gcp,
    # KubeFleet azure; an EKS cluster's name and role come from the exec extension), a consumer
    # plugin given the cluster's exec extension (OCM's secretreader), one only in the
    # deprecated credentialProviders, and additional arguments and variables under each policy.
    profiles = [
        profile("gke-prod", "fleet", access_provider("argo-cd-builtin-gcp", "https://34.118.0.10", ca), manager="gke-fleet",
                labels="multicluster.x-k8s.io/clusterset: fleet\nenvironment: production\n"),
        profile("aks-prod", "fleet", access_provider("argo-cd-builtin-azure", "https://aks-prod-dns.hcp.westeurope.azmk8s.io:443", ca), manager="kubefleet"),
        profile("eks-prod", "fleet", access_provider("argo-cd-builtin-aws", "https://0123ABCD.gr7.eu-west-1.eks.amazonaws.com", ca,
                more=exec_extension(clusterName="prod-eu-1", roleARN="arn:aws:iam::123456789012:role/argocd")), manager="eks"),
        profile("eks-named", "fleet", access_provider("argo-cd-builtin-aws", "https://4567EFAB.gr7.eu-west-1.eks.amazonaws.com", ca), manager="eks"),
        profile("spoke-1", "fleet", access_provider("secretreader", "https://spoke-1.fleet.example:6443", ca,
                more=exec_extension(clusterName="spoke-1"))
                + access_provider("argo-cd-builtin-oci", "https://spoke-1.oci.example:6443", ca).replace("argo-cd-builtin-oci", "other-manager")),
        profile("spoke-2", "fleet", access_provider("ocm-token", "https://spoke-2.fleet.example:6443", ca,
                more="extensions:\n- name: clusterprofiles.multicluster.x-k8s.io/exec/additional-args\n  extension: [\"--cluster=spoke-2\"]\n"
                     "- name: clusterprofiles.multicluster.x-k8s.io/exec/additional-envs\n  extension:\n    OCM_HUB: hub-eu\n    REGION: eu\n"),
                conditions=("False", "Unreachable", "the cluster's lease expired")),
        profile("spoke-3", "fleet", access_provider("secretreader", "https://spoke-3.fleet.example:6443", ca), list_name="credentialProviders"),
    ]
    write("source-clusterprofile", kpt_package({"profiles/fleet.yaml": "---\n".join(profiles)}, typed_config(sources + SECRETREADER)))

    # skipNotReady: an unhealthy control plane waits, the Argo CD Secret it had is kept.
    unhealthy = profile("spoke-2", "fleet", access_provider("secretreader", "https://spoke-2.fleet.example:6443", ca),
                        conditions=("False", "Unreachable", "the cluster's lease expired"))
    healthy = profile("spoke-1", "fleet", access_provider("secretreader", "https://spoke-1.fleet.example:6443", ca))
    had = lambda c: argo_secret(f"cluster-{c}", c, "fleet", cluster=c, server=f"https://{c}.fleet.example:6443",
                                config={"tlsClientConfig": {"insecure": False, "caData": ca},
                                        "execProviderConfig": {"command": "/plugins/secretreader/bin/secretreader-plugin", "apiVersion": "client.authentication.k8s.io/v1", "provideClusterInfo": True}}
                                ).replace("capi-to-argocd/cluster-namespace: fleet\n", "capi-to-argocd/cluster-namespace: fleet\n    capi2argo.dev/source: clusterprofile\n")
    write("source-clusterprofile-skip-not-ready", kpt_package({"profiles/fleet.yaml": healthy + "---\n" + unhealthy, "argocd/secrets.yaml": had("spoke-2")},
                                                              typed_config(sources + "skipNotReady: true\n" + SECRETREADER)))

    # Access withdrawn (no provider advertised): the reference deletes the Secret; here a prune,
    # within the guards. A version this does not read keeps its Secret as it is.
    withdrawn = profile("spoke-2", "fleet")
    future = profile("spoke-3", "fleet", access_provider("secretreader", "https://spoke-3.fleet.example:6443", ca), api="multicluster.x-k8s.io/v1beta1")
    write("source-clusterprofile-withdrawn", kpt_package(
        {"profiles/fleet.yaml": "---\n".join([healthy, withdrawn, future]), "argocd/secrets.yaml": had("spoke-2") + "---\n" + had("spoke-3")},
        typed_config(sources + SECRETREADER)))

    # What cannot be converted, each an error naming the field: a provider the consumer has no
    # plugin for, a built-in cloud Argo CD does not have, an entry without a server; every
    # valid profile still comes out.
    bad = [
        healthy,
        profile("no-plugin", "fleet", access_provider("gcp-workload-identity", "https://no-plugin.fleet.example:6443", ca)),
        profile("no-cloud", "fleet", access_provider("argo-cd-builtin-oci", "https://no-cloud.fleet.example:6443", ca)),
        profile("no-server", "fleet", "- name: secretreader\n  cluster:\n    certificate-authority-data: " + ca + "\n"),
    ]
    write("source-clusterprofile-errors", kpt_package({"profiles/fleet.yaml": "---\n".join(bad)}, typed_config(sources + SECRETREADER)))

    # One Argo CD cluster per inventory member (kahirokunn's fork, 319dafb6): the oldest profile
    # of a member; two as old: none; one member in two namespaces: none.
    member = lambda m: f"multicluster.x-k8s.io/inventory-member-id: {m}\n"
    ap = lambda c, ns="fleet": access_provider("secretreader", f"https://{c}.{ns}.example:6443", ca)
    members = [
        profile("member-a-ocm", "fleet", ap("member-a-ocm"), labels=member("a"), created="2026-10-01T00:00:00Z"),
        profile("member-a-fleet", "fleet", ap("member-a-fleet"), labels=member("a"), created="2026-11-01T00:00:00Z", manager="kubefleet"),
        profile("member-b-ocm", "fleet", ap("member-b-ocm"), labels=member("b")),
        profile("member-b-fleet", "fleet", ap("member-b-fleet"), labels=member("b"), manager="kubefleet"),
        profile("member-c", "fleet", ap("member-c"), labels=member("c")),
        profile("member-c", "fleet-eu", ap("member-c", "fleet-eu"), labels=member("c")),
    ]
    write("source-clusterprofile-member-id", kpt_package({"profiles/fleet.yaml": "---\n".join(members)}, typed_config(sources + SECRETREADER)))

    # Long names, bounded as the reference bounds them (its TestLongClusterProfileSecretLifecycle).
    long = "s" * 246
    write("source-clusterprofile-long-names", kpt_package({"profiles/fleet.yaml": profile(long, "fleet", ap("long"))}, typed_config(sources + SECRETREADER)))

    # A CA about to expire (the kubeadm fixture's, valid until 2036-11-18): said on the
    # access provider's field, as on a kubeconfig's.
    write("source-clusterprofile-expiring", kpt_package({"profiles/fleet.yaml": healthy}, typed_config(sources + SECRETREADER)),
          now="2036-11-10T00:00:00Z")

    # v1alpha2 (cluster-inventory-api 2c9add11): the same fields under the same names, its
    # cluster a type of its own; the inventory member label is its own. Beside v1alpha1 ones.
    v2 = lambda name, providers, **kw: profile(name, "fleet", providers, api="multicluster.x-k8s.io/v1alpha2", **kw)
    both = [
        v2("gke-prod", access_provider("argo-cd-builtin-gcp", "https://34.118.0.10", ca), manager="gke-fleet",
           labels=member("gke-prod")),
        v2("spoke-1", access_provider("secretreader", "https://spoke-1.fleet.example:6443", ca,
           more=exec_extension(clusterName="spoke-1")), labels=member("spoke-1")),
        v2("spoke-1-fleet", access_provider("secretreader", "https://spoke-1.fleet.example:6443", ca), manager="kubefleet",
           labels=member("spoke-1"), created="2026-11-20T00:00:00Z"),
        healthy.replace("name: spoke-1\n", "name: spoke-9\n").replace("displayName: spoke-1", "displayName: spoke-9")
               .replace("https://spoke-1.", "https://spoke-9."),
    ]
    write("source-clusterprofile-v1alpha2", kpt_package({"profiles/fleet.yaml": "---\n".join(both)}, typed_config(sources + SECRETREADER)))

    # One profile name in two namespaces (two inventories, two clusters): the reference names
    # both `cluster-<name>`, one Secret; here that is a collision, and `namespacedNames` is the
    # setting where the names must differ from the reference's: `cluster-<namespace>-<name>`.
    twins = [healthy, profile("spoke-1", "fleet-eu", ap("spoke-1", "fleet-eu"), manager="kubefleet")]
    write("source-clusterprofile-same-name", kpt_package({"profiles/fleet.yaml": "---\n".join(twins)}, typed_config(sources + SECRETREADER)))
    write("source-clusterprofile-namespaced-names", kpt_package({"profiles/fleet.yaml": "---\n".join(twins)},
                                                                typed_config(sources + "namespacedNames: true\n" + SECRETREADER)))

    # Keys of a Secret source mean nothing for profiles: refused, never ignored.
    write("source-clusterprofile-adjusted", kpt_package({"profiles/fleet.yaml": healthy},
                                                        typed_config("sources:\n- preset: clusterprofile\n  key: kubeconfig\n" + SECRETREADER)))

    # Moving from the reference: the Secrets it wrote (its name, labels, annotations and owner;
    # its `config` as json.Marshal writes it) are adopted. Their data is what this writes, so
    # only the labels change, and a second run changes nothing.
    def reference_secret(name, server, config, uid, labels=""):
        cfg = json.dumps(config, separators=(",", ":"))
        return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-{name}\n  namespace: argocd\n"
                f"  annotations:\n    argocd.argoproj.io/cluster-profile-name: {name}\n"
                f"    clusterprofile.argocd.argoproj.io/fingerprint: 5f0c3a\n"
                f"  labels:\n    x-k8s.io/cluster-manager: open-cluster-management\n{textwrap.indent(labels, '    ')}"
                f"    argocd.argoproj.io/secret-type: cluster\n    argocd.argoproj.io/cluster-profile-name: {name}\n"
                f"  ownerReferences:\n  - apiVersion: multicluster.x-k8s.io/v1alpha1\n    kind: ClusterProfile\n    name: {name}\n"
                f"    uid: {uid}\n    controller: true\n    blockOwnerDeletion: true\n"
                f"type: Opaque\ndata:\n  name: {b64(name)}\n  server: {b64(server)}\n  config: {b64(cfg)}\n")
    reader = {"tlsClientConfig": {"insecure": False, "caData": ca},
              "execProviderConfig": {"command": "/plugins/secretreader/bin/secretreader-plugin", "apiVersion": "client.authentication.k8s.io/v1", "provideClusterInfo": True, "config": {"clusterName": "spoke-1"}}}
    gcp = {"tlsClientConfig": {"insecure": False, "caData": ca},
           "execProviderConfig": {"command": "argocd-k8s-auth", "args": ["gcp"], "apiVersion": "client.authentication.k8s.io/v1beta1"}}
    spoke = profile("spoke-1", "argocd", access_provider("secretreader", "https://spoke-1.fleet.example:6443", ca, more=exec_extension(clusterName="spoke-1")))
    gke = profile("gke-prod", "argocd", access_provider("argo-cd-builtin-gcp", "https://34.118.0.10", ca), manager="gke-fleet")
    # Owned by the profiles as the API server gives them their uids (kubectl_list's, below).
    uid = lambda i: f"6c1f-{i:04d}-4a6e-9c1d-2b7f3e5a8c90"
    written = [reference_secret("spoke-1", "https://spoke-1.fleet.example:6443", reader, uid(0)),
               reference_secret("gke-prod", "https://34.118.0.10", gcp, uid(1)).replace("open-cluster-management", "gke-fleet")]
    # What cannot be read is no withdrawn access: a list of providers that is not a list, a
    # label that is not a string; their Secrets stay. A Secret the reference wrote for another
    # profile of the name (its owner's uid is not this one's) is not taken over.
    unreadable = [
        profile("spoke-2", "argocd", "").replace("  version:", "  accessProviders: {name: secretreader}\n  version:"),
        profile("spoke-3", "argocd", access_provider("secretreader", "https://spoke-3.fleet.example:6443", ca), labels="tier: 3\n"),
        profile("spoke-4", "argocd", access_provider("argo-cd-builtin-gcp", "https://34.118.0.14", ca), manager="gke-fleet"),
    ]
    kept = lambda c, i: reference_secret(c, f"https://{c}.fleet.example:6443", reader, uid(i))
    stale = reference_secret("spoke-4", "https://34.118.0.14", gcp, "6c1f0000-0000-4000-8000-0000000000ff")
    write("source-clusterprofile-unreadable", kubectl_list(unreadable + [kept("spoke-2", 0), kept("spoke-3", 1), stale], uid_prefix="6c1f"),
          args=["plan", "--set", "sources=clusterprofile", "--set", "accessProviders=" + json.dumps(yaml_free_providers())])

    settings = ["--set", "sources=clusterprofile", "--set", "accessProviders=" + json.dumps(yaml_free_providers())]
    text = kubectl_list([spoke, gke] + written, uid_prefix="6c1f")
    write("source-clusterprofile-reference", text, args=settings)
    write("source-clusterprofile-reference-plan", text, args=["plan"] + settings)


def yaml_free_providers():
    return [{"name": "secretreader", "execConfig": {"command": "/plugins/secretreader/bin/secretreader-plugin",
             "apiVersion": "client.authentication.k8s.io/v1", "provideClusterInfo": True}}]


def seal_cases():
    """seal: sealedSecrets over a kpt package (randomness pinned by the harness, so the sealed
    bytes are the same each run): the SealedSecret where kpt writes it, the Cluster API Secrets
    left out, a second render without them changing nothing; the certificate refused when
    expired."""
    cert = (HERE.parent / "fixtures" / "sealing" / "controller.crt").read_text()
    package = {"capi/kubeadm.yaml": (PROVIDERS / "kubeadm.yaml").read_text()}
    config = config_map(seal="sealedSecrets", sealingCertificate=cert)
    write("seal-sealed-secrets", kpt_package(package, config))
    wide = config_map(seal="sealedSecrets", sealingCertificate=cert, sealScope="namespace-wide")
    write("seal-namespace-wide", kpt_package(package, wide))
    write("seal-certificate-expired", kpt_package(package, config), now="2037-01-01T00:00:00Z")


def main():
    provider_cases()
    rule_cases()
    fleet_cases()
    hostile_cases()
    security_cases()
    conversion_cases()
    validator_cases()
    source_cases()
    guard_cases()
    appset_cases()
    anchor_cases()
    expiry_cases()
    profile_cases()
    seal_cases()


if __name__ == "__main__":
    main()
