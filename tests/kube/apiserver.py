#!/usr/bin/env python3
"""A stand-in for the Kubernetes API endpoints that the README's kubectl pipeline, the deploy/
sync script, the deploy/ install commands and a kube-rs controller use. It is NOT an API server.
It lets the real kubectl and kube-rs clients run here, where no API server can be had, and it
records every request, so that a test can say exactly what was read, written, watched and deleted.
What it answers was compared with a real kube-apiserver v1.32 (status codes, Status objects and
their messages, list metadata, watch framing, bookmarks, managedFields, validation errors).
tests/kube/selftest.py checks each behaviour below.

Resources (RESOURCES below), each kept as the JSON objects it was given or sent:
  v1: secrets, configmaps, serviceaccounts (+ serviceaccounts/token), services, namespaces (the
      four every cluster has and each one an object given lives in exist from the start; nothing
      is refused for its namespace's absence);
  apps/v1: deployments (+ /status); policy/v1: poddisruptionbudgets (+ /status);
  networking.k8s.io/v1: networkpolicies;
  cluster.x-k8s.io: clusters (+ clusters/status), in the versions --capi names;
  controlplane.cluster.x-k8s.io/v1beta1: kubeadmcontrolplanes (+ /status); batch/v1: cronjobs, jobs;
  argoproj.io/v1alpha1: applicationsets, applications, appprojects (Argo CD's CRDs; --no-argocd
  serves none);
  multicluster.x-k8s.io: clusterprofiles (+ /status), in the versions --profiles names (--no-profiles: none);
  rbac.authorization.k8s.io/v1: roles, rolebindings, clusterroles, clusterrolebindings;
  coordination.k8s.io/v1: leases; events.k8s.io/v1: events;
  authentication.k8s.io/v1: selfsubjectreviews (create only).

  GET    /api, /apis, /api/v1, /apis/G, /apis/G/V, /version   legacy discovery (APIResourceList per
                                  group version; a client asking for aggregated discovery gets the
                                  legacy form, and kubectl falls back to it); an unserved group is
                                  the real server's plain-text "404 page not found"
  GET    /openapi/v3[/...]        only enough to say every create and replace takes fieldValidation
                                  (so kubectl leaves validation to the server)
  GET    /healthz, /livez, /readyz          ok
  GET    .../R, .../namespaces/NS/R         lists: labelSelector (=, ==, !=, in, notin, exists,
                                  !exists), fieldSelector (metadata.name, metadata.namespace; a
                                  Secret's type), limit + continue (pages of one snapshot, kept
                                  consistent from the event history; a token older than the
                                  history is 410 Expired, as after an etcd compaction),
                                  resourceVersion + resourceVersionMatch (0: everything, limit
                                  ignored, as the watch cache answers; N with limit or Exact: the
                                  state at N; N newer than the store: 504 "Too large resource
                                  version"), metadata.resourceVersion = the store's counter
  GET    ...?watch=true|1         a watch: newline-delimited {"type", "object"} in HTTP/1.1 chunks;
                                  resourceVersion (absent or "0": ADDED for every object, then
                                  changes; N: the changes after N), sendInitialEvents=true with
                                  resourceVersionMatch=NotOlderThan (the streaming list), label and
                                  field selectors (an object that leaves the selection is DELETED,
                                  one that enters it ADDED, as the watch cache does),
                                  allowWatchBookmarks (a BOOKMARK carrying only
                                  metadata.resourceVersion every --bookmark-interval seconds and 2 s
                                  before the timeout; after initial events one annotated
                                  k8s.io/initial-events-end), timeoutSeconds (the stream ends then;
                                  1800 s when absent). A resourceVersion older than the kept
                                  history (--history events) is answered as the real server does:
                                  200, then one ERROR event carrying a 410 Expired Status ("too old
                                  resource version"), then the end of the stream, so a watcher
                                  relists. An Accept of as=PartialObjectMetadata[List] (kube's
                                  metadata watcher) gets meta.k8s.io/v1 PartialObjectMetadata.
  GET    .../namespaces/NS/R/NAME           one object
  POST   .../R                    create: 409 AlreadyExists; metadata.generateName; 422 without a name
  PUT    .../R/NAME[/status]      replace: 409 Conflict when metadata.resourceVersion is not the
                                  stored one; a missing object is 404, or created where the real
                                  server allows create-on-update (leases, events, RBAC objects)
  PATCH  .../R/NAME[/status]      application/merge-patch+json (RFC 7386),
                                  application/strategic-merge-patch+json (as a merge patch: lists
                                  are replaced, not merged by key; $patch: replace/delete and the
                                  $setElementOrder/$retainKeys directives are honoured or dropped),
                                  application/json-patch+json (RFC 6902), and
                                  application/apply-patch+yaml (server-side apply; the body must be
                                  JSON: fieldManager required, create-or-merge, fields this manager
                                  applied before and no longer applies are removed, a field another
                                  manager owns with another value is 409 Conflict unless
                                  force=true); any other Content-Type is 415
  DELETE .../R/NAME               preconditions (uid, resourceVersion); an object with finalizers
                                  gets deletionTimestamp and goes when its last finalizer does
  DELETE .../R                    deletecollection, with the selectors
  POST   /api/v1/namespaces/NS/serviceaccounts/NAME/token   TokenRequest: 201 with an opaque
                                  random token, valid for that ServiceAccount
                                  (system:serviceaccount:NS:NAME) until status.expirationTimestamp
                                  (spec.expirationSeconds, default 3600, at least
                                  --min-token-expiration, as the real server's 10 minutes), while
                                  the ServiceAccount (same uid) exists and if spec.audiences holds
                                  the API's (https://kubernetes.default.svc); 404 without the
                                  ServiceAccount. spec.boundObjectRef to a Secret of the namespace
                                  binds the token to it (404 without it, 409 on another uid): the
                                  token is refused once that Secret is gone, deleting or another
                                  (pkg/registry/core/serviceaccount/storage/token.go and
                                  pkg/serviceaccount/claims.go, v1.32); a Pod or Node binding is
                                  not modelled (400)
  POST   /apis/authentication.k8s.io/v1/selfsubjectreviews   who the request's credentials are
                                  (kubectl auth whoami)

Every write takes the next value of one store-wide counter as its resourceVersion (an integer as a
string) and is kept in a bounded event history (--history, default 10,000 events), which watches,
pages and Exact lists read. An update or patch that changes nothing keeps the resourceVersion and
makes no event, as the real server does. managedFields are kept per manager and operation (Update
for create, replace and patches, named by fieldManager or the User-Agent's first word, "unknown"
without one; Apply for server-side apply), as the real server renders them, with two
simplifications: every list is atomic (owned as a whole) and maps get no "." entries.

Validation, as the real server's (same messages): Lease spec (leaseDurationSeconds > 0,
leaseTransitions >= 0, MicroTime fields with exactly six fractional digits, integers as integers;
unknown and feature-gated spec fields dropped, or 400 with fieldValidation=Strict);
events.k8s.io/v1 Event (eventTime, type, reportingController, reportingInstance, action, reason,
note length, regarding's namespace, series on create; on update the same plus the immutable
fields and series); a Job's pod template, immutable; TokenRequest expirationSeconds; a name or
generateName on every create; a Secret's stringData folded into data.

What a real API server does that this one does not:
  - no admission: no Pod Security, quotas or webhooks, no namespace lifecycle (every namespace
    exists; namespaces themselves are not served);
  - no schema, defaulting or conversion but what is said above: objects other than Leases and
    Events are kept as sent (a Secret gets its type), and a Cluster read through another version
    than it was written in only has its apiVersion changed, as a CRD with conversion strategy
    None; generation is never set;
  - status is kept apart only for clusters, kubeadmcontrolplanes, cronjobs and jobs (their
    status subresource); no garbage collection by ownerReferences, no controllers (a Job never
    runs), no TokenReview, no SubjectAccessReview;
  - server-side apply owns fields at their leaves: every list is atomic (no merge of list items
    by key, so two managers applying different items of one list conflict), maps get no "."
    entries, and a strategic merge patch replaces lists rather than merging them by key;
  - no aggregated discovery, no Table or protobuf output, no HTTP/2, YAML apply bodies refused
    (kubectl and kube-rs send JSON), no priority and fairness;
  - a resourceVersion newer than the store is answered at once (the real server waits up to 3 s
    first); a watch too slow for the history gets the same 410 ERROR event and the end;
  - the event history and the minted tokens live only as long as the process (the objects,
    managedFields included, are written back to STORE.json, and a restart starts the history
    anew: older resourceVersions are then 410).

Usage: apiserver.py STORE.json LOG.jsonl PORTFILE [--rules RULES.json] [--token TOKEN]
                    [--token-user NAME] [--tls CERT KEY] [--capi VERSIONS | --no-capi] [--no-argocd]
                    [--profiles VERSIONS | --no-profiles]
                    [--latency MS] [--history N] [--bookmark-interval S]
                    [--min-token-expiration S] [--interfere METHOD PATH]
  STORE.json  a JSON list of objects to start from (written back after every change); objects
              without a resourceVersion or uid get one
  LOG.jsonl   one JSON object per request: method, path, query (every field of the query string),
              body, contentType, authenticated (carried --token), user (who it authenticated as,
              null when refused), code (the answer's status)
  PORTFILE    the port it listens on (127.0.0.1, chosen by the system) is written here
  --rules     RBAC as the tests derive it from Roles and bindings: a JSON list of
              {"namespace": NS or null for cluster-wide, "apiGroups", "resources", "verbs",
              "resourceNames"?, "user"?}; a rule without "user" is the --token user's (everyone's
              without --token), one with "user" that user's only (such as
              "system:serviceaccount:kube-system:argocd-manager"); a subresource is
              "serviceaccounts/token" or "clusters/status". A resource request no rule allows is
              403 Forbidden with the RBAC authorizer's message; discovery, /version and
              selfsubjectreviews stay open, as system:discovery and system:basic-user allow them
  --token     every request must carry `Authorization: Bearer TOKEN` or a token minted by a
              TokenRequest (401 otherwise); the user it names is --token-user (default "admin").
              Without --token a request without credentials is system:anonymous and allowed; a
              wrong bearer token is 401 either way
  --tls       serve HTTPS with this certificate and key (as in-cluster clients expect)
  --capi      the cluster.x-k8s.io versions served for clusters, comma-separated (default
              v1beta1, as Cluster API before 1.11; "v1beta2,v1beta1" as 1.11 and later, where
              v1beta2 is preferred: the preferred version is the newest, as Kubernetes sorts them)
  --no-capi   serve no Cluster API group at all (cluster.x-k8s.io, controlplane.cluster.x-k8s.io):
              discovery leaves them out and their paths are 404, as in a cluster without the CRDs
  --no-argocd serve no argoproj.io group (Argo CD's ApplicationSets, Applications, AppProjects)
  --profiles  the multicluster.x-k8s.io versions served for clusterprofiles, comma-separated
              (default v1alpha1, as cluster-inventory-api v0.1.2's CRD; "v1alpha2,v1alpha1" as its
              main branch, where v1alpha2 is preferred)
  --no-profiles serve no multicluster.x-k8s.io group (SIG Multicluster's ClusterProfiles)
  --latency   wait this many milliseconds before every answer (a watch: before its first byte)
  --history   how many events the history keeps (default 10000); older resourceVersions are 410
  --bookmark-interval  seconds between a watch's periodic bookmarks (default 60, as the real one)
  --min-token-expiration  the shortest expirationSeconds a TokenRequest may ask (default 600)
  --port      listen on this port (default: one the system picks); a test restarting the stand-in
              over the same store file gets its server back where the clients look for it, its
              history gone (every older resourceVersion 410 Expired), as a restarted kube-apiserver
              behind a compacted etcd answers
  --in-memory the store file is read at start and never written back (the controller's benchmark:
              writing 10,000 objects back at every write would be all the stand-in does)
  --interfere METHOD PATH  another client writes first, once, just before the first METHOD on
              PATH is answered (a POST's object created as sent; the object of a PUT or DELETE
              changed): the 409 a real server gives a client whose read was stale
"""

import argparse
import base64
import collections
import copy
import datetime
import http.server
import json
import os
import re
import secrets as randomness
import ssl
import threading
import time
import urllib.parse
import uuid

parser = argparse.ArgumentParser()
parser.add_argument("store")
parser.add_argument("log")
parser.add_argument("portfile")
parser.add_argument("--rules")
parser.add_argument("--token")
parser.add_argument("--token-user", default="admin")
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
parser.add_argument("--capi", default="v1beta1")
parser.add_argument("--profiles", default="v1alpha1")
parser.add_argument("--no-capi", action="store_true")
parser.add_argument("--no-argocd", action="store_true")
parser.add_argument("--no-profiles", action="store_true")
parser.add_argument("--latency", type=float, default=0.0, metavar="MS")
parser.add_argument("--history", type=int, default=10000)
parser.add_argument("--bookmark-interval", type=float, default=60.0)
parser.add_argument("--min-token-expiration", type=int, default=600)
parser.add_argument("--interfere", nargs=2, metavar=("METHOD", "PATH"))
parser.add_argument("--in-memory", action="store_true")
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()

API_AUDIENCE = "https://kubernetes.default.svc"
DEFAULT_WATCH_SECONDS = 1800
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
TRUE = ("1", "t", "T", "true", "TRUE", "True")


def version_key(version):
    """Kubernetes' version priority: GA before beta before alpha, higher numbers first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (-1, 0, 0)
    level = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (level, int(m.group(1)), int(m.group(3) or 0))


class Resource:
    def __init__(self, group, versions, plural, kind, namespaced, builtin=True, create_on_update=False,
                 status=False, subresources=(), fields=None):
        self.group, self.plural, self.kind, self.namespaced = group, plural, kind, namespaced
        self.versions = sorted(versions, key=version_key, reverse=True)
        self.builtin = builtin                    # typed lists leave out their items' kind
        self.create_on_update = create_on_update  # PUT of a missing object creates it
        self.status = status                      # a status subresource
        self.subresources = list(subresources) + (["status"] if status else [])
        self.fields = fields or {}                # extra field selector fields: name -> getter

    def api_version(self, version):
        return f"{self.group}/{version}" if self.group else version

    @property
    def qualified(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self):
        return f"{self.kind}.{self.group}" if self.group else self.kind


CAPI_VERSIONS = [v for v in args.capi.split(",") if v]
PROFILE_VERSIONS = [v for v in args.profiles.split(",") if v]
RESOURCES = [
    Resource("", ["v1"], "secrets", "Secret", True, fields={"type": lambda o: o.get("type", "")}),
    Resource("", ["v1"], "configmaps", "ConfigMap", True),
    Resource("", ["v1"], "serviceaccounts", "ServiceAccount", True, subresources=["token"]),
    Resource("", ["v1"], "services", "Service", True),
    Resource("", ["v1"], "namespaces", "Namespace", False, create_on_update=True),
    Resource("apps", ["v1"], "deployments", "Deployment", True, status=True),
    Resource("policy", ["v1"], "poddisruptionbudgets", "PodDisruptionBudget", True, status=True),
    Resource("networking.k8s.io", ["v1"], "networkpolicies", "NetworkPolicy", True),
    Resource("cluster.x-k8s.io", CAPI_VERSIONS, "clusters", "Cluster", True, builtin=False, status=True),
    Resource("controlplane.cluster.x-k8s.io", ["v1beta1"], "kubeadmcontrolplanes", "KubeadmControlPlane",
             True, builtin=False, status=True),
    Resource("batch", ["v1"], "cronjobs", "CronJob", True, status=True),
    Resource("batch", ["v1"], "jobs", "Job", True, status=True),
    Resource("rbac.authorization.k8s.io", ["v1"], "roles", "Role", True, create_on_update=True),
    Resource("rbac.authorization.k8s.io", ["v1"], "rolebindings", "RoleBinding", True, create_on_update=True),
    Resource("rbac.authorization.k8s.io", ["v1"], "clusterroles", "ClusterRole", False, create_on_update=True),
    Resource("rbac.authorization.k8s.io", ["v1"], "clusterrolebindings", "ClusterRoleBinding", False,
             create_on_update=True),
    Resource("coordination.k8s.io", ["v1"], "leases", "Lease", True, create_on_update=True),
    Resource("events.k8s.io", ["v1"], "events", "Event", True, create_on_update=True),
    Resource("argoproj.io", ["v1alpha1"], "applicationsets", "ApplicationSet", True, builtin=False),
    Resource("argoproj.io", ["v1alpha1"], "applications", "Application", True, builtin=False),
    Resource("argoproj.io", ["v1alpha1"], "appprojects", "AppProject", True, builtin=False),
    Resource("multicluster.x-k8s.io", PROFILE_VERSIONS, "clusterprofiles", "ClusterProfile", True, builtin=False,
             status=True),
]
if args.no_capi:
    RESOURCES = [r for r in RESOURCES if not r.group.endswith("cluster.x-k8s.io")]
if args.no_argocd:
    RESOURCES = [r for r in RESOURCES if r.group != "argoproj.io"]
if args.no_profiles:
    RESOURCES = [r for r in RESOURCES if r.group != "multicluster.x-k8s.io"]
# Served but not stored: authentication.k8s.io/v1 selfsubjectreviews.
AUTHN = "authentication.k8s.io"
GROUPS = {}
for _r in RESOURCES:
    if _r.group:
        GROUPS.setdefault(_r.group, set()).update(_r.versions)
GROUPS[AUTHN] = {"v1"}
GROUPS = {g: sorted(vs, key=version_key, reverse=True) for g, vs in sorted(GROUPS.items())}


def resource_for(group, plural):
    return next((r for r in RESOURCES if r.group == group and r.plural == plural), None)


def resource_of(obj):
    api = obj.get("apiVersion", "")
    group, _, version = api.rpartition("/")
    return next((r for r in RESOURCES if r.group == group and r.kind == obj.get("kind")
                 and (version in r.versions or not r.builtin)), None)


# ---------------------------------------------------------------- answers

class Reply:
    def __init__(self, code, obj, content_type="application/json", headers=()):
        self.code, self.obj, self.content_type, self.headers = code, obj, content_type, list(headers)


class ApiError(Exception):
    def __init__(self, code, obj, headers=()):
        super().__init__(obj.get("message") if isinstance(obj, dict) else obj)
        self.reply = Reply(code, obj, headers=headers)


def status(code, reason, message, details=None, metadata=None):
    obj = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {}, "status": "Failure",
           "message": message}
    if reason:
        obj["reason"] = reason
    if details is not None:
        obj["details"] = details
    obj["code"] = code
    return obj


def fail(code, reason, message, details=None, metadata=None, headers=()):
    raise ApiError(code, status(code, reason, message, details, metadata), headers)


def details_of(res, name=None):
    d = {}
    if name is not None:
        d["name"] = name
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    return d


def not_found(res, name):
    fail(404, "NotFound", f'{res.qualified} "{name}" not found', details_of(res, name))


def page_not_found():
    raise ApiError(404, "404 page not found\n")


class Cause:
    """One field error as apimachinery's field.Error renders it."""

    def __init__(self, reason, field, message):
        self.reason, self.field, self.message = reason, field, message

    def __str__(self):
        return f"{self.field}: {self.message}"


def required(field, detail=""):
    return Cause("FieldValueRequired", field, "Required value" + (f": {detail}" if detail else ""))


def invalid(field, value, detail):
    return Cause("FieldValueInvalid", field, f"Invalid value: {value}: {detail}")


def go(value):
    """A value as Go's %v prints it in field errors: strings quoted, numbers bare."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def fail_invalid(qualified_kind, name, causes, group=None, kind=None):
    unique = list({str(c): c for c in causes}.values())
    errors = [str(c) for c in unique]
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    details = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind or qualified_kind.split(".")[0]
    details["causes"] = [{"reason": c.reason, "message": c.message, "field": c.field} for c in unique]
    fail(422, "Invalid", f'{qualified_kind} "{name or ""}" is invalid: {text}', details)


def now_time():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


# ---------------------------------------------------------------- the store

class Store:
    """Every object by (group, plural, namespace, name), the counter, and the event history:
    (resourceVersion, type, key, object after, object before). Objects are never changed in
    place: a write stores a new one, so history entries stay as they were."""

    def __init__(self, path, limit):
        self.path, self.limit = path, max(limit, 1)
        self.cond = threading.Condition()
        self.objects, self.others = {}, []
        self.history = collections.deque()
        loaded = json.load(open(path))
        versions = [100]
        for obj in loaded:
            try:
                versions.append(int(obj["metadata"].get("resourceVersion", "0")))
            except (KeyError, TypeError, ValueError, AttributeError):
                pass
        self.rv = max(versions)
        self.compacted = self.rv  # the history holds every event after this version
        for obj in loaded:
            res = resource_of(obj) if isinstance(obj, dict) else None
            if res is None or not isinstance(obj.get("metadata"), dict):
                self.others.append(obj)
                continue
            meta = obj["metadata"]
            meta.setdefault("resourceVersion", str(self.rv))
            meta.setdefault("uid", str(uuid.uuid4()))
            self.objects[key_of(res, meta.get("namespace"), meta.get("name", ""))] = obj
        # The namespaces a cluster has from the start, and those the objects given live in.
        namespaces = resource_for("", "namespaces")
        if namespaces is not None:
            wanted = {"default", "kube-system", "kube-public", "kube-node-lease"}
            wanted.update(k[2] for k in self.objects if k[2])
            for name in sorted(wanted):
                key = key_of(namespaces, None, name)
                self.objects.setdefault(key, {
                    "apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "uid": str(uuid.uuid4()), "resourceVersion": str(self.rv),
                                 "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
                })

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def record(self, kind, key, obj, prev):
        self.history.append((self.rv, kind, key, obj, prev))
        while len(self.history) > self.limit:
            self.compacted = self.history.popleft()[0]
        self.cond.notify_all()

    def put(self, key, obj, prev):
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self.objects[key] = obj
        self.record("ADDED" if prev is None else "MODIFIED", key, obj, prev)
        self.persist()

    def remove(self, key):
        prev = self.objects.pop(key)
        gone = copy.deepcopy(prev)
        gone["metadata"]["resourceVersion"] = self.next_rv()
        self.record("DELETED", key, gone, prev)
        self.persist()
        return gone

    def persist(self):
        if args.in_memory:
            return
        # Written aside and renamed into place: a test reading the store never sees half of it.
        with open(self.path + ".new", "w") as f:
            json.dump(list(self.objects.values()) + self.others, f, indent=1)
        os.replace(self.path + ".new", self.path)

    def of(self, res):
        return {k: o for k, o in self.objects.items() if k[:2] == (res.group, res.plural)}

    def state_at(self, res, rv):
        """The objects of `res` as they were at `rv`, or None when the history no longer
        reaches back there."""
        if rv >= self.rv:
            return self.of(res)
        if rv < self.compacted:
            return None
        state = self.of(res)
        for erv, kind, key, _, prev in reversed(self.history):
            if erv <= rv:
                break
            if key[:2] != (res.group, res.plural):
                continue
            if kind == "ADDED":
                state.pop(key, None)
            else:
                state[key] = prev
        return state

    def events_after(self, res, rv):
        out = []
        for event in reversed(self.history):
            if event[0] <= rv:
                break
            if event[2][:2] == (res.group, res.plural):
                out.append(event)
        out.reverse()
        return out


def key_of(res, namespace, name):
    return (res.group, res.plural, namespace or "" if res.namespaced else "", name)


def key_text(key, namespaced_request):
    """The key as etcd orders it under the list's prefix: /NS/NAME across namespaces, /NAME in one."""
    return f"/{key[3]}" if namespaced_request or not key[2] else f"/{key[2]}/{key[3]}"


store = Store(args.store, args.history)
rules = json.load(open(args.rules)) if args.rules else None
tokens = {}  # token -> {"namespace", "name", "uid", "expires", "audiences", "jti"}
log_lock = threading.Lock()


# ---------------------------------------------------------------- selectors

LABEL_KEY = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


def split_terms(selector):
    terms, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def parse_labels(selector):
    """A label selector as a list of (key, op, values); 400 as the real server for what it cannot read."""
    reqs = []
    for term in split_terms(selector):
        m = re.fullmatch(rf"!\s*({LABEL_KEY})", term)
        if m:
            reqs.append((m.group(1), "!exists", []))
            continue
        m = re.fullmatch(rf"({LABEL_KEY})\s+(in|notin)\s*\(([^()]*)\)", term)
        if m:
            values = [v.strip() for v in m.group(3).split(",")]
            if not all(re.fullmatch(LABEL_VALUE, v) for v in values):
                fail(400, "BadRequest", f"unable to parse requirement: invalid label value in {term!r}")
            reqs.append((m.group(1), m.group(2), values))
            continue
        m = re.fullmatch(rf"({LABEL_KEY})\s*(==|!=|=)\s*([^=!]*)", term)
        if m:
            if not re.fullmatch(LABEL_VALUE, m.group(3).strip()):
                fail(400, "BadRequest", f"unable to parse requirement: invalid label value: {m.group(3)!r}")
            reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", [m.group(3).strip()]))
            continue
        if re.fullmatch(LABEL_KEY, term):
            reqs.append((term, "exists", []))
            continue
        fail(400, "BadRequest", "unable to parse requirement: found '=', expected: identifier"
             if "=" in term else f"unable to parse requirement: {term!r}")
    return reqs


def labels_match(obj, reqs):
    labels = obj.get("metadata", {}).get("labels") or {}
    for key, op, values in reqs:
        present = key in labels
        if op == "exists" and not present or op == "!exists" and present:
            return False
        if op in ("=", "in") and labels.get(key) not in values:
            return False
        if op in ("!=", "notin") and present and labels[key] in values:
            return False
    return True


def parse_fields(res, selector):
    getters = {"metadata.name": lambda o: o["metadata"].get("name", ""),
               "metadata.namespace": lambda o: o["metadata"].get("namespace", ""), **res.fields}
    reqs = []
    for term in split_terms(selector):
        m = re.fullmatch(r"([^=!]+?)\s*(==|!=|=)\s*(.*)", term)
        if not m:
            fail(400, "BadRequest", f"invalid selector: '{selector}'; can't understand '{term}'")
        if m.group(1) not in getters:
            fail(400, "BadRequest", f"field label not supported: {m.group(1)}")
        reqs.append((getters[m.group(1)], m.group(2) == "!=", m.group(3)))
    return reqs


def fields_match(obj, reqs):
    return all((get(obj) != value) if negated else (get(obj) == value) for get, negated, value in reqs)


# ---------------------------------------------------------------- authentication, authorization

def anonymous():
    return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}


def authenticate(header):
    """(user, None) or (None, reason for a 401)."""
    if header.startswith("Bearer "):
        token = header[len("Bearer "):].strip()
        if args.token is not None and token == args.token:
            return {"username": args.token_user, "groups": ["system:authenticated"]}, None
        minted = tokens.get(token)
        if minted is None:
            return None, "unknown token"
        if time.time() >= minted["expires"]:
            return None, "expired token"
        if API_AUDIENCE not in minted["audiences"]:
            return None, "token audience"
        sa = store.objects.get(("", "serviceaccounts", minted["namespace"], minted["name"]))
        if sa is None or sa["metadata"].get("uid") != minted["uid"]:
            return None, "service account gone"
        bound = minted.get("secret")
        if bound is not None:
            secret = store.objects.get(("", "secrets", minted["namespace"], bound["name"]))
            if secret is None or secret["metadata"].get("deletionTimestamp"):
                return None, "service account token has been invalidated"
            if secret["metadata"].get("uid") != bound["uid"]:
                return None, (f"secret UID ({secret['metadata'].get('uid')}) does not match service "
                              f"account secret ref claim ({bound['uid']})")
        ns, name = minted["namespace"], minted["name"]
        return {"username": f"system:serviceaccount:{ns}:{name}", "uid": minted["uid"],
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={minted['jti']}"]}}, None
    if header:
        return None, "unsupported credentials"
    if args.token is not None:
        return None, "no token"
    return anonymous(), None


def default_user():
    return args.token_user if args.token is not None else "system:anonymous"


def allowed(user, verb, group, resource, namespace, name):
    """RBAC's rule matching (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac): any rule of the
    user's that covers the verb, the group, the resource, the name and the namespace allows it."""
    if rules is None:
        return True
    for rule in rules:
        if rule.get("user", default_user()) != user["username"]:
            continue
        if rule.get("namespace") not in (None, namespace):
            continue
        if not any(g in ("*", group) for g in rule.get("apiGroups", [])):
            continue
        if not any(r in ("*", resource) for r in rule.get("resources", [])):
            continue
        if not any(v in ("*", verb) for v in rule.get("verbs", [])):
            continue
        names = rule.get("resourceNames") or []
        if names and name not in names:
            continue
        return True
    return False


def authorize(user, verb, res, sub, namespace, name):
    resource = res.plural + (f"/{sub}" if sub else "")
    if allowed(user, verb, res.group, resource, namespace, name):
        return
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    what = f'{res.qualified} "{name}"' if name else res.qualified
    fail(403, "Forbidden", f'{what} is forbidden: User "{user["username"]}" cannot {verb} resource '
         f'"{resource}" in API group "{res.group}" {scope}', details_of(res, name))


# ---------------------------------------------------------------- discovery

def resource_list(group, ver):
    out = []
    for r in RESOURCES:
        if r.group != group or ver not in r.versions:
            continue
        out.append({"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                    "kind": r.kind, "verbs": VERBS})
        for sub in r.subresources:
            if sub == "token":
                out.append({"name": f"{r.plural}/token", "singularName": "", "namespaced": True,
                            "group": AUTHN, "version": "v1", "kind": "TokenRequest", "verbs": ["create"]})
            else:
                out.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
    if group == AUTHN:
        out.append({"name": "selfsubjectreviews", "singularName": "selfsubjectreview", "namespaced": False,
                    "kind": "SelfSubjectReview", "verbs": ["create"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{ver}" if group else ver, "resources": out}


def group_entry(group):
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in GROUPS[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def openapi_doc(group, ver):
    """Every collection's POST and every object's PUT take fieldValidation, so kubectl sends
    ?fieldValidation=Strict and validates nothing itself."""
    base = f"/apis/{group}/{ver}" if group else f"/api/{ver}"
    paths = {}
    for r in RESOURCES:
        if r.group != group or ver not in r.versions:
            continue
        gvk = {"group": r.group, "kind": r.kind, "version": ver}
        param = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
        prefix = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
        for path, method in ((prefix, "post"), (prefix + "/{name}", "put"), (prefix + "/{name}", "patch")):
            paths.setdefault(path, {})[method] = {
                "parameters": param, "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": method, "x-kubernetes-group-version-kind": gvk,
            }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-stand-in"},
            "paths": paths, "components": {"schemas": {}}}


def openapi_root():
    gvs = [("", "v1")] + [(g, v) for g, vs in GROUPS.items() for v in vs]
    return {"paths": {(f"apis/{g}/{v}" if g else f"api/{v}"):
                      {"serverRelativeURL": f"/openapi/v3/{'apis/' + g if g else 'api'}/{v}?hash=stand-in"}
                      for g, v in gvs}}


def discovery(parts):
    path = "/".join(parts)
    if path == "/version":
        return Reply(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-stand-in",
                           "platform": "linux/amd64"})
    if path == "/api":
        return Reply(200, {"kind": "APIVersions", "versions": ["v1"],
                           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
    if path == "/apis":
        return Reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_entry(g) for g in GROUPS]})
    if path == "/api/v1":
        return Reply(200, resource_list("", "v1"))
    if len(parts) == 3 and parts[1] == "apis" and parts[2] in GROUPS:
        return Reply(200, {"kind": "APIGroup", "apiVersion": "v1", **group_entry(parts[2])})
    if len(parts) == 4 and parts[1] == "apis" and parts[3] in GROUPS.get(parts[2], ()):
        return Reply(200, resource_list(parts[2], parts[3]))
    if path == "/openapi/v3":
        return Reply(200, openapi_root())
    if path == "/openapi/v3/api/v1":
        return Reply(200, openapi_doc("", "v1"))
    if len(parts) == 6 and parts[1:4] == ["openapi", "v3", "apis"] and parts[5] in GROUPS.get(parts[4], ()):
        return Reply(200, openapi_doc(parts[4], parts[5]))
    return None


# ---------------------------------------------------------------- object paths and managed fields

MISSING = object()
# metadata the field manager never tracks (the real one resets or ignores them)
UNTRACKED_METADATA = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                      "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}


MAP_FIELDS = {"labels", "annotations", "data", "stringData", "binaryData"}


def leaves(res, obj):
    """Every leaf field of `obj` the field manager tracks: path (a tuple of keys) -> value. Maps
    are walked, anything else (lists included: atomic here) is a leaf; nulls are nothing, and so
    is an empty struct (spec: {}) while an empty map (labels: {}, data: {}) is a leaf, as the
    real server owns them."""
    out = {}

    def walk(path, value):
        if isinstance(value, dict) and (value or path[-1] not in MAP_FIELDS):
            for k, v in value.items():
                walk(path + (k,), v)
        elif value is not None:
            out[path] = value

    for k, v in (obj or {}).items():
        if k in ("apiVersion", "kind") or k == "status" and res.status:
            continue
        if k == "metadata":
            for mk, mv in (v or {}).items():
                if mk not in UNTRACKED_METADATA:
                    walk(("metadata", mk), mv)
            continue
        walk((k,), v)
    return out


def get_path(obj, path):
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return MISSING
        obj = obj[part]
    return obj


def set_path(obj, path, value):
    for part in path[:-1]:
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
        obj = obj[part]
    obj[path[-1]] = value


def delete_path(obj, path):
    parents = []
    for part in path[:-1]:
        if not isinstance(obj.get(part), dict):
            return
        parents.append((obj, part))
        obj = obj[part]
    obj.pop(path[-1], None)
    # maps emptied by the removal go too, below the top level (spec: {} stays)
    for parent, part in reversed(parents[1:]):
        if parent[part] == {}:
            del parent[part]
        else:
            break


def overlaps(a, b):
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def render_fields(paths):
    root = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return root


def parse_fields_v1(fields, prefix=()):
    paths = set()
    for k, v in (fields or {}).items():
        if not k.startswith("f:"):
            continue
        path = prefix + (k[2:],)
        children = [c for c in (v or {}) if c != "."]
        if not children or any(not c.startswith("f:") for c in children):
            paths.add(path)
        else:
            paths |= parse_fields_v1(v, path)
    return paths


def managers(obj):
    out = []
    for entry in (obj or {}).get("metadata", {}).get("managedFields") or []:
        meta = {k: v for k, v in entry.items() if k not in ("fieldsType", "fieldsV1")}
        out.append([meta, parse_fields_v1(entry.get("fieldsV1"))])
    return out


def set_managers(obj, entries):
    rendered = []
    for meta, paths in entries:
        if not paths:
            continue
        entry = {k: meta[k] for k in ("manager", "operation", "apiVersion", "time") if k in meta}
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = render_fields(paths)
        if meta.get("subresource"):
            entry["subresource"] = meta["subresource"]
        rendered.append(entry)
    if rendered:
        obj["metadata"]["managedFields"] = rendered
    else:
        obj["metadata"].pop("managedFields", None)


def without_managed_fields(obj):
    out = dict(obj, metadata=dict(obj.get("metadata") or {}))
    out["metadata"].pop("managedFields", None)
    return out


def track_update(res, api_version, old, new, manager, sub):
    """An Update operation: `manager` owns what it changed; nobody else owns it any more."""
    lo, ln = leaves(res, old), leaves(res, new)
    changed = {p for p, v in ln.items() if p not in lo or lo[p] != v}
    removed = {p for p in lo if p not in ln}
    touched = changed | removed
    entries, mine = [], None
    for meta, paths in managers(old):
        if (meta.get("manager"), meta.get("operation"), meta.get("subresource")) == (manager, "Update", sub):
            mine = [meta, paths]
            entries.append(mine)
        else:
            entries.append([meta, {q for q in paths if not any(overlaps(q, t) for t in touched)}])
    if touched:
        if mine is None:
            mine = [{"manager": manager, "operation": "Update"}, set()]
            if sub:
                mine[0]["subresource"] = sub
            entries.append(mine)
        mine[1] = {q for q in mine[1] if not any(overlaps(q, t) for t in removed)} | changed
        mine[0]["apiVersion"], mine[0]["time"] = api_version, now_time()
    set_managers(new, entries)


def conflict_message(conflicts):
    def who(meta):
        name = json.dumps(meta.get("manager", ""))
        return name if meta.get("operation") == "Apply" else f"{name} using {meta.get('apiVersion')}"

    dotted = [(who(m), "." + ".".join(p)) for m, p in conflicts]
    if len(dotted) == 1:
        text = f"conflict with {dotted[0][0]}: {dotted[0][1]}"
    else:
        lines = []
        for manager in sorted({w for w, _ in dotted}):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {p}" for w, p in dotted if w == manager]
        text = "\n".join(lines)
    n = len(dotted)
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {w}", "field": p} for w, p in dotted]
    return f"Apply failed with {n} conflict{'s' if n != 1 else ''}: {text}", causes


def server_side_apply(res, api_version, old, applied, manager, force):
    """Server-side apply of `applied` by `manager` onto `old`: the merged object, with the
    managers' field sets as structured-merge-diff keeps them (lists atomic)."""
    la = {p: v for p, v in leaves(res, applied).items() if v is not None}
    entries = managers(old)
    conflicts = []
    for meta, paths in entries:
        if (meta.get("manager"), meta.get("operation")) == (manager, "Apply"):
            continue
        for q in sorted(paths):
            for p in la:
                if overlaps(p, q):
                    longer = p if len(p) >= len(q) else q
                    if get_path(old, longer) != get_path(applied, longer):
                        conflicts.append((meta, q))
                        break
    if conflicts and not force:
        message, causes = conflict_message(conflicts)
        fail(409, "Conflict", message, {"causes": causes})
    new = copy.deepcopy(old)
    mine = next((e for e in entries if (e[0].get("manager"), e[0].get("operation")) == (manager, "Apply")), None)
    others = [e for e in entries if e is not mine]
    if force:
        lost = {(id(m), q) for m, q in conflicts}
        for meta, paths in others:
            paths -= {q for q in paths if (id(meta), q) in lost}
    for r in (mine[1] if mine else set()) - set(la):
        if not any(overlaps(r, q) for _, paths in others for q in paths):
            delete_path(new, r)
    for p, v in la.items():
        set_path(new, p, copy.deepcopy(v))
    if mine is None:
        mine = [{"manager": manager, "operation": "Apply"}, set()]
        entries.append(mine)
    content_changed = without_managed_fields(new) != without_managed_fields(old)
    if mine[1] != set(la) or content_changed:
        mine[0]["apiVersion"], mine[0]["time"] = api_version, now_time()
    mine[1] = set(la)
    set_managers(new, entries)
    return new


# ---------------------------------------------------------------- patches

def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_patch(target, patch):
    """A strategic merge patch as a merge patch: lists are replaced; $patch: replace replaces a
    map, $patch: delete removes it; the ordering and retainKeys directives are dropped."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    plain = {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive == "replace":
        return strategic_patch({}, plain)
    if directive == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in plain.items():
        if v is None:
            out.pop(k, None)
            continue
        merged = strategic_patch(out.get(k), v)
        if merged is None:
            out.pop(k, None)
        else:
            out[k] = merged
    return out


def pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        fail(400, "BadRequest", f"the JSON patch path {path!r} does not start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(target, ops):
    doc = copy.deepcopy(target)

    def walk(parts):
        node = doc
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node, parts[-1]

    def get(parts):
        node = doc
        for p in parts:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node

    def add(parts, value):
        node, last = walk(parts)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value

    def remove(parts):
        node, last = walk(parts)
        if isinstance(node, list):
            return node.pop(int(last))
        return node.pop(last)

    if not isinstance(ops, list):
        fail(400, "BadRequest", "the JSON patch is not a list of operations")
    for op in ops:
        try:
            kind, parts = op["op"], pointer(op["path"])
            if kind == "add":
                add(parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                remove(parts)
            elif kind == "replace":
                remove(parts)
                add(parts, copy.deepcopy(op["value"]))
            elif kind == "move":
                add(parts, remove(pointer(op["from"])))
            elif kind == "copy":
                add(parts, copy.deepcopy(get(pointer(op["from"]))))
            elif kind == "test":
                if get(parts) != op["value"]:
                    fail(422, "Invalid", f"the test of {op['path']} failed")
            else:
                fail(400, "BadRequest", f"unknown JSON patch operation {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as err:
            fail(422, "Invalid", f"the JSON patch operation {compact(op)} cannot be applied: {err}")
    return doc


# ---------------------------------------------------------------- kinds: normal form and validation

MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LEASE_SPEC = {"holderIdentity": str, "leaseDurationSeconds": int, "acquireTime": "micro",
              "renewTime": "micro", "leaseTransitions": int}
LEASE_GATED = {"strategy", "preferredHolder"}  # CoordinatedLeaderElection: alpha, off in 1.32
EVENT_FIELDS = {"apiVersion", "kind", "metadata", "eventTime", "series", "reportingController",
                "reportingInstance", "action", "reason", "regarding", "related", "note", "type",
                "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"}


def cannot_handle(kind, detail):
    fail(400, "BadRequest", f'{kind} in version "v1" cannot be handled as a {kind}: {detail}')


def check_micro_time(kind, value):
    if value is None:
        return
    if not isinstance(value, str) or not MICRO_TIME.fullmatch(value):
        cannot_handle(kind, f'parsing time {json.dumps(value)} as "2006-01-02T15:04:05.000000Z07:00": '
                      f'cannot parse {json.dumps(value)} as a MicroTime')


def normalize(res, obj, strict, defaults=True):
    """The object as the real server keeps it: a Secret's stringData folded into data, a Lease's
    and an Event's unknown fields dropped (400 with fieldValidation=Strict), wrong types 400."""
    if res.kind == "Secret":
        data = dict(obj.get("data") or {})
        for k, v in (obj.pop("stringData", None) or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        if data:
            obj["data"] = data
        if defaults:
            obj.setdefault("type", "Opaque")
    elif res.kind == "Lease":
        spec = obj.get("spec")
        if spec is None:
            if defaults:
                obj["spec"] = {}
        elif not isinstance(spec, dict):
            cannot_handle("Lease", "json: cannot unmarshal into Go struct field Lease.spec of type v1.LeaseSpec")
        else:
            for k in list(spec):
                if k in LEASE_GATED or k not in LEASE_SPEC:
                    if strict and k not in LEASE_GATED:
                        cannot_handle("Lease", f'strict decoding error: unknown field "spec.{k}"')
                    del spec[k]
                elif spec[k] is None:
                    del spec[k]
                elif LEASE_SPEC[k] == "micro":
                    check_micro_time("Lease", spec[k])
                elif LEASE_SPEC[k] is int and (not isinstance(spec[k], int) or isinstance(spec[k], bool)):
                    cannot_handle("Lease", f"json: cannot unmarshal {type(spec[k]).__name__} into Go struct "
                                  f"field LeaseSpec.spec.{k} of type int32")
                elif LEASE_SPEC[k] is str and not isinstance(spec[k], str):
                    cannot_handle("Lease", f"json: cannot unmarshal {type(spec[k]).__name__} into Go struct "
                                  f"field LeaseSpec.spec.{k} of type string")
    elif res.kind == "Event":
        for k in list(obj):
            if k not in EVENT_FIELDS:
                if strict:
                    cannot_handle("Event", f'strict decoding error: unknown field "{k}"')
                del obj[k]
        check_micro_time("Event", obj.get("eventTime"))
        if isinstance(obj.get("series"), dict):
            check_micro_time("Event", obj["series"].get("lastObservedTime"))
        if defaults:
            obj.setdefault("deprecatedSource", {})
            obj.setdefault("deprecatedFirstTimestamp", None)
            obj.setdefault("deprecatedLastTimestamp", None)
    return obj


def validate(res, new, old):
    if res.kind == "Lease":
        causes = []
        spec = new.get("spec") or {}
        if spec.get("leaseDurationSeconds") is not None and spec["leaseDurationSeconds"] <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", spec["leaseDurationSeconds"], "must be greater than 0"))
        if spec.get("leaseTransitions") is not None and spec["leaseTransitions"] < 0:
            causes.append(invalid("spec.leaseTransitions", spec["leaseTransitions"],
                                  "must be greater than or equal to 0"))
        if causes:
            fail_invalid(res.qualified_kind, new["metadata"]["name"], causes, res.group, res.kind)
    elif res.kind == "Event":
        causes = validate_event(new, old)
        if causes:
            fail_invalid("Event", new["metadata"]["name"], causes, kind="Event")
    elif res.kind == "Job" and old is not None:
        # pkg/apis/batch/validation: a Job's pod template cannot change (but for the few
        # fields a suspended Job may change, which nothing here uses).
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            fail_invalid("Job.batch", new["metadata"]["name"],
                         [invalid("spec.template", "core.PodTemplateSpec{…}", "field is immutable")],
                         "batch", "Job")


def qualified_name_causes(value, field):
    name = value.rsplit("/", 1)[-1]
    causes = []
    if not name:
        causes.append(invalid(field, go(value), "name part must be non-empty"))
    elif len(name) > 63:
        causes.append(invalid(field, go(value), "name part must be no more than 63 characters"))
    if not QUALIFIED_NAME.fullmatch(name):
        causes.append(invalid(field, go(value), "name part must consist of alphanumeric characters, '-', '_' or '.', "
                              "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                              "'my.name',  or '123-abc', regex used for validation is "
                              "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"))
    return causes


def series_causes(ev):
    series = ev.get("series")
    if series is None:
        return []
    causes = []
    if (series.get("count") or 0) < 2:
        causes.append(invalid("series.count", '""', "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(required("series.lastObservedTime"))
    return causes


def go_time(value):
    """A MicroTime as Go's time.Time prints it (2026-11-25 16:00:00.000001 +0000 UTC)."""
    try:
        t = datetime.datetime.strptime(value.replace("Z", "+00:00"), "%Y-%m-%dT%H:%M:%S.%f%z")
        return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".") + " +0000 UTC"
    except (AttributeError, ValueError):
        return go(value)


def validate_event(ev, old):
    """events.k8s.io/v1 validation (pkg/apis/core/validation/events.go), with its core field
    names (involvedObject, message) as the real server reports them."""
    causes = []
    ns = ev["metadata"].get("namespace", "")
    regarding = ev.get("regarding") or {}
    if not ev.get("eventTime"):
        if not regarding.get("namespace"):
            if ns not in ("", "default"):
                causes.append(invalid("involvedObject.namespace", '""', "does not match event.namespace"))
        elif ns != regarding.get("namespace"):
            causes.append(invalid("involvedObject.namespace", go(regarding.get("namespace")),
                                  "does not match event.namespace"))
    else:
        if not regarding.get("namespace") and ns not in ("default", "kube-system"):
            causes.append(invalid("involvedObject.namespace", '""', "does not match event.namespace"))
        controller = ev.get("reportingController") or ""
        if not controller:
            causes.append(required("reportingController"))
        causes += qualified_name_causes(controller, "reportingController")
        for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = ev.get(field) or ""
            if not value:
                causes.append(required(field))
            if len(value) > limit:
                causes.append(invalid(field, '""', f"can have at most {limit} characters"))
        if len(ev.get("note") or "") > 1024:
            causes.append(invalid("message", '""', "can have at most 1024 characters"))
    if old is None:
        causes += series_causes(ev)
        if not ev.get("eventTime"):
            causes.append(required("eventTime"))
        if ev.get("type") not in ("Normal", "Warning"):
            causes.append(invalid("type", '""', f"has invalid value: {ev.get('type') or ''}"))
        for field in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
            if ev.get(field):
                causes.append(invalid(field, '""', "needs to be unset"))
        if any((ev.get("deprecatedSource") or {}).get(k) for k in ("component", "host")):
            causes.append(invalid("deprecatedSource", '""', "needs to be unset"))
        return causes
    if ev.get("series") != old.get("series"):
        causes += series_causes(ev)
    for field, shown in (("regarding", "involvedObject"), ("reason", "reason"), ("note", "message"),
                         ("deprecatedSource", "source"), ("deprecatedFirstTimestamp", "firstTimestamp"),
                         ("deprecatedLastTimestamp", "lastTimestamp"), ("deprecatedCount", "count"),
                         ("type", "type")):
        if (ev.get(field) or None) != (old.get(field) or None):
            causes.append(invalid(shown, go(ev.get(field) or ""), "field is immutable"))
    if ev.get("eventTime") != old.get("eventTime"):
        causes.append(invalid("eventTime", go_time(ev.get("eventTime")), "field is immutable"))
    for field in ("action", "related", "reportingController", "reportingInstance"):
        if (ev.get(field) or None) != (old.get(field) or None):
            causes.append(invalid(field, go(ev.get(field) or ""), "field is immutable"))
    return causes


# ---------------------------------------------------------------- presentation

def accept_meta(accept):
    first = (accept or "").split(",")[0]
    if "as=PartialObjectMetadataList" in first:
        return "list"
    if "as=PartialObjectMetadata" in first:
        return "object"
    return None


METADATA_ORDER = ["name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                  "annotations", "ownerReferences", "finalizers", "managedFields"]


def ordered_metadata(meta):
    """The metadata in the order the real server writes it (for the eye: JSON has no order)."""
    rank = {k: i for i, k in enumerate(METADATA_ORDER)}
    return {k: meta[k] for k in sorted(meta, key=lambda k: rank.get(k, len(rank)))}


def present(res, version, obj, meta_only=False, in_list=False):
    if meta_only:
        return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": ordered_metadata(copy.deepcopy(obj["metadata"]))}
    out = {"kind": res.kind, "apiVersion": res.api_version(version)}
    out.update({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")})
    out = copy.deepcopy(out)
    out["metadata"] = ordered_metadata(out["metadata"])
    if in_list and res.builtin:
        del out["kind"], out["apiVersion"]
    return out


# ---------------------------------------------------------------- requests

class Request:
    def __init__(self, method, parts, query, body, headers, user):
        self.method, self.parts, self.query, self.body, self.user = method, parts, query, body, user
        self.content_type = (headers.get("Content-Type") or "").split(";")[0].strip()
        self.accept = headers.get("Accept") or ""
        self.user_agent = headers.get("User-Agent") or ""

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError as err:
            fail(400, "BadRequest", f"the body is not JSON: {err}")

    def manager(self):
        if "fieldManager" in self.query:
            return self.query["fieldManager"]
        return (self.user_agent.split("/")[0] or "unknown")[:128]


class Watch:
    def __init__(self, res, version, ns, query, meta_only):
        self.res, self.version, self.ns, self.query, self.meta_only = res, version, ns, query, meta_only


def route(req):
    parts = req.parts
    path = "/".join(parts)
    if req.method == "GET":
        found = discovery(parts)
        if found is not None:
            return found
    if path == f"/apis/{AUTHN}/v1/selfsubjectreviews":
        if req.method != "POST":
            fail(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource")
        user = {k: v for k, v in req.user.items() if k in ("username", "uid", "groups", "extra")}
        return Reply(201, {"kind": "SelfSubjectReview", "apiVersion": f"{AUTHN}/v1",
                           "metadata": {"creationTimestamp": now_time()}, "status": {"userInfo": user}})
    if req.method == "GET" and path in ("/healthz", "/livez", "/readyz"):
        return Reply(200, "ok")
    if parts[1:3] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[3:]
    elif parts[1:2] == ["apis"] and len(parts) >= 4 and parts[3] in GROUPS.get(parts[2], ()):
        group, version, rest = parts[2], parts[3], parts[4:]
    else:
        page_not_found()
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    res = resource_for(group, rest[0]) if rest else None
    if res is None or version not in res.versions or len(rest) > 3 or (ns is not None and not res.namespaced):
        fail(404, "NotFound", "the server could not find the requested resource", {})
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if sub is not None and sub not in res.subresources:
        fail(404, "NotFound", "the server could not find the requested resource", {})
    if res.namespaced and ns is None and name is not None:
        fail(404, "NotFound", "the server could not find the requested resource", {})
    watching = req.method == "GET" and name is None and req.query.get("watch") in TRUE
    if req.method == "POST" and name is None:
        verb = "create"
        body = req.json()
        name = ((body or {}).get("metadata") or {}).get("name") if isinstance(body, dict) else None
    elif watching:
        verb = "watch"
    else:
        verb = {"GET": "get" if name else "list", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection",
                "POST": "create"}.get(req.method, req.method.lower())
    # A list or watch of one object by name (a metadata.name field selector) is authorized with
    # that name, so resourceNames can allow it (as kube-apiserver does).
    if verb in ("list", "watch") and name is None:
        terms = [t for t in split_terms(req.query.get("fieldSelector", "")) if t]
        if len(terms) == 1:
            key, _, value = terms[0].replace("==", "=").partition("=")
            if key == "metadata.name" and value and "!" not in key:
                name = value
    authorize(req.user, verb, res, sub, ns, name)
    name = None if verb in ("list", "watch") else name
    meta_only = accept_meta(req.accept)
    if watching:
        check_watch(res, req.query)
        return Watch(res, version, ns, req.query, meta_only)
    with store.cond:
        interfere(req, res, version, ns, name)
        if verb == "list":
            return Reply(200, list_objects(res, version, ns, req.query, meta_only))
        if verb == "deletecollection":
            return Reply(200, delete_collection(res, version, ns, req.query))
        if sub == "token":
            if req.method != "POST":
                fail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return token_request(res, ns, name, req)
        if req.method == "POST" and sub is None:
            return create(res, version, ns, req, req.json())
        return one(res, version, ns, name, sub, req, meta_only)


interfered = False


def interfere(req, res, version, ns, name):
    """--interfere METHOD PATH: another client writes first, once, just before the first such
    request is answered — the race a real server sees. A POST's object is created as sent (the
    request then finds it there: 409 AlreadyExists); the object a PUT or DELETE names is changed
    (an annotation stand-in/interfered, so a new resourceVersion: 409 Conflict)."""
    global interfered
    if not args.interfere or interfered or [req.method, "/".join(req.parts)] != list(args.interfere):
        return
    interfered = True
    if req.method == "POST":
        try:
            create(res, version, ns, req, copy.deepcopy(req.json()))
        except ApiError:
            pass
        return
    key = key_of(res, ns, name)
    old = store.objects.get(key)
    if old is not None:
        new = copy.deepcopy(old)
        new["metadata"].setdefault("annotations", {})["stand-in/interfered"] = "true"
        store.put(key, new, old)


def list_objects(res, version, ns, query, meta_only):
    labels = parse_labels(query.get("labelSelector", ""))
    fields = parse_fields(res, query.get("fieldSelector", ""))
    try:
        limit = int(query.get("limit") or 0)
    except ValueError:
        fail(400, "BadRequest", f'strconv.ParseInt: parsing {json.dumps(query["limit"])}: invalid syntax')
    rv, match, token = query.get("resourceVersion", ""), query.get("resourceVersionMatch", ""), query.get("continue", "")
    if match and not rv and not token:
        fail(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
             "resourceVersionMatch is forbidden unless resourceVersion is provided",
             {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
                 {"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                  "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"}]})
    start = ""
    if token:
        if rv:
            fail(400, "BadRequest", "specifying resource version is not allowed when using continue")
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            at, start = int(decoded["rv"]), decoded["start"]
        except (ValueError, KeyError, TypeError) as err:
            fail(400, "BadRequest", f"invalid continue token: continue key is not valid: {err}")
        state = store.state_at(res, at)
        if state is None:
            inconsistent = continue_token(-1, start)
            fail(410, "Expired", "The provided continue parameter is too old to display a consistent list result. "
                 "You can start a new list without the continue parameter, or use the continue token in this "
                 "response to retrieve the remainder of the results. Continuing with the provided token results "
                 "in an inconsistent list - objects that were created, modified, or deleted between the time the "
                 "first chunk was returned and now may show up in the list.",
                 metadata={"continue": inconsistent})
    elif rv in ("", "0"):
        at, state = store.rv, store.of(res)
        if rv == "0":
            limit = 0  # the watch cache answers everything at once
    else:
        try:
            wanted = int(rv)
        except ValueError:
            fail(400, "BadRequest", f'resourceVersion: Invalid value: {json.dumps(rv)}: strconv.ParseUint: '
                 f'parsing {json.dumps(rv)}: invalid syntax')
        if wanted > store.rv:
            fail(504, "Timeout", f"Timeout: Too large resource version: {wanted}, current: {store.rv}",
                 {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                  "retryAfterSeconds": 1}, headers=[("Retry-After", "1")])
        if match == "Exact" or limit > 0:
            at, state = wanted, store.state_at(res, wanted)
            if state is None:
                fail(410, "Expired", "The resourceVersion for the provided list is too old.")
        else:
            at, state = store.rv, store.of(res)
    namespaced_request = ns is not None or not res.namespaced
    items = sorted(((key_text(k, namespaced_request), o) for k, o in state.items()
                    if (ns is None or k[2] == ns) and labels_match(o, labels) and fields_match(o, fields)),
                   key=lambda pair: pair[0])
    if start:
        items = [(k, o) for k, o in items if k > start]
    metadata = {"resourceVersion": str(at)}
    if limit > 0 and len(items) > limit:
        metadata["continue"] = continue_token(at, items[limit - 1][0] + "\x00")
        if not labels and not fields:
            metadata["remainingItemCount"] = len(items) - limit
        items = items[:limit]
    if meta_only:
        return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
                "items": [present(res, version, o, meta_only=True) for _, o in items]}
    return {"kind": f"{res.kind}List", "apiVersion": res.api_version(version), "metadata": metadata,
            "items": [present(res, version, o, in_list=True) for _, o in items]}


def continue_token(rv, start):
    raw = compact({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def delete_collection(res, version, ns, query):
    labels = parse_labels(query.get("labelSelector", ""))
    fields = parse_fields(res, query.get("fieldSelector", ""))
    gone = []
    for key, obj in sorted(store.of(res).items()):
        if (ns is None or key[2] == ns) and labels_match(obj, labels) and fields_match(obj, fields):
            gone.append(present(res, version, store.remove(key), in_list=True))
    return {"kind": f"{res.kind}List", "apiVersion": res.api_version(version),
            "metadata": {"resourceVersion": str(store.rv)}, "items": gone}


def prepare(res, version, obj, ns, name, old, strict):
    """The object to store from what a client sent: the kind and apiVersion of the request, the
    name and namespace of the URL, the server's metadata kept from `old` (or made anew)."""
    if not isinstance(obj, dict):
        fail(400, "BadRequest", f"the body is not a {res.kind} object")
    obj = copy.deepcopy(obj)
    obj.pop("kind", None)
    obj.pop("apiVersion", None)
    meta = dict(obj.get("metadata") or {})
    for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
              "selfLink", "generation"):
        meta.pop(k, None)
    if old is not None:
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        meta["managedFields"] = old["metadata"].get("managedFields")
    else:
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_time()
        meta.pop("managedFields", None)
    meta["name"] = name
    if res.namespaced:
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    if meta.get("managedFields") is None:
        meta.pop("managedFields", None)
    stored = {"apiVersion": res.api_version(version), "kind": res.kind, "metadata": meta}
    stored.update(obj)
    stored["metadata"] = meta
    return normalize(res, stored, strict)


def create(res, version, ns, req, body):
    if not isinstance(body, dict):
        fail(400, "BadRequest", f"the body is not a {res.kind} object")
    meta = body.get("metadata") or {}
    name = meta.get("name") or ""
    if not name and meta.get("generateName"):
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        name = meta["generateName"] + "".join(randomness.choice(alphabet) for _ in range(5))
    if not name:
        fail_invalid(res.qualified_kind if res.kind != "Event" else "Event", "",
                     [required("metadata.name", "name or generateName is required")], res.group or None, res.kind)
    key = key_of(res, ns, name)
    if key in store.objects:
        fail(409, "AlreadyExists", f'{res.qualified} "{name}" already exists', details_of(res, name))
    new = prepare(res, version, body, ns, name, None, req.query.get("fieldValidation") == "Strict")
    if res.status:
        new.pop("status", None)
    validate(res, new, None)
    track_update(res, res.api_version(version), None, new, req.manager(), None)
    store.put(key, new, None)
    return Reply(201, present(res, version, new))


def one(res, version, ns, name, sub, req, meta_only):
    key = key_of(res, ns, name)
    old = store.objects.get(key)
    strict = req.query.get("fieldValidation") == "Strict"
    if req.method == "GET":
        if old is None:
            not_found(res, name)
        return Reply(200, present(res, version, old, meta_only=bool(meta_only)))
    if req.method == "DELETE":
        return delete(res, version, key, old, name, req)
    if req.method == "PUT":
        body = req.json()
        if not isinstance(body, dict):
            fail(400, "BadRequest", f"the body is not a {res.kind} object")
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            fail(400, "BadRequest", f"the name of the object ({body_name}) does not match the name on the URL ({name})")
        if old is None:
            if res.create_on_update and sub is None:
                return create(res, version, ns, req, dict(body, metadata=dict(body.get("metadata") or {}, name=name)))
            not_found(res, name)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            conflict(res, name)
        new = prepare(res, version, body, ns, name, old, strict)
        return update(res, version, key, old, new, sub, req.manager(), "Update")
    if req.method == "PATCH":
        return patch(res, version, ns, name, key, old, sub, req, strict)
    fail(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def conflict(res, name):
    fail(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been '
         "modified; please apply your changes to the latest version and try again", details_of(res, name))


def update(res, version, key, old, new, sub, manager, operation):
    """Stores `new` in place of `old` (status through the status subresource only), unless
    nothing changed; an object being deleted goes with its last finalizer."""
    if res.status:
        if sub == "status":
            status_only = copy.deepcopy(old)
            if "status" in new:
                status_only["status"] = new["status"]
            else:
                status_only.pop("status", None)
            new = status_only
        elif "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    validate(res, new, old)
    if operation == "Update":
        track_update(res, res.api_version(version), old, new, manager, sub)
    if new == old:
        return Reply(200, present(res, version, old))
    if old["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        store.remove(key)
        return Reply(200, present(res, version, new))
    store.put(key, new, old)
    return Reply(200, present(res, version, new))


def patch(res, version, ns, name, key, old, sub, req, strict):
    ctype = req.content_type
    kinds = {"application/merge-patch+json", "application/strategic-merge-patch+json",
             "application/json-patch+json", "application/apply-patch+yaml"}
    if ctype not in kinds:
        fail(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
    apply = ctype == "application/apply-patch+yaml"
    force = req.query.get("force") in TRUE
    if force and not apply:
        fail(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
             "non-apply patch", {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                 {"reason": "FieldValueForbidden", "message": "Forbidden: may not be specified for non-apply patch",
                  "field": "force"}]})
    body = req.json() if ctype != "application/apply-patch+yaml" else apply_body(req)
    if apply:
        if not req.query.get("fieldManager"):
            fail(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is '
                 "required for apply patch", {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [
                     {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
                      "field": "fieldManager"}]})
        if not isinstance(body, dict):
            fail(400, "BadRequest", "the apply patch is not an object")
        group, _, ver = (body.get("apiVersion") or "").rpartition("/")
        if body.get("kind") != res.kind or group != res.group or ver not in res.versions:
            fail(400, "BadRequest", f"invalid object type: {group}/{ver}, Kind={body.get('kind') or ''}")
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            fail(400, "BadRequest", f"the name of the object ({body_name}) does not match the name on the URL ({name})")
        if old is None:
            if sub is not None:
                not_found(res, name)
            if not body_name:
                fail(400, "BadRequest", f"the name of the object ({name} based on URL) was undeterminable: "
                     "name must be provided")
            base = prepare(res, version, {"metadata": {}}, ns, name, None, False)
            applied = normalize(res, copy.deepcopy(body), strict, defaults=False)
            merged = server_side_apply(res, res.api_version(version), base, applied, req.query["fieldManager"], force)
            new = prepare(res, version, merged, ns, name, None, strict)
            if "managedFields" in merged["metadata"]:
                new["metadata"]["managedFields"] = merged["metadata"]["managedFields"]
            if res.status:
                new.pop("status", None)
            validate(res, new, None)
            store.put(key, new, None)
            return Reply(201, present(res, version, new))
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            conflict(res, name)
        applied = normalize(res, copy.deepcopy(body), strict, defaults=False)
        if res.status and sub is None:
            applied.pop("status", None)
        merged = server_side_apply(res, res.api_version(version), old, applied, req.query["fieldManager"], force)
        new = prepare(res, version, merged, ns, name, old, strict)
        new["metadata"].pop("managedFields", None)
        if "managedFields" in merged["metadata"]:
            new["metadata"]["managedFields"] = merged["metadata"]["managedFields"]
        return update(res, version, key, old, new, sub, req.query["fieldManager"], "Apply")
    if old is None:
        not_found(res, name)
    current = without_managed_fields(old)
    if ctype == "application/merge-patch+json":
        patched = merge_patch(current, body)
    elif ctype == "application/strategic-merge-patch+json":
        patched = strategic_patch(current, body)
    else:
        patched = json_patch(current, body)
    if not isinstance(patched, dict):
        fail(400, "BadRequest", f"the patch does not leave a {res.kind} object")
    wanted = (patched.get("metadata") or {}).get("resourceVersion")
    if wanted and wanted != old["metadata"]["resourceVersion"]:
        conflict(res, name)
    patched_name = (patched.get("metadata") or {}).get("name")
    if patched_name and patched_name != name:
        fail(400, "BadRequest", f"the name of the object ({patched_name}) does not match the name on the URL ({name})")
    new = prepare(res, version, patched, ns, name, old, strict)
    return update(res, version, key, old, new, sub, req.manager(), "Update")


def apply_body(req):
    try:
        return json.loads(req.body or b"null")
    except ValueError:
        fail(400, "BadRequest", "the stand-in reads apply patches written in JSON only (YAML's JSON subset, "
             "as kubectl and kube-rs send them)")


def delete(res, version, key, old, name, req):
    if old is None:
        not_found(res, name)
    options = req.json() if req.body.strip() else {}
    pre = (options or {}).get("preconditions") or {}
    meta = old["metadata"]
    if pre.get("uid") is not None and pre["uid"] != meta.get("uid"):
        fail(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
             f"{meta.get('uid')}", {"name": name, "kind": res.kind})
    if pre.get("resourceVersion") is not None and pre["resourceVersion"] != meta.get("resourceVersion"):
        fail(409, "Conflict", f'Operation cannot be fulfilled on {res.kind} "{name}": the ResourceVersion in the '
             f"precondition ({pre['resourceVersion']}) does not match the ResourceVersion in record "
             f"({meta.get('resourceVersion')}). The object might have been modified", {"name": name, "kind": res.kind})
    if meta.get("finalizers"):
        if meta.get("deletionTimestamp"):
            return Reply(200, present(res, version, old))
        new = copy.deepcopy(old)
        new["metadata"]["deletionTimestamp"] = now_time()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        store.put(key, new, old)
        return Reply(200, present(res, version, new))
    store.remove(key)
    return Reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                       "details": dict(details_of(res, name), uid=meta.get("uid"))})


def token_request(res, ns, name, req):
    body = req.json()
    sa = store.objects.get(key_of(res, ns, name))
    if sa is None:
        not_found(res, name)
    spec = dict((body or {}).get("spec") or {})
    seconds = spec.get("expirationSeconds")
    seconds = 3600 if seconds is None else seconds
    if not isinstance(seconds, int) or seconds < args.min_token_expiration or seconds > 2 ** 32:
        detail = ("may not specify a duration larger than 2^32 seconds" if isinstance(seconds, int)
                  and seconds > 2 ** 32 else "may not specify a duration less than 10 minutes"
                  if args.min_token_expiration == 600 else
                  f"may not specify a duration less than {args.min_token_expiration} seconds")
        fail_invalid(f"TokenRequest.{AUTHN}", "", [invalid("spec.expirationSeconds", go(seconds), detail)],
                     AUTHN, "TokenRequest")
    audiences = spec.get("audiences") or [API_AUDIENCE]
    bound = None
    ref = spec.get("boundObjectRef")
    if ref is not None:
        ref_version = ref.get("apiVersion") or ""
        group = ref_version.rsplit("/", 1)[0] if "/" in ref_version else ""
        version = ref_version.rsplit("/", 1)[-1]
        if group != "" or ref.get("kind") != "Secret":
            fail(400, "BadRequest", f"cannot bind token to object of type {group}/{version}, Kind={ref.get('kind') or ''}")
        secrets = resource_for("", "secrets")
        secret = store.objects.get(key_of(secrets, ns, ref.get("name") or ""))
        if secret is None:
            not_found(secrets, ref.get("name") or "")
        uid = secret["metadata"].get("uid")
        if ref.get("uid") and ref["uid"] != uid:
            fail(409, "Conflict", f'Operation cannot be fulfilled on Secret "{ref.get("name")}": the UID in the '
                 f'bound object reference ({ref["uid"]}) does not match the UID in record. The object might '
                 f'have been deleted and then recreated', {"name": ref.get("name"), "kind": "Secret"})
        bound = {"name": ref.get("name"), "uid": uid}
    token = randomness.token_urlsafe(32)
    expires = time.time() + seconds
    tokens[token] = {"namespace": ns, "name": name, "uid": sa["metadata"].get("uid"), "expires": expires,
                     "audiences": audiences, "jti": str(uuid.uuid4()), "secret": bound}
    stamp = datetime.datetime.fromtimestamp(int(expires), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Reply(201, {"kind": "TokenRequest", "apiVersion": f"{AUTHN}/v1",
                       "metadata": {"name": name, "namespace": ns, "creationTimestamp": now_time()},
                       "spec": {"audiences": audiences, "expirationSeconds": seconds,
                                "boundObjectRef": spec.get("boundObjectRef")},
                       "status": {"token": token, "expirationTimestamp": stamp}})


# ---------------------------------------------------------------- watches

def check_watch(res, query):
    parse_labels(query.get("labelSelector", ""))
    parse_fields(res, query.get("fieldSelector", ""))
    initial = query.get("sendInitialEvents")
    match = query.get("resourceVersionMatch", "")
    if initial is not None and match != "NotOlderThan":
        listoptions_invalid("resourceVersionMatch",
                            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
    if initial is None and match:
        listoptions_invalid("resourceVersionMatch",
                            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
    rv = query.get("resourceVersion", "")
    if rv and not rv.isdigit():
        fail(500, None, f'resourceVersion: Invalid value: {json.dumps(rv)}: strconv.ParseUint: parsing '
             f'{json.dumps(rv)}: invalid syntax')
    try:
        float(query.get("timeoutSeconds") or 0)
    except ValueError:
        fail(400, "BadRequest", f'timeoutSeconds: {query["timeoutSeconds"]!r} is not a number')


def listoptions_invalid(field, message):
    fail(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}',
         {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
             {"reason": "FieldValueForbidden", "message": message, "field": field}]})


def bookmark(watch, rv, initial_end=False):
    if watch.meta_only:
        kind, api = "PartialObjectMetadata", "meta.k8s.io/v1"
    else:
        kind, api = watch.res.kind, watch.res.api_version(watch.version)
    meta = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        blueprint = compact({"kind": f"{kind}List", "apiVersion": api, "metadata": {}, "items": None}) + "\n"
        meta["annotations"] = {"k8s.io/initial-events-end": "true",
                               "kubernetes.io/initial-events-list-blueprint":
                                   base64.b64encode(blueprint.encode()).decode()}
    return {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api, "metadata": meta}}


def too_old(rv):
    return {"type": "ERROR", "object": status(410, "Expired", f"too old resource version: {rv} ({store.compacted})")}


def watch_stream(watch, send):
    """Runs a watch, giving each event line to `send`; returns when it ends (timeout, error)."""
    res, query = watch.res, watch.query
    labels = parse_labels(query.get("labelSelector", ""))
    fields = parse_fields(res, query.get("fieldSelector", ""))
    bookmarks = query.get("allowWatchBookmarks") in TRUE
    timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
    rv = query.get("resourceVersion", "")
    initial = query.get("sendInitialEvents") in TRUE or rv in ("", "0")

    def selected(obj):
        return (obj is not None and (watch.ns is None or obj["metadata"].get("namespace") == watch.ns)
                and labels_match(obj, labels) and fields_match(obj, fields))

    def show(kind, obj):
        return {"type": kind, "object": present(res, watch.version, obj, meta_only=bool(watch.meta_only))}

    lines = []
    with store.cond:
        if initial:
            namespaced_request = watch.ns is not None or not res.namespaced
            current = [(key_text(k, namespaced_request), o) for k, o in store.of(res).items() if selected(o)]
            for _, obj in sorted(current, key=lambda pair: pair[0]):
                lines.append(show("ADDED", obj))
            pos = store.rv
            if bookmarks:
                lines.append(bookmark(watch, pos, initial_end=True))
        else:
            pos = int(rv)
            if pos < store.compacted:
                send(too_old(pos))
                return
    for line in lines:
        send(line)
    start = time.monotonic()
    deadline = start + timeout
    pre_timeout = deadline - 2 if timeout > 2 else None

    def next_bookmark(now):
        due = now + args.bookmark_interval
        if pre_timeout is not None and now < pre_timeout < due:
            due = pre_timeout
        return due

    due = next_bookmark(start)
    while True:
        out = []
        with store.cond:
            now = time.monotonic()
            until = min(deadline, due) if bookmarks else deadline
            while store.rv <= pos and now < until:
                store.cond.wait(until - now)
                now = time.monotonic()
            if pos < store.compacted:
                out.append(too_old(pos))
                gone = True
            else:
                gone = False
                for erv, kind, _, obj, prev in store.events_after(res, pos):
                    now_in, was_in = selected(obj) if kind != "DELETED" else False, selected(prev)
                    if kind == "ADDED" and now_in:
                        out.append(show("ADDED", obj))
                    elif kind == "MODIFIED":
                        if now_in and was_in:
                            out.append(show("MODIFIED", obj))
                        elif now_in:
                            out.append(show("ADDED", obj))
                        elif was_in:
                            left = copy.deepcopy(prev)
                            left["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
                            out.append(show("DELETED", left))
                    elif kind == "DELETED" and was_in:
                        out.append(show("DELETED", obj))
                pos = max(pos, store.rv)
        for line in out:
            send(line)
        if gone:
            return
        now = time.monotonic()
        if now >= deadline:
            return
        if bookmarks and now >= due:
            send(bookmark(watch, pos))
            due = next_bookmark(now)


# ---------------------------------------------------------------- HTTP

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, reply):
        if isinstance(reply.obj, str):
            data, ctype = reply.obj.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(reply.obj).encode(), reply.content_type
        self.send_response(reply.code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def handle_request(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        body = self.read_body() if method in ("DELETE", "POST", "PUT", "PATCH") else b""
        auth = self.headers.get("Authorization", "")
        user, refused = authenticate(auth)
        parts = url.path.rstrip("/").split("/") if url.path != "/" else [""]
        if refused:
            reply = Reply(401, status(401, "Unauthorized", "Unauthorized"))
        else:
            try:
                reply = route(Request(method, parts, query, body, self.headers, user))
            except ApiError as err:
                reply = err.reply
            except Exception as err:  # a bug of the stand-in's: say so, as a 500
                reply = Reply(500, status(500, "InternalError", f"the stand-in failed: {type(err).__name__}: {err}"))
        code = 200 if isinstance(reply, Watch) else reply.code
        with log_lock, open(args.log, "a") as log:
            log.write(json.dumps({"method": method, "path": url.path, "query": query,
                                  "body": body.decode(errors="replace"),
                                  "contentType": self.headers.get("Content-Type"),
                                  "authenticated": args.token is not None and auth == f"Bearer {args.token}",
                                  "user": user["username"] if user else None, "code": code}) + "\n")
        if args.latency > 0:
            time.sleep(args.latency / 1000)
        if isinstance(reply, Watch):
            self.stream(reply)
        else:
            self.answer(reply)

    def stream(self, watch):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(event):
            data = (compact(event) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            watch_stream(watch, send)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

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
server = Server(("127.0.0.1", args.port), Handler)
with open(args.portfile, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
