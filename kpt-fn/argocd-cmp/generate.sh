#!/bin/sh
# capi2argo-generate: the generate command of the capi2argo Argo CD config management plugin.
#
# argocd-cmp-server runs it in the application's directory (the Application's source path, inside
# a copy of the repository) and applies what it prints. It:
#
#  1. reads every *.yaml and *.yml file below that directory, recursively, in byte order of their
#     paths, skipping hidden files and directories (.git, .github, ...) and ./capi2argo.yaml;
#  2. runs capi2argo over them with ./capi2argo.yaml, when present, as the functionConfig, plus one
#     `--set` per ARGOCD_ENV_* variable (the Application's spec.source.plugin.env), applied last.
#     An upper-case name is SNAKE_CASE for the camelCase key; any other name is the key as it is:
#       ARGOCD_ENV_NAMESPACED_NAMES=true    ->  --set namespacedNames=true
#       ARGOCD_ENV_ARGO_NAMESPACE=gitops    ->  --set argoNamespace=gitops
#       ARGOCD_ENV_allowedNamespaces=a,b    ->  --set allowedNamespaces=a,b
#     Unknown keys are capi2argo errors, so a typo fails the generation;
#  3. prints only the Argo CD cluster Secrets capi2argo wrote: the documents of kind Secret (or
#     SealedSecret, with `seal: sealedSecrets`) that carry the label capi-to-argocd/owned: "true".
#     The CAPI Secrets it read belong to Cluster API;
#     printing them would make Argo CD apply them, and prune them when they leave the repository.
#
# When capi2argo reports an error (exit 1) or cannot run (exit 2), nothing is printed on stdout, its
# messages (each naming the Secret and field) stay on stderr, and its exit code is the script's,
# so Argo CD shows the failure instead of applying a partial fleet.
#
# Argo CD prunes what the plugin stops generating, and the repository never holds the live Argo CD
# Secrets the function's guards compare with; so the plugin keeps the allowEmpty guard itself: a
# generation that yields no Argo CD Secret at all fails (exit 1), unless the Application sets
# ARGOCD_ENV_ALLOW_EMPTY=true, so that a directory that lost its Secrets never empties Argo CD.
set -eu

prog=capi2argo-generate
app=${ARGOCD_APP_NAME:-?}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/capi2argo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' HUP INT TERM

# 1. The input: every YAML file as one multi-document stream.
find . -name '.?*' -prune -o -type f \( -name '*.yaml' -o -name '*.yml' \) ! -path ./capi2argo.yaml -print |
  LC_ALL=C sort >"$tmp/files"
while IFS= read -r file; do
  printf '%s\n' '---'
  cat -- "$file"
  printf '\n'
done <"$tmp/files" >"$tmp/input.yaml"

# 2. The settings: capi2argo.yaml, then the plugin env. Variable names are [A-Za-z0-9_] only, so
# the pairs split on white space and `eval` reads a plain variable.
set --
if [ -f capi2argo.yaml ]; then
  set -- --fn-config capi2argo.yaml
fi
pairs=$(awk 'BEGIN {
  for (name in ENVIRON) {
    if (name !~ /^ARGOCD_ENV_[A-Za-z0-9_]+$/) continue
    key = substr(name, 12)
    if (key !~ /[a-z]/) {
      n = split(tolower(key), word, "_")
      key = word[1]
      for (i = 2; i <= n; i++) key = key toupper(substr(word[i], 1, 1)) substr(word[i], 2)
    }
    print name "=" key
  }
}' </dev/null | LC_ALL=C sort)
for pair in $pairs; do
  eval "value=\${${pair%%=*}}"
  set -- "$@" --set "${pair#*=}=$value"
done
# Always strict: with strict=false a cluster whose conversion fails would drop out of the
# manifests, and Argo CD would prune its Secret.
set -- "$@" --set strict=true

status=0
capi2argo "$@" "$tmp/input.yaml" >"$tmp/output.yaml" || status=$?
if [ "$status" -ne 0 ]; then
  printf '%s: application %s: capi2argo failed (exit %s); no manifests generated\n' "$prog" "$app" "$status" >&2
  exit "$status"
fi

# 3. The output: the generated Argo CD Secrets only. A document starts at a `---` line (YAML allows
# no other line starting with `---` at column 0); capi2argo writes its Secrets in block style.
awk '
function flush() {
  if (secret && owned) printf "---\n%s", doc
  doc = ""; secret = 0; owned = 0
}
BEGIN {
  q = "[\"\047]"
  kind_re = "^kind:[ \t]*" q "?(Sealed)?Secret" q "?[ \t\r]*$"
  owned_re = "^[ \t]+" q "?capi-to-argocd/owned" q "?[ \t]*:[ \t]*" q "true" q "[ \t\r]*$"
}
/^(---|\.\.\.)([ \t\r]|$)/ {
  flush()
  if ($0 !~ /^---[ \t]+[^ \t\r#]/) next
  sub(/^---[ \t]+/, "")
}
{
  doc = doc $0 "\n"
  if ($0 ~ kind_re) secret = 1
  if ($0 ~ owned_re) owned = 1
}
END { flush() }
' "$tmp/output.yaml" >"$tmp/secrets.yaml"

if [ ! -s "$tmp/secrets.yaml" ] && [ "${ARGOCD_ENV_ALLOW_EMPTY:-}" != true ]; then
  printf '%s: application %s: no Argo CD cluster Secret generated; with pruning on, Argo CD would remove every cluster this application registered, so nothing is generated (allowEmpty: set ARGOCD_ENV_ALLOW_EMPTY=true if the application really has no cluster left)\n' "$prog" "$app" >&2
  exit 1
fi
cat "$tmp/secrets.yaml"
