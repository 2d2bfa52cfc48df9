#!/bin/sh
# /usr/local/bin/kpt in a sidecar image built without a kpt for its platform (make cmp-image with no
# KPT_<platform>): the linux/arm64 image, as no package registry the image is built from offers an
# arm64 kpt. The capi2argo-kpt plugin fails with this message there; the capi2argo plugin never
# runs kpt.
echo "kpt is not part of this image: it was built without a kpt binary for its platform (KPT_arm64=/path/to/kpt for make cmp-image); the capi2argo plugin works without it" >&2
exit 1
