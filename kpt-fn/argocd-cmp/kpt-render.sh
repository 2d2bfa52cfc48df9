#!/bin/sh
# capi2argo-kpt-render: the generate command of the capi2argo-kpt plugin (the seed's
# argocd-cmp-kpt pattern). argocd-cmp-server runs it in the application's directory, a kpt
# package whose Kptfile pipeline runs capi2argo (`exec: capi2argo`). It:
#
#  1. renders a copy of the package with `kpt fn render` (exec functions allowed: capi2argo and
#     the other binaries of this image, never anything from the repository);
#  2. prints the rendered resources without the package's local configuration (the Kptfile,
#     function configs: anything annotated config.kubernetes.io/local-config: "true"), through
#     `kpt fn eval --exec remove-local-config-resources --output unwrap`.
#
# On a failed render nothing is printed on stdout and kpt's message stays on stderr, with kpt's
# exit code, so Argo CD shows the failure instead of applying a partial render.
set -eu

prog=capi2argo-kpt-render
app=${ARGOCD_APP_NAME:-?}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/capi2argo-kpt.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' HUP INT TERM

# The copy keeps the application's files as Argo CD gave them.
mkdir "$tmp/pkg"
cp -R . "$tmp/pkg/"

status=0
kpt fn render "$tmp/pkg" --allow-exec >"$tmp/render.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$tmp/render.log" >&2
  printf '%s: application %s: kpt fn render failed (exit %s); no manifests generated\n' "$prog" "$app" "$status" >&2
  exit "$status"
fi
kpt fn eval "$tmp/pkg" --exec remove-local-config-resources --output unwrap
