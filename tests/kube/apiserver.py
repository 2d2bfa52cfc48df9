#!/usr/bin/env python3
"""A stand-in for the few Kubernetes API endpoints the README's kubectl pipeline and the
deploy/ sync script use — NOT an API server: no authentication, no admission, no watch, Secrets
only. It lets the real kubectl run those commands here, where no API server can be had, and
records every request so a test can say exactly what was read, written and deleted.

  GET    /api, /apis, /api/v1, /version             discovery, enough for kubectl's REST mapping
  GET    /api/v1/secrets, /api/v1/namespaces/NS/secrets   lists, with ?labelSelector=k,k=v,k!=v
  POST   /api/v1/namespaces/NS/secrets               create: 409 AlreadyExists when the name is taken
  PUT    /api/v1/namespaces/NS/secrets/NAME          replace: 404 when missing, 409 Conflict when
                                                     metadata.resourceVersion is not the stored one
  DELETE /api/v1/namespaces/NS/secrets/NAME          with DeleteOptions preconditions (uid, resourceVersion)

What a real API server does beyond this (admission, defaulting, field managers, watches) is not
here: a test shows the requests kubectl makes and what they would change, nothing more.

Usage: apiserver.py STORE.json LOG.jsonl PORTFILE
  STORE.json  a JSON list of Secrets to start from (written back after every change)
  LOG.jsonl   one JSON object per request: method, path, query, body
  PORTFILE    the port it listens on (127.0.0.1, chosen by the system) is written here
"""

import base64
import http.server
import json
import sys
import threading
import urllib.parse
import uuid

STORE, LOG, PORTFILE = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
secrets = json.load(open(STORE))
version = [max([int(s["metadata"].get("resourceVersion", "0")) for s in secrets] + [100])]

# Enough OpenAPI v3 for kubectl's validation, should a command ask for it.
OPENAPI_ROOT = {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=stand-in"}}}
OPENAPI_V1 = {
    "openapi": "3.0.0",
    "info": {"title": "Kubernetes", "version": "v1.32.0-stand-in"},
    "paths": {
        "/api/v1/namespaces/{namespace}/secrets/{name}": {
            "patch": {
                "operationId": "patchCoreV1NamespacedSecret",
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": "", "kind": "Secret", "version": "v1"},
            },
        },
    },
    "components": {"schemas": {}},
}

RESOURCES = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "v1",
    "resources": [{
        "name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    }],
}


def matches(secret, selector):
    labels = secret["metadata"].get("labels") or {}
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
        body = self.body() if method in ("DELETE", "POST", "PUT") else b""
        with lock:
            with open(LOG, "a") as log:
                log.write(json.dumps({"method": method, "path": url.path, "query": query,
                                      "body": body.decode(errors="replace")}) + "\n")
            try:
                code, obj = self.route(method, url.path.rstrip("/").split("/"), query, body)
            except ValueError as err:
                code, obj = status(400, "BadRequest", f"the body is not JSON: {err}")
            if method in ("POST", "PUT", "DELETE") and code < 300:
                json.dump(secrets, open(STORE, "w"), indent=1)
        self.answer(code, obj)

    def route(self, method, parts, query, body):
        path = "/".join(parts)
        if method == "GET" and path == "/version":
            return 200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-stand-in"}
        if method == "GET" and path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if method == "GET" and path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        if method == "GET" and path == "/api/v1":
            return 200, RESOURCES
        if method == "GET" and path == "/openapi/v3":
            return 200, OPENAPI_ROOT
        if method == "GET" and path == "/openapi/v3/api/v1":
            return 200, OPENAPI_V1
        # /api/v1/secrets or /api/v1/namespaces/NS/secrets[/NAME]
        if parts[:3] == ["", "api", "v1"] and parts[3:4] == ["secrets"] and method == "GET":
            return 200, self.listed(None, query)
        if parts[:4] == ["", "api", "v1", "namespaces"] and len(parts) >= 6 and parts[5] == "secrets":
            ns = parts[4]
            if len(parts) == 6 and method == "GET":
                return 200, self.listed(ns, query)
            if len(parts) == 6 and method == "POST":
                name = (json.loads(body).get("metadata") or {}).get("name", "")
                return self.one(method, ns, name, query, body)
            if len(parts) == 7:
                return self.one(method, ns, parts[6], query, body)
        return status(404, "NotFound", f"the stand-in serves no {method} {path}")

    def listed(self, ns, query):
        items = [s for s in secrets if (ns is None or s["metadata"].get("namespace") == ns)
                 and matches(s, query.get("labelSelector", ""))]
        return {"kind": "SecretList", "apiVersion": "v1",
                "metadata": {"resourceVersion": str(version[0])}, "items": items}

    def one(self, method, ns, name, query, body):
        found = [s for s in secrets if s["metadata"].get("namespace") == ns and s["metadata"]["name"] == name]
        if method == "GET":
            return (200, found[0]) if found else status(404, "NotFound", f'secrets "{name}" not found')
        if method == "DELETE":
            if not found:
                return status(404, "NotFound", f'secrets "{name}" not found')
            options = json.loads(body or b"{}")
            pre = options.get("preconditions") or {}
            meta = found[0]["metadata"]
            if "uid" in pre and pre["uid"] != meta.get("uid"):
                return status(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}")
            if "resourceVersion" in pre and pre["resourceVersion"] != meta.get("resourceVersion"):
                return status(409, "Conflict", "Precondition failed: resourceVersion")
            secrets.remove(found[0])
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                         "details": {"name": name, "kind": "secrets", "uid": meta.get("uid")}}
        if method in ("POST", "PUT"):
            obj = json.loads(body)
            meta = dict(obj.get("metadata") or {})
            if method == "POST" and found:
                return status(409, "AlreadyExists", f'secrets "{name}" already exists')
            if method == "PUT":
                if not found:
                    return status(404, "NotFound", f'secrets "{name}" not found')
                if meta.get("resourceVersion") not in (None, found[0]["metadata"]["resourceVersion"]):
                    return status(409, "Conflict", f'Operation cannot be fulfilled on secrets "{name}": the object has been modified')
            data = dict(obj.get("data") or {})
            for k, v in (obj.get("stringData") or {}).items():
                data[k] = base64.b64encode(v.encode()).decode()
            version[0] += 1
            meta["namespace"] = ns
            meta["name"] = name
            meta["uid"] = found[0]["metadata"]["uid"] if found else str(uuid.uuid4())
            meta["resourceVersion"] = str(version[0])
            if found:
                secrets.remove(found[0])
            stored = {"apiVersion": "v1", "kind": "Secret", "metadata": meta,
                      "type": obj.get("type", "Opaque"), "data": data}
            secrets.append(stored)
            return (201 if method == "POST" else 200), stored
        return status(405, "MethodNotAllowed", method)

    def do_GET(self):
        self.handle_request("GET")

    def do_POST(self):
        self.handle_request("POST")

    def do_PUT(self):
        self.handle_request("PUT")

    def do_DELETE(self):
        self.handle_request("DELETE")

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
