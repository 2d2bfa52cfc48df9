#!/usr/bin/env python3
"""Prints one line for a whole `make test` run from the log its steps appended to:
`N passed, M failed, K skipped`, then what each step took, then what was skipped and why.

Counted: Rust test results (`test result: … N passed; M failed; K ignored`), Node's TAP totals
(`# pass`, `# fail`, `# skipped`), the wasmtime suite (which prints a Rust-style result line),
fuzz smoke runs (`fuzz smoke: Done …`) and loud skips (`*** SKIPPED test: …` from a Rust test,
which its harness counted as passed; `*** SKIPPED check: …` from a step of the Makefile).
"""

import re
import sys


def main(path):
    passed = failed = skipped = 0
    reasons = []
    steps = []
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        print("test summary: no log (the run stopped before any test ran)")
        return
    for line in lines:
        m = re.match(r"step: (\S+) (\d+) s$", line)
        if m:
            steps.append((m[1], int(m[2])))
            continue
        m = re.search(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
        if m:
            passed += int(m[1])
            failed += int(m[2])
            skipped += int(m[3])
            continue
        m = re.match(r"# (pass|fail|skipped) (\d+)$", line)
        if m:
            n = int(m[2])
            if m[1] == "pass":
                passed += n
            elif m[1] == "fail":
                failed += n
            else:
                skipped += n
            continue
        if line.startswith("fuzz smoke: Done "):
            passed += 1
            continue
        m = re.search(r"\*\*\* SKIPPED (test|check): (.*?) \*\*\*", line)
        if m:
            # A step said twice (a target two steps share) is one skip.
            if m[1] == "check" and m[2] in reasons:
                continue
            skipped += 1
            if m[1] == "test":
                passed -= 1
            reasons.append(m[2])
            continue
        m = re.search(r"# SKIP (.+)$", line)
        if m:
            reasons.append(m[1])
    print(f"\ntest summary: {passed} passed, {failed} failed, {skipped} skipped")
    if steps:
        total = sum(t for _, t in steps)
        shown = ", ".join(f"{name} {t} s" for name, t in steps)
        print(f"  steps ({total} s): {shown}")
    for reason in dict.fromkeys(reasons):
        print(f"  skipped: {reason}")


if __name__ == "__main__":
    main(sys.argv[1])
