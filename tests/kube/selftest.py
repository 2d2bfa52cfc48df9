#!/usr/bin/env python3
"""Checks the API-server stand-in (apiserver.py, next to this file) with plain HTTP requests:
what it answers is what a real kube-apiserver v1.32 answered to the same requests (the shapes
and messages below were read from one). Standard library only; about 15 seconds.

    python3 tests/kube/selftest.py [-v] [TestCase[.test]]
"""

import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "apiserver.py")
MICRO = "2026-11-25T15:00:00.000000Z"


class StandIn:
    """One stand-in on a temporary store; stopped by close()."""

    def __init__(self, objects=(), flags=(), rules=None):
        self.dir = tempfile.TemporaryDirectory(prefix="standin-selftest-")
        self.store = os.path.join(self.dir.name, "store.json")
        self.log = os.path.join(self.dir.name, "log.jsonl")
        portfile = os.path.join(self.dir.name, "port")
        with open(self.store, "w") as f:
            json.dump(list(objects), f)
        command = [sys.executable, STANDIN, self.store, self.log, portfile, *flags]
        if rules is not None:
            path = os.path.join(self.dir.name, "rules.json")
            with open(path, "w") as f:
                json.dump(rules, f)
            command += ["--rules", path]
        self.command, self.portfile = command, portfile
        self.process = subprocess.Popen(command)
        self.wait_for_port()

    def restart(self, *flags):
        """Stopped as a crash would, then started again on its port over the store it wrote."""
        self.process.kill()
        self.process.wait()
        os.remove(self.portfile)
        self.process = subprocess.Popen([*self.command, "--port", str(self.port), *flags])
        self.wait_for_port()

    def wait_for_port(self):
        deadline = time.monotonic() + 10
        while True:
            try:
                with open(self.portfile) as f:
                    self.port = int(f.read())
                break
            except (OSError, ValueError):
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the stand-in did not start")
                time.sleep(0.02)

    def close(self):
        self.process.kill()
        self.process.wait()
        self.dir.cleanup()

    def request(self, method, path, body=None, content_type="application/json", token=None, headers=None,
                timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        hdrs = dict(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs["Content-Type"] = content_type
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode()
        return resp.status, parsed, resp

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def watch(self, path, token=None, headers=None, timeout=10):
        return Watch(self.port, path, token, headers, timeout)

    def requests(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def objects(self):
        with open(self.store) as f:
            return json.load(f)


class Watch:
    """A watch stream read event by event (HTTP/1.1 chunks, one JSON document a line)."""

    def __init__(self, port, path, token, headers, timeout):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        self.conn.request("GET", path, headers=hdrs)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def next(self):
        """The next event, or None at the end of the stream."""
        line = self.resp.readline()
        return json.loads(line) if line else None

    def rest(self):
        out = []
        while (event := self.next()) is not None:
            out.append(event)
        self.close()
        return out

    def close(self):
        self.conn.close()


def secret(name, namespace="fleet", labels=None, **data):
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def lease(name, **spec):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, "spec": spec}


SECRETS = "/api/v1/namespaces/fleet/secrets"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/ops/leases"
EVENTS = "/apis/events.k8s.io/v1/namespaces/argocd/events"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class Case(unittest.TestCase):
    flags = ()
    objects = ()
    rules = None

    def setUp(self):
        self.api = StandIn(self.objects, self.flags, self.rules)

    def tearDown(self):
        self.api.close()

    def ok(self, expected, answer):
        code, body, _ = answer
        self.assertEqual(code, expected, body)
        return body

    def create(self, path, obj):
        return self.ok(201, self.api.request("POST", path, obj))


class Lists(Case):
    def test_every_write_takes_the_next_resource_version_and_lists_carry_the_counter(self):
        versions = [int(self.create(SECRETS, secret(f"s{i}", a=str(i)))["metadata"]["resourceVersion"])
                    for i in range(3)]
        self.assertEqual(versions, list(range(versions[0], versions[0] + 3)))
        listed = self.ok(200, self.api.get(SECRETS))
        self.assertEqual(listed["kind"], "SecretList")
        self.assertEqual(listed["apiVersion"], "v1")
        self.assertEqual(listed["metadata"], {"resourceVersion": str(versions[-1])})
        self.assertEqual([i["metadata"]["name"] for i in listed["items"]], ["s0", "s1", "s2"])
        # a typed list's items carry no kind, as the real server's
        self.assertNotIn("kind", listed["items"][0])
        lease_list = self.ok(200, self.api.get(LEASES))
        self.assertEqual((lease_list["kind"], lease_list["apiVersion"]), ("LeaseList", "coordination.k8s.io/v1"))
        self.assertEqual(lease_list["metadata"]["resourceVersion"], str(versions[-1]))

    def test_pages_come_from_one_snapshot(self):
        for i in range(5):
            self.create(SECRETS, secret(f"s{i}"))
        first = self.ok(200, self.api.get(SECRETS + "?limit=2"))
        self.assertEqual([i["metadata"]["name"] for i in first["items"]], ["s0", "s1"])
        self.assertEqual(first["metadata"]["remainingItemCount"], 3)
        token = first["metadata"]["continue"]
        self.create(SECRETS, secret("s10"))  # after the snapshot: not in its pages
        self.ok(200, self.api.request("DELETE", SECRETS + "/s3"))
        second = self.ok(200, self.api.get(SECRETS + "?limit=2&continue=" + token))
        self.assertEqual([i["metadata"]["name"] for i in second["items"]], ["s2", "s3"])
        self.assertEqual(second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"])
        third = self.ok(200, self.api.get(SECRETS + "?limit=2&continue=" + second["metadata"]["continue"]))
        self.assertEqual([i["metadata"]["name"] for i in third["items"]], ["s4"])
        self.assertNotIn("continue", third["metadata"])
        # a label selector: no remainingItemCount, as the real server
        labelled = self.ok(200, self.api.get(SECRETS + "?limit=1&labelSelector=" + urllib.parse.quote("!x")))
        self.assertIn("continue", labelled["metadata"])
        self.assertNotIn("remainingItemCount", labelled["metadata"])
        # resourceVersion=0 is the watch cache's answer: everything, limit ignored
        everything = self.ok(200, self.api.get(SECRETS + "?limit=2&resourceVersion=0"))
        self.assertEqual(len(everything["items"]), 5)
        self.assertNotIn("continue", everything["metadata"])
        code, body, _ = self.api.get(SECRETS + "?limit=2&resourceVersion=5&continue=" + token)
        self.assertEqual((code, body["message"]), (400, "specifying resource version is not allowed when using continue"))
        code, body, _ = self.api.get(SECRETS + "?limit=2&continue=garbage")
        self.assertEqual(code, 400)
        self.assertTrue(body["message"].startswith("invalid continue token"), body)

    def test_exact_and_too_large_resource_versions(self):
        before = self.create(SECRETS, secret("a"))["metadata"]["resourceVersion"]
        self.create(SECRETS, secret("b"))
        exact = self.ok(200, self.api.get(f"{SECRETS}?resourceVersion={before}&resourceVersionMatch=Exact"))
        self.assertEqual([i["metadata"]["name"] for i in exact["items"]], ["a"])
        self.assertEqual(exact["metadata"]["resourceVersion"], before)
        code, body, resp = self.api.get(SECRETS + "?resourceVersion=99999999")
        self.assertEqual((code, body["reason"]), (504, "Timeout"))
        self.assertTrue(body["message"].startswith("Timeout: Too large resource version: 99999999, current: "))
        self.assertEqual(resp.getheader("Retry-After"), "1")
        code, body, _ = self.api.get(SECRETS + "?resourceVersionMatch=NotOlderThan")
        self.assertEqual((code, body["reason"]), (422, "Invalid"))

    def test_selectors(self):
        self.create(SECRETS, secret("a", labels={"team": "x", "tier": "1"}))
        self.create(SECRETS, secret("b", labels={"team": "y"}))
        self.create("/api/v1/namespaces/other/secrets", secret("c", namespace="other", labels={"team": "x"}))

        def names(selector):
            listed = self.ok(200, self.api.get("/api/v1/secrets?" + selector))
            return [i["metadata"]["name"] for i in listed["items"]]

        q = urllib.parse.quote
        self.assertEqual(names("labelSelector=" + q("team=x")), ["a", "c"])
        self.assertEqual(names("labelSelector=" + q("team in (y, z)")), ["b"])
        self.assertEqual(names("labelSelector=" + q("team notin (y),tier")), ["a"])
        self.assertEqual(names("labelSelector=" + q("!tier")), ["b", "c"])
        self.assertEqual(names("fieldSelector=" + q("metadata.namespace=other")), ["c"])
        self.assertEqual(names("fieldSelector=" + q("metadata.name!=a,metadata.namespace==fleet")), ["b"])
        code, body, _ = self.api.get(SECRETS + "?fieldSelector=" + q("spec.foo=x"))
        self.assertEqual((code, body["message"]), (400, "field label not supported: spec.foo"))
        code, _, _ = self.api.get(SECRETS + "?labelSelector=" + q("a===b"))
        self.assertEqual(code, 400)

    def test_metadata_only_lists(self):
        self.create(SECRETS, secret("a", labels={"k": "v"}, key="value"))
        accept = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}
        listed = self.ok(200, self.api.get(SECRETS, headers=accept))
        self.assertEqual((listed["kind"], listed["apiVersion"]), ("PartialObjectMetadataList", "meta.k8s.io/v1"))
        item = listed["items"][0]
        self.assertEqual((item["kind"], item["metadata"]["labels"]), ("PartialObjectMetadata", {"k": "v"}))
        self.assertNotIn("data", item)


class Paging410(Case):
    flags = ("--history", "3")

    def test_a_continue_token_and_a_watch_older_than_the_history_are_410(self):
        for i in range(3):
            self.create(SECRETS, secret(f"s{i}"))
        first = self.ok(200, self.api.get(SECRETS + "?limit=1"))
        start = first["metadata"]["resourceVersion"]
        for i in range(4):  # pushes the snapshot's version out of the history
            self.ok(200, self.api.request("PATCH", f"{SECRETS}/s0", {"metadata": {"labels": {"n": str(i)}}}, MERGE))
        code, body, _ = self.api.get(SECRETS + "?limit=1&continue=" + first["metadata"]["continue"])
        self.assertEqual((code, body["reason"]), (410, "Expired"), body)
        self.assertTrue(body["message"].startswith("The provided continue parameter is too old"))
        self.assertIn("continue", body["metadata"])  # the inconsistent continuation, as the real server's
        code, body, _ = self.api.get(f"{SECRETS}?resourceVersion={start}&resourceVersionMatch=Exact")
        self.assertEqual((code, body["message"]), (410, "The resourceVersion for the provided list is too old."))
        # a watch from there: 200, one ERROR event with a 410 Status, the end (the watcher relists)
        watch = self.api.watch(f"{SECRETS}?watch=true&resourceVersion={start}&allowWatchBookmarks=true")
        self.assertEqual(watch.status, 200)
        events = watch.rest()
        self.assertEqual(len(events), 1, events)
        self.assertEqual(events[0]["type"], "ERROR")
        error = events[0]["object"]
        self.assertEqual((error["kind"], error["code"], error["reason"]), ("Status", 410, "Expired"))
        self.assertTrue(error["message"].startswith(f"too old resource version: {start} ("), error)


class Watches(Case):
    flags = ("--bookmark-interval", "0.5")

    def test_changes_after_a_resource_version_in_order(self):
        rv = self.create(SECRETS, secret("a"))["metadata"]["resourceVersion"]
        watch = self.api.watch(f"{SECRETS}?watch=true&resourceVersion={rv}&timeoutSeconds=5")
        self.assertEqual(watch.status, 200)
        self.assertEqual(watch.resp.getheader("Transfer-Encoding"), "chunked")
        self.create(SECRETS, secret("b"))
        self.ok(200, self.api.request("PATCH", SECRETS + "/a", {"metadata": {"labels": {"x": "1"}}}, MERGE))
        deleted = self.ok(200, self.api.request("DELETE", SECRETS + "/b"))
        events = [watch.next() for _ in range(3)]
        watch.close()
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in events],
                         [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")])
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        self.assertEqual(versions, sorted(versions))
        self.assertGreater(versions[0], int(rv))
        self.assertEqual(events[0]["object"]["kind"], "Secret")
        self.assertEqual(deleted["status"], "Success")

    def test_selectors_turn_entering_and_leaving_into_added_and_deleted(self):
        self.create(SECRETS, secret("a", labels={"team": "x"}))
        self.create(SECRETS, secret("b"))
        q = urllib.parse.quote
        watch = self.api.watch(f"{SECRETS}?watch=1&labelSelector={q('team=x')}&timeoutSeconds=5")
        first = watch.next()
        self.assertEqual((first["type"], first["object"]["metadata"]["name"]), ("ADDED", "a"))
        named = self.api.watch(f"{SECRETS}?watch=1&fieldSelector={q('metadata.name=b')}&timeoutSeconds=5")
        self.assertEqual(named.next()["object"]["metadata"]["name"], "b")
        self.ok(200, self.api.request("PATCH", SECRETS + "/a", {"metadata": {"labels": {"team": "y"}}}, MERGE))
        self.ok(200, self.api.request("PATCH", SECRETS + "/b", {"metadata": {"labels": {"team": "x"}}}, MERGE))
        left, entered = watch.next(), watch.next()
        self.assertEqual((left["type"], left["object"]["metadata"]["name"]), ("DELETED", "a"))
        self.assertEqual((entered["type"], entered["object"]["metadata"]["name"]), ("ADDED", "b"))
        modified = named.next()
        self.assertEqual((modified["type"], modified["object"]["metadata"]["name"]), ("MODIFIED", "b"))
        watch.close()
        named.close()

    def test_initial_events_then_the_initial_events_end_bookmark(self):
        self.create(SECRETS, secret("b"))
        self.create(SECRETS, secret("a"))
        for query in ("resourceVersion=0", "",
                      "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0"):
            watch = self.api.watch(f"{SECRETS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=5&{query}")
            events = [watch.next() for _ in range(3)]
            watch.close()
            self.assertEqual([(e["type"], e["object"]["metadata"].get("name")) for e in events],
                             [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None)], query)
            mark = events[2]["object"]
            self.assertEqual(mark["kind"], "Secret")
            self.assertEqual(mark["metadata"]["annotations"]["k8s.io/initial-events-end"], "true")
            blueprint = json.loads(base64.b64decode(
                mark["metadata"]["annotations"]["kubernetes.io/initial-events-list-blueprint"]))
            self.assertEqual(blueprint, {"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": None})
        code, body, _ = self.api.get(f"{SECRETS}?watch=true&sendInitialEvents=true")
        self.assertEqual(code, 422)
        self.assertIn("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", body["message"])

    def test_periodic_bookmarks_carry_only_the_resource_version(self):
        rv = self.create(LEASES, lease("l"))["metadata"]["resourceVersion"]
        watch = self.api.watch(f"{LEASES}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5")
        mark = watch.next()
        watch.close()
        self.assertEqual(mark, {"type": "BOOKMARK", "object": {
            "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
            "metadata": {"resourceVersion": rv, "creationTimestamp": None}}})

    def test_a_watch_ends_at_its_timeout_and_does_not_hold_up_other_requests(self):
        started = time.monotonic()
        watch = self.api.watch(f"{SECRETS}?watch=true&timeoutSeconds=1")
        self.ok(200, self.api.get(SECRETS))  # served while the watch is open
        self.create(SECRETS, secret("during"))
        events = watch.rest()
        elapsed = time.monotonic() - started
        self.assertEqual([e["type"] for e in events], ["ADDED"])
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 3)

    def test_metadata_watch(self):
        self.create(SECRETS, secret("a", key="value"))
        watch = self.api.watch(f"{SECRETS}?watch=true&timeoutSeconds=2&allowWatchBookmarks=true",
                               headers={"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"})
        added, mark = watch.next(), watch.next()
        watch.close()
        self.assertEqual(added["object"]["kind"], "PartialObjectMetadata")
        self.assertNotIn("data", added["object"])
        self.assertEqual(mark["object"]["apiVersion"], "meta.k8s.io/v1")


class Leases(Case):
    def test_create_get_replace_and_the_resource_version_conflict(self):
        created = self.create(LEASES, lease("leader"))
        self.assertEqual(created["spec"], {})
        self.assertEqual(created["metadata"]["namespace"], "ops")
        code, body, _ = self.api.request("POST", LEASES, lease("leader"))
        self.assertEqual((code, body["reason"], body["message"]),
                         (409, "AlreadyExists", 'leases.coordination.k8s.io "leader" already exists'))
        got = self.ok(200, self.api.get(LEASES + "/leader"))
        got["spec"] = {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": MICRO}
        replaced = self.ok(200, self.api.request("PUT", LEASES + "/leader", got))
        code, body, _ = self.api.request("PUT", LEASES + "/leader", got)  # the old resourceVersion
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertEqual(body["message"], 'Operation cannot be fulfilled on leases.coordination.k8s.io "leader": '
                         "the object has been modified; please apply your changes to the latest version and try again")
        self.assertEqual(body["details"], {"name": "leader", "group": "coordination.k8s.io", "kind": "leases"})
        self.assertGreater(int(replaced["metadata"]["resourceVersion"]), int(created["metadata"]["resourceVersion"]))
        # a PUT of a missing Lease creates it, as the real server allows
        self.ok(201, self.api.request("PUT", LEASES + "/other", lease("other")))
        code, body, _ = self.api.get(LEASES + "/nope")
        self.assertEqual((code, body["message"]), (404, 'leases.coordination.k8s.io "nope" not found'))

    def test_validation_as_the_real_server(self):
        code, body, _ = self.api.request("POST", LEASES, lease("bad", leaseDurationSeconds=0, leaseTransitions=-1))
        self.assertEqual(code, 422)
        self.assertEqual(body["message"], 'Lease.coordination.k8s.io "bad" is invalid: [spec.leaseDurationSeconds: '
                         "Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be "
                         "greater than or equal to 0]")
        self.assertEqual([c["field"] for c in body["details"]["causes"]],
                         ["spec.leaseDurationSeconds", "spec.leaseTransitions"])
        code, body, _ = self.api.request("POST", LEASES, lease("seconds", renewTime="2026-11-25T15:00:00Z"))
        self.assertEqual(code, 400)
        self.assertTrue(body["message"].startswith('Lease in version "v1" cannot be handled as a Lease: parsing time '
                                                   '"2026-11-25T15:00:00Z" as "2006-01-02T15:04:05.000000Z07:00"'))
        code, body, _ = self.api.request("POST", LEASES + "?fieldValidation=Strict", lease("strict", bogus=1))
        self.assertEqual((code, body["message"]), (400, 'Lease in version "v1" cannot be handled as a Lease: strict '
                                                        'decoding error: unknown field "spec.bogus"'))
        dropped = self.create(LEASES, lease("dropped", bogus=1, holderIdentity="h"))
        self.assertEqual(dropped["spec"], {"holderIdentity": "h"})

    def test_a_jobs_pod_template_is_immutable(self):
        jobs = "/apis/batch/v1/namespaces/argocd/jobs"
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
               "spec": {"backoffLimit": 0, "template": {"spec": {"containers": [{"name": "c", "args": ["a"]}]}}}}
        made = self.create(jobs, job)
        made["spec"]["backoffLimit"] = 1
        code, _, _ = self.api.request("PUT", f"{jobs}/once", made)
        self.assertEqual(code, 200)
        _, made, _ = self.api.get(f"{jobs}/once")
        made["spec"]["template"]["spec"]["containers"][0]["args"] = ["b"]
        code, body, _ = self.api.request("PUT", f"{jobs}/once", made)
        self.assertEqual(code, 422)
        self.assertEqual(body["message"], 'Job.batch "once" is invalid: spec.template: Invalid value: '
                                          "core.PodTemplateSpec{…}: field is immutable")

    def test_the_lock_kube_lease_manager_takes_with_apply_and_strategic_patches(self):
        """kube-lease-manager 0.13: create, then apply without force to take a free lease (the
        field owners' conflict is the lock), strategic merge patches to renew and release."""
        self.create(LEASES, {"metadata": {"name": "lock"}, "spec": {}})
        path = LEASES + "/lock?fieldManager="

        def take(identity, at):
            return self.api.request("PATCH", path + f"kube-lease-{identity}", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "spec": {"acquireTime": at, "renewTime": at, "holderIdentity": identity,
                         "leaseDurationSeconds": 5}}, APPLY)

        taken = self.ok(200, take("a", MICRO))
        self.assertEqual(taken["metadata"]["managedFields"][0]["manager"], "kube-lease-a")
        self.assertEqual(taken["metadata"]["managedFields"][0]["operation"], "Apply")
        code, body, _ = take("b", "2026-11-25T15:00:01.000000Z")
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertEqual(body["message"], 'Apply failed with 3 conflicts: conflicts with "kube-lease-a":\n'
                         "- .spec.acquireTime\n- .spec.holderIdentity\n- .spec.renewTime")
        renewed = self.ok(200, self.api.request("PATCH", path + "kube-lease-a", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "spec": {"renewTime": "2026-11-25T15:00:02.000000Z", "leaseDurationSeconds": 5}}, STRATEGIC))
        self.assertEqual(renewed["spec"]["renewTime"], "2026-11-25T15:00:02.000000Z")
        code, body, _ = take("b", "2026-11-25T15:00:03.000000Z")
        self.assertEqual(code, 409)
        self.assertIn('"kube-lease-a" using coordination.k8s.io/v1', body["message"])  # the Update owner
        released = self.ok(200, self.api.request("PATCH", path + "kube-lease-a", {"spec": {
            "acquireTime": None, "renewTime": None, "holderIdentity": None, "leaseDurationSeconds": None}}, STRATEGIC))
        self.assertEqual(released["spec"], {})
        self.assertNotIn("managedFields", released["metadata"])
        taken = self.ok(200, take("b", "2026-11-25T15:00:04.000000Z"))
        self.assertEqual(taken["spec"]["holderIdentity"], "b")
        again = self.ok(200, take("b", "2026-11-25T15:00:04.000000Z"))
        self.assertEqual(again["metadata"]["resourceVersion"], taken["metadata"]["resourceVersion"])  # a no-op
        forced = self.ok(200, self.api.request("PATCH", path + "kube-lease-c&force=true", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": "c"}}, APPLY))
        self.assertEqual(forced["spec"]["holderIdentity"], "c")
        owners = {m["manager"]: m["fieldsV1"] for m in forced["metadata"]["managedFields"]}
        self.assertEqual(owners["kube-lease-c"], {"f:spec": {"f:holderIdentity": {}}})
        self.assertNotIn("f:holderIdentity", owners["kube-lease-b"]["f:spec"])


class Events(Case):
    def event(self, **extra):
        return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "cluster-a.18b2f0c1d2e3f4a5", "namespace": "argocd"},
                "eventTime": MICRO, "action": "Sync", "reason": "Synced", "note": "created",
                "type": "Normal", "reportingController": "capi2argo-controller",
                "reportingInstance": "capi2argo-controller-0",
                "regarding": {"apiVersion": "v1", "kind": "Secret", "namespace": "argocd", "name": "cluster-a"},
                **extra}

    def test_create_then_the_recorders_series_patch(self):
        created = self.create(EVENTS, self.event())
        self.assertEqual(created["deprecatedSource"], {})
        series = self.event(series={"count": 2, "lastObservedTime": "2026-11-25T15:00:05.000000Z"})
        patched = self.ok(200, self.api.request("PATCH", EVENTS + "/cluster-a.18b2f0c1d2e3f4a5", series, MERGE))
        self.assertEqual(patched["series"]["count"], 2)
        self.assertGreater(int(patched["metadata"]["resourceVersion"]), int(created["metadata"]["resourceVersion"]))
        code, body, _ = self.api.request("PATCH", EVENTS + "/cluster-a.18b2f0c1d2e3f4a5",
                                         {"series": {"count": 1, "lastObservedTime": MICRO}}, MERGE)
        self.assertEqual((code, body["message"]), (422, 'Event "cluster-a.18b2f0c1d2e3f4a5" is invalid: '
                                                        'series.count: Invalid value: "": should be at least 2'))
        code, body, _ = self.api.request("PATCH", EVENTS + "/cluster-a.18b2f0c1d2e3f4a5",
                                         {"note": "changed", "reason": "Other"}, MERGE)
        self.assertEqual(code, 422)
        self.assertEqual(body["message"], 'Event "cluster-a.18b2f0c1d2e3f4a5" is invalid: [reason: Invalid value: '
                         '"Other": field is immutable, message: Invalid value: "changed": field is immutable]')
        code, body, _ = self.api.request("PATCH", EVENTS + "/nope", {"series": None}, MERGE)
        self.assertEqual((code, body["message"]), (404, 'events.events.k8s.io "nope" not found'))

    def test_create_validation_as_the_real_server(self):
        code, body, _ = self.api.request("POST", EVENTS, {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                                                          "metadata": {"name": "e1"}})
        self.assertEqual(code, 422)
        self.assertEqual(body["message"], 'Event "e1" is invalid: [involvedObject.namespace: Invalid value: "": does '
                         'not match event.namespace, eventTime: Required value, type: Invalid value: "": has invalid '
                         "value: ]")
        code, body, _ = self.api.request("POST", EVENTS, self.event(type="Bad", note="x" * 1100))
        self.assertEqual(body["message"], 'Event "cluster-a.18b2f0c1d2e3f4a5" is invalid: [message: Invalid value: '
                         '"": can have at most 1024 characters, type: Invalid value: "": has invalid value: Bad]')
        code, body, _ = self.api.request("POST", EVENTS, self.event(eventTime="2026-11-25T15:00:00Z"))
        self.assertEqual(code, 400)


class Patches(Case):
    def test_merge_strategic_and_json_patches(self):
        self.create(SECRETS, secret("s", labels={"a": "1", "b": "2"}, key="v"))
        merged = self.ok(200, self.api.request("PATCH", SECRETS + "/s", {
            "metadata": {"labels": {"a": None, "c": "3"}}, "stringData": {"more": "text"}}, MERGE))
        self.assertEqual(merged["metadata"]["labels"], {"b": "2", "c": "3"})
        self.assertEqual(base64.b64decode(merged["data"]["more"]), b"text")
        self.assertNotIn("stringData", merged)
        strategic = self.ok(200, self.api.request("PATCH", SECRETS + "/s", {
            "metadata": {"labels": {"$patch": "replace", "only": "this"}}}, STRATEGIC))
        self.assertEqual(strategic["metadata"]["labels"], {"only": "this"})
        jsonpatch = self.ok(200, self.api.request("PATCH", SECRETS + "/s", [
            {"op": "add", "path": "/metadata/labels/x~1y", "value": "z"},
            {"op": "remove", "path": "/data/key"}], "application/json-patch+json"))
        self.assertEqual(jsonpatch["metadata"]["labels"], {"only": "this", "x/y": "z"})
        self.assertNotIn("key", jsonpatch["data"])
        code, body, _ = self.api.request("PATCH", SECRETS + "/s", {}, "text/plain")
        self.assertEqual((code, body["message"]), (415, "415: Unsupported Media Type"))
        code, body, _ = self.api.request("PATCH", SECRETS + "/s?force=true", {}, MERGE)
        self.assertEqual(code, 422)
        patches = [r for r in self.api.requests() if r["method"] == "PATCH"]
        self.assertEqual([r["contentType"] for r in patches[:3]], [MERGE, STRATEGIC, "application/json-patch+json"])
        self.assertEqual([r["code"] for r in patches], [200, 200, 200, 415, 422])

    def test_namespaces_every_cluster_has_and_one_applied(self):
        # A real server has these four, and each namespace an object lives in; another is 404
        # until it is made (kube-apiserver v1.32: GET, then server-side apply creates it).
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            got = self.ok(200, self.api.request("GET", f"/api/v1/namespaces/{name}"))
            self.assertEqual(got["metadata"]["labels"], {"kubernetes.io/metadata.name": name})
        code, body, _ = self.api.request("GET", "/api/v1/namespaces/argocd-system")
        self.assertEqual((code, body["message"]), (404, 'namespaces "argocd-system" not found'))
        made = self.ok(201, self.api.request(
            "PATCH", "/api/v1/namespaces/argocd-system?fieldManager=capi2argo&force=true",
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "argocd-system", "labels": {"app.kubernetes.io/managed-by": "capi2argo"}}}, APPLY))
        self.assertEqual(made["metadata"]["labels"]["app.kubernetes.io/managed-by"], "capi2argo")
        self.ok(200, self.api.request("GET", "/api/v1/namespaces/argocd-system"))

    def test_server_side_apply_creates_or_merges_and_records_the_manager(self):
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        objects = [
            ("/api/v1/namespaces/kube-system/serviceaccounts/argocd-manager",
             {"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": "argocd-manager", "namespace": "kube-system", "labels": {"app": "capi2argo"}}}),
            (f"{rbac}/clusterroles/argocd-manager-role",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
              "metadata": {"name": "argocd-manager-role"},
              "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
            (f"{rbac}/clusterrolebindings/argocd-manager-role-binding",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
              "metadata": {"name": "argocd-manager-role-binding"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "argocd-manager-role"},
              "subjects": [{"kind": "ServiceAccount", "name": "argocd-manager", "namespace": "kube-system"}]}),
            (f"{rbac}/namespaces/argocd/roles/r",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": []}),
            (f"{rbac}/namespaces/argocd/rolebindings/r",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "r"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": []}),
            (SECRETS + "/applied", dict(secret("applied", labels={"a": "1"}, key="v"), type="Opaque")),
        ]
        for path, obj in objects:
            created = self.ok(201, self.api.request("PATCH", path + "?fieldManager=capi2argo&force=true", obj, APPLY))
            self.assertEqual([(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]],
                             [("capi2argo", "Apply")], path)
            again = self.ok(200, self.api.request("PATCH", path + "?fieldManager=capi2argo&force=true", obj, APPLY))
            self.assertEqual(again["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"], path)
        # someone else's label stays; what capi2argo no longer applies goes
        self.ok(200, self.api.request("PATCH", SECRETS + "/applied", {"metadata": {"labels": {"theirs": "x"}}}, MERGE))
        merged = self.ok(200, self.api.request("PATCH", SECRETS + "/applied?fieldManager=capi2argo&force=true",
                                               secret("applied", labels={"b": "2"}, key="v"), APPLY))
        self.assertEqual(merged["metadata"]["labels"], {"theirs": "x", "b": "2"})
        writes = [r for r in self.api.requests() if r["method"] == "PATCH" and r["contentType"] == APPLY]
        self.assertTrue(all(r["query"] == {"fieldManager": "capi2argo", "force": "true"} for r in writes))
        code, body, _ = self.api.request("PATCH", SECRETS + "/applied", secret("applied"), APPLY)
        self.assertEqual((code, body["message"]), (422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                                                        "Required value: is required for apply patch"))
        code, body, _ = self.api.request("PATCH", SECRETS + "/unnamed?fieldManager=m",
                                         {"apiVersion": "v1", "kind": "Secret"}, APPLY)
        self.assertEqual((code, body["message"]), (400, "the name of the object (unnamed based on URL) was "
                                                        "undeterminable: name must be provided"))
        stored = [o for o in self.api.objects() if o["metadata"]["name"] == "argocd-manager-role-binding"][0]
        self.assertEqual(stored["subjects"][0]["name"], "argocd-manager")

    def test_finalizers_hold_a_deletion(self):
        self.create(SECRETS, dict(secret("held"), metadata={"name": "held", "finalizers": ["example.com/x"]}))
        held = self.ok(200, self.api.request("DELETE", SECRETS + "/held"))
        self.assertIn("deletionTimestamp", held["metadata"])
        self.ok(200, self.api.get(SECRETS + "/held"))
        self.ok(200, self.api.request("PATCH", SECRETS + "/held", {"metadata": {"finalizers": None}}, MERGE))
        self.assertEqual(self.api.get(SECRETS + "/held")[0], 404)
        code, body, _ = self.api.request("DELETE", SECRETS + "/held")
        self.assertEqual((code, body["message"]), (404, 'secrets "held" not found'))


class Tokens(Case):
    flags = ("--token", "admin-token", "--min-token-expiration", "1")
    rules = [
        {"namespace": None, "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"user": "system:serviceaccount:kube-system:argocd-manager", "namespace": "argocd",
         "apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
        {"user": "system:serviceaccount:kube-system:argocd-manager", "namespace": "argocd",
         "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["mine"],
         "verbs": ["get", "list", "watch"]},
    ]

    def test_resource_names_allow_a_list_or_watch_by_name(self):
        # kube-apiserver authorizes a list or watch with a metadata.name field selector by that
        # name, so a rule's resourceNames can allow it; without the selector it is forbidden.
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argocd-manager"}}
        self.ok(201, self.api.request("POST", "/api/v1/namespaces/kube-system/serviceaccounts", sa, token="admin-token"))
        token = self.ok(201, self.api.request(
            "POST", "/api/v1/namespaces/kube-system/serviceaccounts/argocd-manager/token",
            {"spec": {"expirationSeconds": 600}}, token="admin-token"))["status"]["token"]
        leases = "/apis/coordination.k8s.io/v1/namespaces/argocd/leases"
        self.ok(200, self.api.get(leases + "?fieldSelector=metadata.name%3Dmine", token=token))
        self.assertEqual(self.api.get(leases, token=token)[0], 403)
        self.assertEqual(self.api.get(leases + "?fieldSelector=metadata.name%3Dother", token=token)[0], 403)
        watch = self.api.watch(leases + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dmine", token=token)
        self.assertEqual(watch.status, 200)
        watch.close()

    def test_token_request_whoami_rbac_and_expiry(self):
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "argocd-manager"}}
        self.ok(201, self.api.request("POST", "/api/v1/namespaces/kube-system/serviceaccounts", sa, token="admin-token"))
        path = "/api/v1/namespaces/kube-system/serviceaccounts/argocd-manager/token"
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 2}}
        before = time.time()
        minted = self.ok(201, self.api.request("POST", path, request, token="admin-token"))
        self.assertEqual((minted["kind"], minted["apiVersion"]), ("TokenRequest", "authentication.k8s.io/v1"))
        self.assertEqual(minted["spec"]["audiences"], ["https://kubernetes.default.svc"])
        token = minted["status"]["token"]
        expiry = time.mktime(time.strptime(minted["status"]["expirationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        self.assertLessEqual(abs(expiry - (before + 2)), 1.5)
        review = self.ok(201, self.api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                               {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                                               token=token))
        user = review["status"]["userInfo"]
        self.assertEqual(user["username"], "system:serviceaccount:kube-system:argocd-manager")
        self.assertEqual(user["groups"], ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                          "system:authenticated"])
        self.ok(200, self.api.get("/api/v1/namespaces/argocd/secrets", token=token))
        code, body, _ = self.api.get("/api/v1/namespaces/fleet/secrets", token=token)
        self.assertEqual((code, body["message"]), (403, 'secrets is forbidden: User "system:serviceaccount:kube-system:'
                                                        'argocd-manager" cannot list resource "secrets" in API group "" '
                                                        'in the namespace "fleet"'))
        admin = self.ok(201, self.api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {},
                                              token="admin-token"))
        self.assertEqual(admin["status"]["userInfo"]["username"], "admin")
        code, body, _ = self.api.request("POST", "/api/v1/namespaces/kube-system/serviceaccounts/nope/token",
                                         request, token="admin-token")
        self.assertEqual((code, body["message"]), (404, 'serviceaccounts "nope" not found'))
        other = self.ok(201, self.api.request("POST", path, {"spec": {"audiences": ["elsewhere"]}}, token="admin-token"))
        self.assertEqual(self.api.get("/api/v1/namespaces/argocd/secrets", token=other["status"]["token"])[0], 401)
        self.assertEqual(self.api.get("/api/v1/namespaces/argocd/secrets", token="made-up")[0], 401)
        time.sleep(max(0.0, before + 2.1 - time.time()))
        code, body, _ = self.api.get("/api/v1/namespaces/argocd/secrets", token=token)
        self.assertEqual((code, body["message"]), (401, "Unauthorized"))
        users = [r["user"] for r in self.api.requests()]
        self.assertIn("system:serviceaccount:kube-system:argocd-manager", users)
        self.assertIsNone(users[-1])

    def test_a_token_bound_to_a_secret_goes_with_it(self):
        # pkg/registry/core/serviceaccount/storage/token.go: the Secret must exist in the
        # ServiceAccount's namespace with the uid given; pkg/serviceaccount/claims.go: the token
        # is refused once the Secret is gone, and the other tokens stay valid.
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bound"}}
        self.ok(201, self.api.request("POST", "/api/v1/namespaces/ns/serviceaccounts", sa, token="admin-token"))
        path = "/api/v1/namespaces/ns/serviceaccounts/bound/token"
        made = self.ok(201, self.api.request("POST", "/api/v1/namespaces/ns/secrets",
                                             {"metadata": {"generateName": "bound-token-"}, "type": "x/binding"},
                                             token="admin-token"))
        name, uid = made["metadata"]["name"], made["metadata"]["uid"]
        def ref(**over):
            return {"spec": {"expirationSeconds": 600,
                             "boundObjectRef": dict({"apiVersion": "v1", "kind": "Secret", "name": name, "uid": uid}, **over)}}
        code, body, _ = self.api.request("POST", path, ref(uid="other"), token="admin-token")
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        self.assertIn("does not match the UID in record", body["message"])
        code, body, _ = self.api.request("POST", path, ref(name="missing", uid=""), token="admin-token")
        self.assertEqual((code, body["message"]), (404, 'secrets "missing" not found'))
        code, body, _ = self.api.request("POST", path, ref(kind="ConfigMap"), token="admin-token")
        self.assertEqual((code, body["message"]), (400, "cannot bind token to object of type /v1, Kind=ConfigMap"))
        bound = self.ok(201, self.api.request("POST", path, ref(), token="admin-token"))
        self.assertEqual(bound["spec"]["boundObjectRef"]["name"], name)
        free = self.ok(201, self.api.request("POST", path, {"spec": {"expirationSeconds": 600}}, token="admin-token"))
        review = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
        for minted in (bound, free):
            self.ok(201, self.api.request("POST", review, {}, token=minted["status"]["token"]))
        self.ok(200, self.api.request("DELETE", f"/api/v1/namespaces/ns/secrets/{name}", token="admin-token"))
        code, _, _ = self.api.request("POST", review, {}, token=bound["status"]["token"])
        self.assertEqual(code, 401)
        self.ok(201, self.api.request("POST", review, {}, token=free["status"]["token"]))

    def test_a_deleted_service_account_takes_its_tokens_along(self):
        sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gone"}}
        self.ok(201, self.api.request("POST", "/api/v1/namespaces/ns/serviceaccounts", sa, token="admin-token"))
        minted = self.ok(201, self.api.request("POST", "/api/v1/namespaces/ns/serviceaccounts/gone/token",
                                               {"spec": {"expirationSeconds": 600}}, token="admin-token"))
        code, body, _ = self.api.request("POST", "/api/v1/namespaces/ns/serviceaccounts/gone/token",
                                         {"spec": {"expirationSeconds": 0}}, token="admin-token")
        self.assertEqual(code, 422)
        token = minted["status"]["token"]
        self.ok(201, self.api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, token=token))
        self.ok(200, self.api.request("DELETE", "/api/v1/namespaces/ns/serviceaccounts/gone", token="admin-token"))
        code, _, _ = self.api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {}, token=token)
        self.assertEqual(code, 401)


class Discovery(Case):
    def test_new_groups_and_cluster_api_by_default(self):
        groups = {g["name"]: g for g in self.ok(200, self.api.get("/apis"))["groups"]}
        for name in ("coordination.k8s.io", "events.k8s.io", "authentication.k8s.io", "cluster.x-k8s.io"):
            self.assertIn(name, groups)
        leases = self.ok(200, self.api.get("/apis/coordination.k8s.io/v1"))
        self.assertEqual([(r["name"], r["kind"], r["namespaced"]) for r in leases["resources"]],
                         [("leases", "Lease", True)])
        events = self.ok(200, self.api.get("/apis/events.k8s.io/v1"))
        self.assertEqual(events["resources"][0]["name"], "events")
        self.assertIn("patch", events["resources"][0]["verbs"])
        core = {r["name"]: r for r in self.ok(200, self.api.get("/api/v1"))["resources"]}
        self.assertEqual(core["serviceaccounts/token"]["kind"], "TokenRequest")
        self.assertEqual(groups["cluster.x-k8s.io"]["preferredVersion"]["version"], "v1beta1")


class NoCapi(Case):
    flags = ("--no-capi",)
    objects = [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": {"name": "c", "namespace": "f"}}]

    def test_no_cluster_api_group_at_all(self):
        names = [g["name"] for g in self.ok(200, self.api.get("/apis"))["groups"]]
        self.assertFalse([n for n in names if n.endswith("cluster.x-k8s.io")], names)
        for path in ("/apis/cluster.x-k8s.io", "/apis/cluster.x-k8s.io/v1beta1",
                     "/apis/cluster.x-k8s.io/v1beta1/clusters", "/apis/cluster.x-k8s.io/v1beta2/namespaces/f/clusters"):
            code, body, resp = self.api.get(path)
            self.assertEqual((code, body), (404, "404 page not found\n"), path)
            self.assertEqual(resp.getheader("Content-Type"), "text/plain; charset=utf-8")
        self.assertEqual(len(self.api.objects()), 1)  # kept, not served


class CapiV1beta2(Case):
    flags = ("--capi", "v1beta2,v1beta1")
    objects = [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                "metadata": {"name": "c", "namespace": "f", "resourceVersion": "7"}, "status": {"phase": "Provisioned"}}]

    def test_v1beta2_is_preferred_and_both_versions_serve_the_same_objects(self):
        group = self.ok(200, self.api.get("/apis/cluster.x-k8s.io"))
        self.assertEqual([v["version"] for v in group["versions"]], ["v1beta2", "v1beta1"])
        self.assertEqual(group["preferredVersion"]["version"], "v1beta2")
        v2 = self.ok(200, self.api.get("/apis/cluster.x-k8s.io/v1beta2/namespaces/f/clusters"))
        self.assertEqual(v2["items"][0]["apiVersion"], "cluster.x-k8s.io/v1beta2")  # CRD lists keep the kind
        v1 = self.ok(200, self.api.get("/apis/cluster.x-k8s.io/v1beta1/namespaces/f/clusters/c"))
        self.assertEqual(v1["apiVersion"], "cluster.x-k8s.io/v1beta1")
        # status only through the status subresource
        replaced = self.ok(200, self.api.request("PUT", "/apis/cluster.x-k8s.io/v1beta2/namespaces/f/clusters/c",
                                                 dict(v1, status={"phase": "Deleting"}, spec={"paused": True})))
        self.assertEqual((replaced["status"], replaced["spec"]), ({"phase": "Provisioned"}, {"paused": True}))
        status = self.ok(200, self.api.request("PATCH", "/apis/cluster.x-k8s.io/v1beta2/namespaces/f/clusters/c/status",
                                               {"status": {"phase": "Deleting"}, "spec": {"paused": False}}, MERGE))
        self.assertEqual((status["status"], status["spec"]), ({"phase": "Deleting"}, {"paused": True}))


class Latency(Case):
    flags = ("--latency", "300")

    def test_every_answer_waits(self):
        started = time.monotonic()
        self.ok(200, self.api.get("/version"))
        self.assertGreaterEqual(time.monotonic() - started, 0.3)


class Restart(Case):
    def test_a_restart_keeps_the_objects_and_loses_the_history(self):
        rv = self.create(SECRETS, secret("a"))["metadata"]["resourceVersion"]
        self.create(SECRETS, secret("b"))
        port = self.api.port
        self.api.restart()
        self.assertEqual(self.api.port, port)
        listed = self.ok(200, self.api.get(SECRETS))
        self.assertEqual([o["metadata"]["name"] for o in listed["items"]], ["a", "b"])
        self.assertGreater(int(listed["metadata"]["resourceVersion"]), int(rv))
        # A watch resumed from before the restart: the 410 a compacted etcd gives, then the end.
        events = self.api.watch(f"{SECRETS}?watch=true&resourceVersion={rv}").rest()
        self.assertEqual([(e["type"], e["object"]["code"]) for e in events], [("ERROR", 410)])

    def test_in_memory_writes_nothing_back(self):
        self.api.restart("--in-memory")
        self.create(SECRETS, secret("c"))
        self.assertEqual(self.api.objects(), [])
        self.ok(200, self.api.get(SECRETS + "/c"))


class Interfere(Case):
    flags = ("--interfere", "PUT", SECRETS + "/a")
    objects = (secret("a", value="one"),)

    def test_another_client_writes_first_once(self):
        got = self.ok(200, self.api.get(SECRETS + "/a"))
        got["data"]["value"] = base64.b64encode(b"two").decode()
        code, body, _ = self.api.request("PUT", SECRETS + "/a", got)
        self.assertEqual((code, body["reason"]), (409, "Conflict"))
        now = self.ok(200, self.api.get(SECRETS + "/a"))
        self.assertEqual(now["metadata"]["annotations"], {"stand-in/interfered": "true"})
        now["data"]["value"] = got["data"]["value"]
        self.ok(200, self.api.request("PUT", SECRETS + "/a", now))


if __name__ == "__main__":
    unittest.main()
