#!/usr/bin/env python3
"""Every Argo CD cluster Secret the golden cases expect, checked against Argo CD and Kubernetes.

The judges are theirs, not ours: the YAML is read by libyaml (PyYAML's C loader), the `config`
JSON against the field names and Go types argo-cd declares (tests/argocd/reference.json, which
names its sources), names, label and annotation keys and values against apimachinery's rules
(written here from k8s.io/apimachinery pkg/api/validate/content/kube.go and
pkg/util/validation/validation.go: IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue,
TotalAnnotationSizeLimitB), exec plugins against client-go's accepted apiVersions and what
`argocd-k8s-auth` takes. Nothing here imports or repeats the function's own code.

Usage: conformance.py tests/golden   (prints a cargo-style result line; exit 1 on a finding)
"""

import base64
import binascii
import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import yaml

REFERENCE = json.loads((Path(__file__).parent / "reference.json").read_text())

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
TOTAL_ANNOTATION_SIZE = 256 * 1024


def subdomain(text):
    return len(text) <= 253 and DNS1123_SUBDOMAIN.match(text) is not None


def qualified_name(key):
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and QUALIFIED_NAME.match(name) is not None


def label_value(value):
    return isinstance(value, str) and len(value) <= 63 and LABEL_VALUE.match(value) is not None


def go_typed(value, go_type):
    """Whether encoding/json would unmarshal `value` into a Go field of this type."""
    if go_type == "string":
        return isinstance(value, str)
    if go_type == "bool":
        return isinstance(value, bool)
    if go_type == "bytes":
        if not isinstance(value, str):
            return False
        try:
            base64.b64decode(value, validate=True)
            return True
        except (binascii.Error, ValueError):
            return False
    if go_type == "[]string":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if go_type == "map[string]string":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if go_type == "object":
        return isinstance(value, dict)
    return isinstance(value, dict)


def check_struct(value, type_name, path, problems):
    fields = REFERENCE[type_name]
    if not isinstance(value, dict):
        problems.append(f"{path}: not an object")
        return
    for key, field_value in value.items():
        if key not in fields:
            # Go's decoder would drop it without a word (or, differing only in case, take it).
            problems.append(f"{path}.{key}: no such field in argo-cd's {type_name}")
            continue
        go_type = fields[key]
        if go_type in REFERENCE:
            check_struct(field_value, go_type, f"{path}.{key}", problems)
        elif not go_typed(field_value, go_type):
            problems.append(f"{path}.{key}: not a {go_type}")


def check_config(config, problems):
    check_struct(config, "ClusterConfig", "config", problems)
    tls = config.get("tlsClientConfig") or {}
    if "tlsClientConfig" not in config or "insecure" not in tls:
        problems.append("config.tlsClientConfig.insecure: missing (Argo CD always writes it)")
    if tls.get("insecure") and tls.get("caData"):
        problems.append("config.tlsClientConfig: insecure together with caData (client-go refuses it)")
    for key in ("certData", "keyData", "caData"):
        if isinstance(tls.get(key), str):
            pem = base64.b64decode(tls[key])
            if b"-----BEGIN " not in pem:
                problems.append(f"config.tlsClientConfig.{key}: not PEM once decoded")
    proxy = config.get("proxyUrl")
    if isinstance(proxy, str) and urlsplit(proxy).scheme not in REFERENCE["proxySchemes"]:
        problems.append("config.proxyUrl: a scheme Argo CD's ParseProxyUrl refuses")
    execp = config.get("execProviderConfig")
    if isinstance(execp, dict):
        version = execp.get("apiVersion")
        if version not in REFERENCE["execApiVersions"]:
            problems.append(f"config.execProviderConfig.apiVersion: {version!r} is not one client-go accepts")
        if execp.get("command") == "argocd-k8s-auth":
            args = execp.get("args") or []
            if version != REFERENCE["argocdK8sAuthApiVersion"]:
                problems.append("config.execProviderConfig.apiVersion: argocd-k8s-auth prints v1beta1")
            if not args or args[0] not in ("aws", "gcp", "azure"):
                problems.append("config.execProviderConfig.args: not an argocd-k8s-auth subcommand")
            elif args[0] == "aws":
                flags = [a for a in args[1:] if a.startswith("-")]
                if any(f not in REFERENCE["argocdK8sAuthAwsFlags"] for f in flags):
                    problems.append("config.execProviderConfig.args: a flag argocd-k8s-auth aws does not take")
            elif args[0] == "azure":
                login = (execp.get("env") or {}).get("AAD_LOGIN_METHOD", "workloadidentity")
                if login not in REFERENCE["argocdK8sAuthAzureUnattendedLogins"]:
                    problems.append(f"config.execProviderConfig.env.AAD_LOGIN_METHOD: {login!r} cannot run in Argo CD")
            elif len(args) > 1:
                problems.append("config.execProviderConfig.args: argocd-k8s-auth gcp takes no arguments")
    aws = config.get("awsAuthConfig")
    if isinstance(aws, dict) and not aws.get("clusterName"):
        problems.append("config.awsAuthConfig.clusterName: missing")


def secret_data(secret):
    data = {}
    for key, value in (secret.get("data") or {}).items():
        data[key] = base64.b64decode(value).decode()
    data.update(secret.get("stringData") or {})
    return data


def check_secret(secret):
    problems = []
    meta = secret.get("metadata") or {}
    if not subdomain(str(meta.get("name", ""))):
        problems.append("metadata.name: not a DNS-1123 subdomain")
    if not DNS1123_LABEL.match(str(meta.get("namespace", ""))):
        problems.append("metadata.namespace: not a DNS-1123 label")
    for key, value in (meta.get("labels") or {}).items():
        if not qualified_name(key):
            problems.append(f"metadata.labels: key {key!r} is not a qualified name")
        if not label_value(value):
            problems.append(f"metadata.labels.{key}: value is not a valid label value")
    annotations = meta.get("annotations") or {}
    for key, value in annotations.items():
        if not qualified_name(key):
            problems.append(f"metadata.annotations: key {key!r} is not a qualified name")
        if not isinstance(value, str):
            problems.append(f"metadata.annotations.{key}: not a string")
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE:
        problems.append("metadata.annotations: over 256 KiB in total")
    data = secret_data(secret)
    for key in data:
        if key not in REFERENCE["secretDataKeys"]:
            problems.append(f"data.{key}: a key Argo CD's SecretToCluster does not read")
    server = data.get("server", "")
    if urlsplit(server).scheme not in ("https", "http") or not urlsplit(server).hostname:
        problems.append("data.server: not an http(s) URL with a host")
    if "config" in data:
        try:
            config = json.loads(data["config"])
        except json.JSONDecodeError:
            problems.append("data.config: not JSON")
        else:
            check_config(config, problems)
    for key in ("clusterResources",):
        if key in data and data[key] not in ("true", "false"):
            problems.append(f"data.{key}: Argo CD compares it with \"true\"")
    if "shard" in data and not re.match(r"^-?\d+$", data["shard"]):
        problems.append("data.shard: not an integer (strconv.Atoi)")
    return problems


def argo_secrets(document):
    items = document.get("items") if isinstance(document, dict) and "items" in document else [document]
    for item in items or []:
        if not isinstance(item, dict) or item.get("kind") != "Secret":
            continue
        meta = item.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if isinstance(labels, dict) and labels.get("argocd.argoproj.io/secret-type") == "cluster" and labels.get("capi-to-argocd/owned") == "true":
            yield item


def main():
    root = Path(sys.argv[1])
    checked, failed = 0, 0
    for output in sorted(root.glob("*/expected/output.yaml")):
        text = output.read_text()
        try:
            documents = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
        except yaml.YAMLError:
            continue  # cases about unreadable input print it back as it came
        for document in documents:
            for secret in argo_secrets(document):
                checked += 1
                problems = check_secret(secret)
                if problems:
                    failed += 1
                    name = (secret.get("metadata") or {}).get("name")
                    for p in problems:
                        print(f"{output.parent.parent.name}: Secret {name}: {p}")
    status = "ok" if failed == 0 and checked > 0 else "FAILED"
    print(f"argocd conformance: test result: {status}. {checked - failed} passed; {failed} failed; 0 ignored")
    sys.exit(0 if status == "ok" else 1)


if __name__ == "__main__":
    main()
