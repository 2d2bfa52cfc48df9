#!/usr/bin/env python3
"""A stand-in for the few Kubernetes API endpoints the README's kubectl pipeline, the deploy/
sync script and the deploy/ install commands use — NOT an API server: no admission, no
defaulting, no schema, no watch, no field managers. It lets the real kubectl run those commands
here, where no API server can be had, and records every request so a test can say exactly what
was read, written and deleted.

Resources (RESOURCES below), each kept as the JSON objects it was given or sent:
  v1: secrets, configmaps, serviceaccounts; cluster.x-k8s.io/v1beta1: clusters;
  controlplane.cluster.x-k8s.io/v1beta1: kubeadmcontrolplanes; batch/v1: cronjobs, jobs;
  rbac.authorization.k8s.io/v1: roles, rolebindings, clusterroles, clusterrolebindings.

  GET    /api, /apis, /api/v1, /apis/G, /apis/G/V, /version   discovery, for kubectl's REST mapping
  GET    /openapi/v3[/...]        only enough to say every create and replace takes fieldValidation
                                  (kubectl then leaves validation to the server; nothing is validated)
  GET    .../R, .../namespaces/NS/R         lists, with ?labelSelector=k,k=v,k!=v (no paging)
  GET    .../namespaces/NS/R/NAME           one object
  POST   .../namespaces/NS/R, .../R         create: 409 AlreadyExists when the name is taken
  PUT    .../R/NAME                          replace: 404 when missing, 409 Conflict when
                                             metadata.resourceVersion is not the stored one
  DELETE .../R/NAME                          with DeleteOptions preconditions (uid, resourceVersion)

A Secret's stringData is folded into data as the API server does; every write gets a new
resourceVersion and a create a uid. Nothing else a real API server does (admission, defaulting,
conversion between versions, garbage collection) happens here.

Usage: apiserver.py STORE.json LOG.jsonl PORTFILE [--rules RULES.json] [--token TOKEN]
                    [--tls CERT KEY]
  STORE.json  a JSON list of objects to start from (written back after every change)
  LOG.jsonl   one JSON object per request: method, path, query, body, user
  PORTFILE    the port it listens on (127.0.0.1, chosen by the system) is written here
  --rules     RBAC as the tests derive it from Roles and bindings: a JSON list of
              {"namespace": NS or null for cluster-wide, "apiGroups", "resources", "verbs",
              "resourceNames"?}; a resource request no rule allows is answered 403 Forbidden,
              as the API server's RBAC authorizer would (discovery and /version stay open, as
              system:discovery allows them)
  --token     every request must carry `Authorization: Bearer TOKEN` (401 otherwise)
  --tls       serve HTTPS with this certificate and key (as in-cluster clients expect)
"""

import argparse
import base64
import http.server
import json
import ssl
import threading
import urllib.parse
import uuid

parser = argparse.ArgumentParser()
parser.add_argument("store")
parser.add_argument("log")
parser.add_argument("portfile")
parser.add_argument("--rules")
parser.add_argument("--token")
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
args = parser.parse_args()

lock = threading.Lock()
objects = json.load(open(args.store))
rules = json.load(open(args.rules)) if args.rules else None
version = [max([int(o["metadata"].get("resourceVersion", "0")) for o in objects] + [100])]

# (group, version, plural, kind, namespaced)
RESOURCES = [
    ("", "v1", "secrets", "Secret", True),
    ("", "v1", "configmaps", "ConfigMap", True),
    ("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("cluster.x-k8s.io", "v1beta1", "clusters", "Cluster", True),
    ("controlplane.cluster.x-k8s.io", "v1beta1", "kubeadmcontrolplanes", "KubeadmControlPlane", True),
    ("batch", "v1", "cronjobs", "CronJob", True),
    ("batch", "v1", "jobs", "Job", True),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
]
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
GROUPS = sorted({(g, v) for g, v, *_ in RESOURCES if g})


def resource_list(group, ver):
    return {
        "kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": f"{group}/{ver}" if group else ver,
        "resources": [{"name": p, "singularName": k.lower(), "namespaced": ns, "kind": k, "verbs": VERBS}
                      for g, v, p, k, ns in RESOURCES if (g, v) == (group, ver)],
    }


def group_entry(group, ver):
    gv = {"groupVersion": f"{group}/{ver}", "version": ver}
    return {"name": group, "versions": [gv], "preferredVersion": gv}


def openapi_doc(group, ver):
    """Every collection's POST and every object's PUT take fieldValidation, so kubectl sends
    ?fieldValidation=Strict and validates nothing itself (the stand-in validates nothing)."""
    base = f"/apis/{group}/{ver}" if group else f"/api/{ver}"
    paths = {}
    for g, v, plural, kind, namespaced in RESOURCES:
        if (g, v) != (group, ver):
            continue
        gvk = {"group": g, "kind": kind, "version": v}
        param = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
        prefix = f"{base}/namespaces/{{namespace}}/{plural}" if namespaced else f"{base}/{plural}"
        for path, method in ((prefix, "post"), (prefix + "/{name}", "put"), (prefix + "/{name}", "patch")):
            paths.setdefault(path, {})[method] = {
                "parameters": param, "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": {"post": "post", "put": "put", "patch": "patch"}[method],
                "x-kubernetes-group-version-kind": gvk,
            }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-stand-in"},
            "paths": paths, "components": {"schemas": {}}}


def openapi_root():
    gvs = [("", "v1")] + GROUPS
    return {"paths": {(f"apis/{g}/{v}" if g else f"api/{v}"):
                      {"serverRelativeURL": f"/openapi/v3/{'apis/' + g if g else 'api'}/{v}?hash=stand-in"}
                      for g, v in gvs}}


def matches(obj, selector):
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v:
                return False
        elif term not in labels:
            return False
    return True


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def group_of(obj):
    api = obj.get("apiVersion", "")
    return api.split("/")[0] if "/" in api else ""


def allowed(verb, group, plural, namespace, name):
    """RBAC's rule matching (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac): any rule that
    covers the verb, the group, the resource, the name and the namespace allows the request."""
    if rules is None:
        return True
    for rule in rules:
        if rule.get("namespace") not in (None, namespace):
            continue
        if not any(g in ("*", group) for g in rule.get("apiGroups", [])):
            continue
        if not any(r in ("*", plural) for r in rule.get("resources", [])):
            continue
        if not any(v in ("*", verb) for v in rule.get("verbs", [])):
            continue
        names = rule.get("resourceNames") or []
        if names and name not in names:
            continue
        return True
    return False


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_request(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        body = self.body() if method in ("DELETE", "POST", "PUT", "PATCH") else b""
        auth = self.headers.get("Authorization", "")
        with lock:
            with open(args.log, "a") as log:
                log.write(json.dumps({"method": method, "path": url.path, "query": query,
                                      "body": body.decode(errors="replace"),
                                      "authenticated": args.token is not None and auth == f"Bearer {args.token}"}) + "\n")
            if args.token is not None and auth != f"Bearer {args.token}":
                code, obj = status(401, "Unauthorized", "Unauthorized")
            else:
                try:
                    code, obj = self.route(method, url.path.rstrip("/").split("/"), query, body)
                except ValueError as err:
                    code, obj = status(400, "BadRequest", f"the body is not JSON: {err}")
            if method in ("POST", "PUT", "DELETE") and code < 300:
                json.dump(objects, open(args.store, "w"), indent=1)
        self.answer(code, obj)

    def route(self, method, parts, query, body):
        path = "/".join(parts)
        if method == "GET":
            if path == "/version":
                return 200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-stand-in"}
            if path == "/api":
                return 200, {"kind": "APIVersions", "versions": ["v1"],
                             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
            if path == "/apis":
                return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_entry(g, v) for g, v in GROUPS]}
            if path == "/api/v1":
                return 200, resource_list("", "v1")
            if len(parts) == 3 and parts[1] == "apis" and any(g == parts[2] for g, _ in GROUPS):
                g, v = next((g, v) for g, v in GROUPS if g == parts[2])
                return 200, {"kind": "APIGroup", "apiVersion": "v1", **group_entry(g, v)}
            if len(parts) == 4 and parts[1] == "apis" and (parts[2], parts[3]) in GROUPS:
                return 200, resource_list(parts[2], parts[3])
            if path == "/openapi/v3":
                return 200, openapi_root()
            if path == "/openapi/v3/api/v1":
                return 200, openapi_doc("", "v1")
            if len(parts) == 6 and parts[1:3] == ["openapi", "v3"] and parts[3] == "apis" and (parts[4], parts[5]) in GROUPS:
                return 200, openapi_doc(parts[4], parts[5])
        # /api/v1/R..., /apis/G/V/R..., each optionally under namespaces/NS
        if parts[1:3] == ["api", "v1"]:
            group, ver, rest = "", "v1", parts[3:]
        elif parts[1:2] == ["apis"] and len(parts) >= 5 and (parts[2], parts[3]) in GROUPS:
            group, ver, rest = parts[2], parts[3], parts[4:]
        else:
            return status(404, "NotFound", f"the stand-in serves no {method} {path}")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        found = [r for r in RESOURCES if (r[0], r[1], r[2]) == (group, ver, rest[0] if rest else None)]
        if not found or len(rest) > 2 or (ns is not None and not found[0][4]):
            return status(404, "NotFound", f"the stand-in serves no {method} {path}")
        _, _, plural, kind, namespaced = found[0]
        name = rest[1] if len(rest) == 2 else None
        if method == "POST" and name is None:
            name = (json.loads(body).get("metadata") or {}).get("name", "")
            verb = "create"
        else:
            verb = {"GET": "get" if name else "list", "PUT": "update", "PATCH": "patch",
                    "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())
        if not allowed(verb, group, plural, ns, name):
            scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
            return status(403, "Forbidden", f'{plural}{"." + group if group else ""} is forbidden: '
                          f'the stand-in\'s rules do not let this client {verb} resource "{plural}" in API group "{group}" {scope}')
        if verb == "list":
            return 200, self.listed(group, kind, ns, query)
        if namespaced and ns is None:
            return status(404, "NotFound", f"the stand-in serves no {method} {path}")
        return self.one(method, group, kind, plural, ns, name, body)

    def listed(self, group, kind, ns, query):
        items = [o for o in objects if group_of(o) == group and o.get("kind") == kind
                 and (ns is None or o["metadata"].get("namespace") == ns)
                 and matches(o, query.get("labelSelector", ""))]
        return {"kind": f"{kind}List", "apiVersion": "v1",
                "metadata": {"resourceVersion": str(version[0])}, "items": items}

    def one(self, method, group, kind, plural, ns, name, body):
        found = [o for o in objects if group_of(o) == group and o.get("kind") == kind
                 and o["metadata"].get("namespace") == ns and o["metadata"]["name"] == name]
        if method == "GET":
            return (200, found[0]) if found else status(404, "NotFound", f'{plural} "{name}" not found')
        if method == "DELETE":
            if not found:
                return status(404, "NotFound", f'{plural} "{name}" not found')
            options = json.loads(body or b"{}")
            pre = options.get("preconditions") or {}
            meta = found[0]["metadata"]
            if "uid" in pre and pre["uid"] != meta.get("uid"):
                return status(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")
            if "resourceVersion" in pre and pre["resourceVersion"] != meta.get("resourceVersion"):
                return status(409, "Conflict", "Precondition failed: resourceVersion")
            objects.remove(found[0])
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                         "details": {"name": name, "kind": plural, "uid": meta.get("uid")}}
        if method in ("POST", "PUT"):
            obj = json.loads(body)
            meta = dict(obj.get("metadata") or {})
            if method == "POST" and found:
                return status(409, "AlreadyExists", f'{plural} "{name}" already exists')
            if method == "PUT":
                if not found:
                    return status(404, "NotFound", f'{plural} "{name}" not found')
                if meta.get("resourceVersion") not in (None, found[0]["metadata"]["resourceVersion"]):
                    return status(409, "Conflict", f'Operation cannot be fulfilled on {plural} "{name}": the object has been modified')
            version[0] += 1
            if ns is not None:
                meta["namespace"] = ns
            meta["name"] = name
            meta["uid"] = found[0]["metadata"]["uid"] if found else str(uuid.uuid4())
            meta["resourceVersion"] = str(version[0])
            stored = dict(obj, metadata=meta)
            if kind == "Secret":
                data = dict(obj.get("data") or {})
                for k, v in (obj.get("stringData") or {}).items():
                    data[k] = base64.b64encode(v.encode()).decode()
                stored = {"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                          "type": obj.get("type", "Opaque"), "data": data}
            if found:
                objects.remove(found[0])
            objects.append(stored)
            return (201 if method == "POST" else 200), stored
        return status(405, "MethodNotAllowed", f"the stand-in does not serve {method}")

    def do_GET(self):
        self.handle_request("GET")

    def do_POST(self):
        self.handle_request("POST")

    def do_PUT(self):
        self.handle_request("PUT")

    def do_PATCH(self):
        self.handle_request("PATCH")

    def do_DELETE(self):
        self.handle_request("DELETE")

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def finish_request(self, request, client_address):
        # The TLS handshake in the connection's own thread: one slow client never holds up
        # the others' accept.
        if context is not None:
            try:
                request = context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


context = None
if args.tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*args.tls)
server = Server(("127.0.0.1", 0), Handler)
with open(args.portfile, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
