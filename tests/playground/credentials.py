#!/usr/bin/env python3
"""Credentials in YAML/JSON texts, found without capi2argo: the playground test's own answer.

Reads a JSON object {name: text} on standard input and writes {name: [credential, ...]}: every
string a screen must not show, by the issue's list, found with PyYAML (libyaml), not with the
function's reader or its credential rule, so the test checks the page's masking against an
independent reading:

- in a kubeconfig (kind Config, or a mapping with users): each user's token, password and
  client-key-data, auth-provider settings and exec env values whose names say they are secret
  (not a file, an ID or a switch), the values of secret-bearing exec flags, and the
  user:password of a server or proxy URL;
- in an Argo CD config (JSON with bearerToken, tlsClientConfig...): bearerToken, password,
  tlsClientConfig.keyData, secret exec env values and flags, a proxy URL's user:password;
- in a Secret: the values of keys that hold tokens, passwords and keys, and any value holding a
  kubeconfig or a config with credentials, both as the text and as the base64 the Secret holds;
- the same inside kubectl's last-applied-configuration annotation.

A text PyYAML cannot read gives no credentials (and is named on standard error).
"""

import base64
import binascii
import json
import re
import sys

import yaml

SECRET_KEYS = {"token", "password", "bearerToken", "keyData", "client-key-data", "tls.key",
               "ssh-privatekey", "sshPrivateKey", "tlsClientCertKey", "githubAppPrivateKey"}
SECRET_WORDS = re.compile(r"secret|password|token|key|credential", re.I)
# Names that mention a secret but hold none: a file or directory path, an ID, a switch, claims.
NOT_SECRET = re.compile(r"(_|-)(file|path|dir|id|enabled|claims)$", re.I)


def secret_name(name):
    return bool(SECRET_WORDS.search(name)) and not NOT_SECRET.search(name)


def userinfo(url):
    m = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#]*)@", url or "")
    return [m.group(1)] if isinstance(url, str) and m else []


def flag_values(args):
    found, args = [], [a for a in (args or []) if isinstance(a, str)]
    for i, a in enumerate(args):
        if a == "--":
            break
        if not a.startswith("-") or not secret_name(a.split("=", 1)[0]):
            continue
        if "=" in a:
            found.append(a.split("=", 1)[1])
        elif i + 1 < len(args):
            found.append(args[i + 1])
    return found


def kubeconfig(doc):
    found = []
    for c in doc.get("clusters") or []:
        cluster = (c or {}).get("cluster") or {}
        if isinstance(cluster, dict):
            found += userinfo(cluster.get("server")) + userinfo(cluster.get("proxy-url"))
    for u in doc.get("users") or []:
        user = (u or {}).get("user") or {}
        if not isinstance(user, dict):
            continue
        found += [user[k] for k in ("token", "password", "client-key-data") if isinstance(user.get(k), str)]
        exec_ = user.get("exec") or {}
        if isinstance(exec_, dict):
            for e in exec_.get("env") or []:
                if isinstance(e, dict) and secret_name(str(e.get("name", ""))) and isinstance(e.get("value"), str):
                    found.append(e["value"])
            found += flag_values(exec_.get("args"))
        provider = user.get("auth-provider") or {}
        if isinstance(provider, dict) and isinstance(provider.get("config"), dict):
            found += [v for k, v in provider["config"].items() if isinstance(v, str) and secret_name(str(k))]
    return found


def cluster_config(doc):
    found = [doc[k] for k in ("bearerToken", "password") if isinstance(doc.get(k), str)]
    tls = doc.get("tlsClientConfig") or {}
    if isinstance(tls, dict) and isinstance(tls.get("keyData"), str):
        found.append(tls["keyData"])
    exec_ = doc.get("execProviderConfig") or {}
    if isinstance(exec_, dict):
        env = exec_.get("env") or {}
        if isinstance(env, dict):
            found += [v for k, v in env.items() if isinstance(v, str) and secret_name(str(k))]
        found += flag_values(exec_.get("args"))
    return found + userinfo(doc.get("proxyUrl"))


def inside(text):
    """The credentials of a text that is itself a kubeconfig or an Argo CD config."""
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return []
    if not isinstance(doc, dict):
        return []
    if doc.get("kind") == "Config" or "users" in doc:
        return kubeconfig(doc)
    if {"bearerToken", "tlsClientConfig", "execProviderConfig", "password"} & set(doc):
        return cluster_config(doc)
    return []


def decode(value):
    try:
        return base64.b64decode(re.sub(r"\s", "", value), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def walk(node, found, seen):
    # Aliases make shared objects (a billion laughs is a few shared lists): each is read once.
    if not isinstance(node, (list, dict)) or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, list):
        for item in node:
            walk(item, found, seen)
        return
    if node.get("kind") == "Config" or ("users" in node and "clusters" in node):
        found += kubeconfig(node)
    if node.get("kind") == "Secret":
        for section in ("data", "stringData"):
            values = node.get(section)
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if not isinstance(value, str):
                    continue
                # The page shows a Secret's text as it is: base64 stays base64 on screen, so
                # what must not show is the base64 of a secret and the credentials of a
                # kubeconfig or config written out as text.
                text = decode(value) if section == "data" else value
                inner = inside(text) if text else []
                found += inner
                if str(key) in SECRET_KEYS or (section == "data" and inner):
                    found.append(value)
    annotations = (node.get("metadata") or {}).get("annotations") if isinstance(node.get("metadata"), dict) else None
    if isinstance(annotations, dict):
        copy = annotations.get("kubectl.kubernetes.io/last-applied-configuration")
        if isinstance(copy, str):
            try:
                walk(yaml.safe_load(copy), found, seen)
            except (yaml.YAMLError, RecursionError, ValueError):
                pass
    for value in node.values():
        walk(value, found, seen)


def credentials(text):
    found, seen = [], set()
    for doc in yaml.safe_load_all(text):
        walk(doc, found, seen)
    # Each once, longest first; a credential is a string with something in it.
    return sorted({c for c in found if isinstance(c, str) and c.strip()}, key=lambda c: (-len(c), c))


def main():
    texts = json.load(sys.stdin)
    out = {}
    for name, text in texts.items():
        try:
            out[name] = credentials(text)
        except (yaml.YAMLError, RecursionError, ValueError) as e:
            first = (str(e).splitlines() or [type(e).__name__])[0]
            print(f"credentials.py: {name}: PyYAML cannot read it ({first})", file=sys.stderr)
            out[name] = []
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
