#!/usr/bin/env python3
"""Makes an OCI image index of one image's platforms, in an OCI image layout.

    oci-index.py LAYOUT TAG PLATFORM...

LAYOUT holds one image manifest per platform, each tagged with the platform's name (as
`skopeo copy docker-archive:… oci:LAYOUT:amd64` leaves them). The index lists them with their
platform, read from each image's own config (a config for another platform is an error, so a
mislabelled build cannot ship), is written as a blob, and becomes the layout's one tagged entry,
TAG: `skopeo copy --all oci:LAYOUT:TAG docker://…` pushes the index and every image in it.
"""

import hashlib
import json
import os
import sys

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
REF = "org.opencontainers.image.ref.name"


def blob(layout, digest):
    algorithm, hexdigest = digest.split(":", 1)
    with open(os.path.join(layout, "blobs", algorithm, hexdigest), "rb") as f:
        data = f.read()
    if hashlib.sha256(data).hexdigest() != hexdigest:
        sys.exit(f"oci-index: blob {digest} does not match its digest")
    return data


def main(layout, tag, platforms):
    with open(os.path.join(layout, "index.json"), encoding="utf-8") as f:
        layout_index = json.load(f)
    by_ref = {m.get("annotations", {}).get(REF): m for m in layout_index["manifests"]}
    entries = []
    for platform in platforms:
        descriptor = by_ref.get(platform)
        if descriptor is None or descriptor["mediaType"] != MANIFEST:
            sys.exit(f"oci-index: {layout} has no image manifest tagged {platform}")
        manifest = json.loads(blob(layout, descriptor["digest"]))
        config = json.loads(blob(layout, manifest["config"]["digest"]))
        found = (config.get("os"), config.get("architecture"))
        if found != ("linux", platform):
            sys.exit(f"oci-index: the image tagged {platform} is built for {found[0]}/{found[1]}")
        entries.append(
            {
                "mediaType": MANIFEST,
                "digest": descriptor["digest"],
                "size": descriptor["size"],
                "platform": {"architecture": platform, "os": "linux"},
            }
        )
    index = json.dumps(
        {"schemaVersion": 2, "mediaType": INDEX, "manifests": entries},
        separators=(",", ":"),
    ).encode()
    digest = hashlib.sha256(index).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(index)
    layout_index["manifests"] = [
        {
            "mediaType": INDEX,
            "digest": f"sha256:{digest}",
            "size": len(index),
            "annotations": {REF: tag},
        }
    ]
    with open(os.path.join(layout, "index.json"), "w", encoding="utf-8") as f:
        json.dump(layout_index, f, separators=(",", ":"))
    print(f"{layout}:{tag} sha256:{digest} ({', '.join(platforms)})")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
