#!/usr/bin/env python3
"""Seeds the function's fuzz corpora from the golden tests and the provider fixtures (run by
`make fuzz`; the YAML reader's own target seeds itself: crates/yaml/fuzz/seed.py).

corpus/run/         every tests/golden/<case>/input.yaml
corpus/kubeconfig/  every kubeconfig inside the provider fixtures (data.value, base64-decoded)
"""

import base64
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "corpus"


def main():
    run = CORPUS / "run"
    kubeconfig = CORPUS / "kubeconfig"
    run.mkdir(parents=True, exist_ok=True)
    kubeconfig.mkdir(parents=True, exist_ok=True)
    for case in sorted((ROOT / "tests" / "golden").iterdir()):
        if (case / "input.yaml").is_file():
            (run / f"golden-{case.name}").write_bytes((case / "input.yaml").read_bytes())
    for fixture in sorted((ROOT / "tests" / "fixtures" / "providers").glob("*.yaml")):
        for i, value in enumerate(re.findall(r"^  value: (\S+)$", fixture.read_text(), re.M)):
            try:
                decoded = base64.b64decode(value, validate=True)
            except ValueError:
                continue
            if b"clusters" in decoded:
                (kubeconfig / f"{fixture.stem}-{i}").write_bytes(decoded)


if __name__ == "__main__":
    main()
