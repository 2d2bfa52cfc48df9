#!/usr/bin/env python3
"""The peer a user would write instead of capi2argo: Python and PyYAML (its C loader and dumper,
libyaml), the same ResourceList in and the Argo CD cluster Secrets added, for the kubeadm-style
kubeconfigs (client certificate or token) that make up most of the fleet. No validation, no
results, no exec plugins, no file layout: a lower bound of what such a script costs.

Usage: python3 bench/peer.py < fleet.yaml > out.yaml
"""

import base64
import json
import sys

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def by_name(entries, name):
    return next(e for e in entries if e.get("name") == name)


def main():
    resource_list = yaml.load(sys.stdin, Loader=LOADER)
    items = resource_list.get("items") or []
    out = list(items)
    for item in items:
        meta = item.get("metadata") or {}
        name = meta.get("name", "")
        labels = meta.get("labels") or {}
        if item.get("kind") != "Secret" or not name.endswith("-kubeconfig") \
                or "cluster.x-k8s.io/cluster-name" not in labels:
            continue
        value = (item.get("data") or {}).get("value")
        if not value:
            continue
        kubeconfig = yaml.load(base64.b64decode(value), Loader=LOADER)
        context = by_name(kubeconfig["contexts"], kubeconfig["current-context"])["context"]
        cluster = by_name(kubeconfig["clusters"], context["cluster"])["cluster"]
        user = by_name(kubeconfig.get("users") or [], context["user"]).get("user") or {}
        tls = {"insecure": bool(cluster.get("insecure-skip-tls-verify", False))}
        for key, field in (("certData", "client-certificate-data"), ("keyData", "client-key-data"),
                           ("caData", "certificate-authority-data")):
            if user.get(field) or cluster.get(field):
                tls[key] = user.get(field) or cluster.get(field)
        config = {"tlsClientConfig": tls}
        if user.get("token"):
            config["bearerToken"] = user["token"]
        cluster_name = name[: -len("-kubeconfig")]
        out.append({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": f"cluster-{cluster_name}", "namespace": "argocd", "labels": {
                "argocd.argoproj.io/secret-type": "cluster", "capi-to-argocd/owned": "true",
                "capi-to-argocd/cluster-secret-name": name,
                "capi-to-argocd/cluster-namespace": meta.get("namespace", "default")}},
            "type": "Opaque",
            "stringData": {"name": cluster_name, "server": cluster["server"], "config": json.dumps(config, indent=2)},
        })
    resource_list["items"] = out
    yaml.dump(resource_list, sys.stdout, Dumper=DUMPER, sort_keys=False)


if __name__ == "__main__":
    main()
