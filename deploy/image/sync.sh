#!/bin/sh
# capi2argo-sync: one unattended run of capi2argo in the management cluster (the CronJob in
# deploy/ runs it; /usr/local/bin/capi2argo-sync in the image). POSIX sh, as BusyBox runs it.
#
#  1. Reads, with the API server (in-cluster credentials, or KUBECONFIG), into one input:
#     the kubeconfig Secrets (one `kubectl get secrets -l SELECTOR` per selector in
#     SECRET_SELECTORS), the Cluster API Clusters (READ_CLUSTERS), the control plane objects
#     named in CONTROL_PLANES, and every Secret of Argo CD's namespace (ARGO_NAMESPACE), where
#     the Argo CD cluster Secrets are. With NAMESPACES (a comma list), the kubeconfig Secrets,
#     Clusters and control planes are read in those namespaces only, and the function is told
#     allowedNamespaces=NAMESPACES, so it never treats a namespace it did not read as empty.
#     If any read fails, nothing is planned and nothing is changed.
#  2. Plans with capi2argo (`capi2argo plan`, logged: one line per Argo CD Secret, never a
#     secret value), settings from the functionConfig file CAPI2ARGO_CONFIG (the ConfigMap
#     mounted at /etc/capi2argo/capi2argo.yaml), then argoNamespace=ARGO_NAMESPACE, then the
#     `--set KEY=VALUE` arguments given to this script (a one-off run's settings).
#  3. Carries out exactly the plan's API requests (`capi2argo plan -o requests`: create, replace
#     with the resourceVersion read, delete with the uid and resourceVersion read), in order,
#     with `kubectl VERB --raw PATH -f -` (creates and replaces as field manager
#     capi2argo-sync), and stops at the first one refused. Their bodies hold
#     credentials: they go from a file to kubectl, and what the API server answers to /dev/null.
#
# Exit codes (the CronJob's podFailurePolicy fails the Job at once on 1 and 2, and retries 3 and
# 4, which a new read may resolve):
#   0  everything planned was carried out; the plan had no errors
#   1  the plan had errors (a guard held, a cluster failed to convert): what it decided was still
#      carried out (a guard that holds decides to keep), and the Job fails so that someone looks
#   2  nothing done: bad arguments or settings, or capi2argo refused the input (its exit 2)
#   3  nothing done: a read from the API server failed
#   4  a request was refused or failed: the ones before it were carried out, none after it
set -eu
set -o pipefail

prog=capi2argo-sync
say() { printf '%s: %s\n' "$prog" "$*" >&2; }
fail() {
  code=$1
  shift
  say "$*"
  exit "$code"
}

config=${CAPI2ARGO_CONFIG:-/etc/capi2argo/capi2argo.yaml}
argo_ns=${ARGO_NAMESPACE:-}
selectors=${SECRET_SELECTORS-cluster.x-k8s.io/cluster-name}
namespaces=${NAMESPACES:-}
read_clusters=${READ_CLUSTERS:-true}
control_planes=${CONTROL_PLANES:-}

# Arguments: a one-off run's settings, `--set KEY=VALUE` pairs and nothing else (an input file
# or a flag here would change what the run reads).
expect_value=
for arg in "$@"; do
  if [ -n "$expect_value" ]; then
    case $arg in
    *=*) expect_value= ;;
    *) fail 2 "usage: $prog [--set KEY=VALUE]...: '--set $arg' is not KEY=VALUE; nothing was changed" ;;
    esac
  elif [ "$arg" = --set ]; then
    expect_value=y
  else
    fail 2 "usage: $prog [--set KEY=VALUE]...: unexpected argument '$arg'; nothing was changed"
  fi
done
[ -z "$expect_value" ] || fail 2 "usage: $prog [--set KEY=VALUE]...: --set needs KEY=VALUE; nothing was changed"

# Settings of the script itself: checked before anything is read.
name_ok() {
  case $1 in
  '' | *[!a-z0-9-]* | -* | *-) return 1 ;;
  esac
}
name_ok "$argo_ns" || fail 2 "ARGO_NAMESPACE='$argo_ns' is not a namespace name (the CronJob sets it to its own namespace); nothing was changed"
[ -r "$config" ] || fail 2 "the settings file $config cannot be read (the capi2argo-settings ConfigMap, mounted there); nothing was changed"
case $read_clusters in
true | false) ;;
*) fail 2 "READ_CLUSTERS='$read_clusters' is neither true nor false; nothing was changed" ;;
esac
old_ifs=$IFS
IFS=,
for ns in $namespaces; do
  name_ok "$ns" || fail 2 "NAMESPACES: '$ns' is not a namespace name; nothing was changed"
done
for resource in $control_planes; do
  case $resource in
  '' | *[!a-z0-9.-]* | .* | *.) fail 2 "CONTROL_PLANES: '$resource' is not a resource name such as kubeadmcontrolplanes.controlplane.cluster.x-k8s.io; nothing was changed" ;;
  esac
done
IFS=$old_ifs
case ";$selectors;" in
';;') ;;
*';;'*) fail 2 "SECRET_SELECTORS='$selectors' has an empty entry (an empty value, alone, reads every Secret); nothing was changed" ;;
esac
if [ -n "$namespaces" ]; then
  case $namespaces in
  *,,* | ,* | *,) fail 2 "NAMESPACES='$namespaces' has an empty entry; nothing was changed" ;;
  esac
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/capi2argo-sync.XXXXXX") || fail 3 "no temporary directory (is /tmp writable?); nothing was changed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' HUP INT TERM
input=$tmp/input.yaml
: >"$input"

# 1. Reads. Each one appends a `kind: List` document; any failure ends the run before a plan.
# No --request-timeout on any kubectl: with it, kubectl no longer uses the in-cluster
# configuration (client-go's clientcmd counts the flag as a configuration of its own and falls
# back to localhost:8080). The Job's activeDeadlineSeconds bounds a run that hangs.
reads=0
read_list() {
  what=$1
  shift
  printf '%s\n' '---' >>"$input"
  if ! kubectl get "$@" -o yaml >>"$input" 2>"$tmp/err"; then
    say "reading $what failed (kubectl get $*):"
    sed 's/^/  /' "$tmp/err" >&2
    fail 3 "a read failed, so nothing was planned and nothing was changed"
  fi
  reads=$((reads + 1))
}

# The namespaces the kubeconfig Secrets, Clusters and control planes are read in: -A, or each
# of NAMESPACES.
in_scope() {
  what=$1
  shift
  if [ -z "$namespaces" ]; then
    read_list "$what in all namespaces" "$@" -A
  else
    IFS=,
    set -f
    for ns in $namespaces; do
      IFS=$old_ifs
      read_list "$what in namespace $ns" "$@" -n "$ns"
    done
    set +f
    IFS=$old_ifs
  fi
}

if [ -z "$selectors" ]; then
  in_scope "every Secret" secrets
else
  IFS=';'
  set -f
  for selector in $selectors; do
    IFS=$old_ifs
    in_scope "the Secrets labelled $selector" secrets -l "$selector"
  done
  set +f
  IFS=$old_ifs
fi
if [ "$read_clusters" = true ]; then
  in_scope "the Cluster API Clusters" clusters.cluster.x-k8s.io
fi
IFS=,
set -f
for resource in $control_planes; do
  IFS=$old_ifs
  in_scope "the control planes ($resource)" "$resource"
done
set +f
IFS=$old_ifs
read_list "the Secrets of Argo CD's namespace $argo_ns" secrets -n "$argo_ns"
say "read $reads lists ($(wc -c <"$input") bytes)"

# 2. The plan. The function's own settings first, then this run's, then what the deployment
# fixes: the namespace it may write to, and the namespaces it read.
set -- --fn-config "$config" "$@" --set "argoNamespace=$argo_ns"
if [ -n "$namespaces" ]; then
  set -- "$@" --set "allowedNamespaces=$namespaces"
fi
plan_status=0
capi2argo plan "$@" "$input" || plan_status=$?
case $plan_status in
0 | 1) ;;
2) fail 2 "capi2argo refused the input or the settings (exit 2, above); nothing was changed" ;;
*) fail 2 "capi2argo ended with exit $plan_status; nothing was changed" ;;
esac

# The same plan as requests (the function is deterministic: same input, same settings). Its
# messages were just logged with the plan; a different exit code would mean a different plan.
requests_status=0
capi2argo plan -o requests "$@" "$input" >"$tmp/requests" 2>"$tmp/err" || requests_status=$?
if [ "$requests_status" != "$plan_status" ]; then
  sed 's/^/  /' "$tmp/err" >&2
  fail 2 "capi2argo plan -o requests exited $requests_status where the plan exited $plan_status; nothing was changed"
fi

# 3. The requests, in order; the first refusal ends the run. Each is logged by the Secret it is
# about, namespace/name: for a create the name is the body's (its first "metadata":{"name":…,
# which capi2argo writes first), for the others the path's last segment.
total=$(wc -l <"$tmp/requests" | tr -d ' ')
done_count=0
while read -r verb path body; do
  case $verb in
  create) past=created ;;
  replace) past=replaced ;;
  delete) past=deleted ;;
  *) fail 4 "request $((done_count + 1)) of $total is not create, replace or delete; it and the ones after it were not made" ;;
  esac
  ns=${path#/api/v1/namespaces/}
  ns=${ns%%/*}
  if [ "$verb" = create ]; then
    name=${body#*'"metadata":{"name":"'}
    name=${name%%'"'*}
  else
    name=${path##*/}
  fi
  case $ns/$name in
  *[!a-z0-9./-]*) secret=$path ;;
  *) secret=$ns/$name ;;
  esac
  # Writes name their field manager, so the Secrets' managedFields say who wrote them.
  url=$path
  case $verb/$path in
  delete/* | *'?'*) ;;
  *) url="$path?fieldManager=capi2argo-sync" ;;
  esac
  if ! printf '%s\n' "$body" | kubectl "$verb" --raw "$url" -f - >/dev/null 2>"$tmp/err"; then
    say "request $((done_count + 1)) of $total ($verb $secret) refused or failed:"
    sed 's/^/  /' "$tmp/err" >&2
    fail 4 "$done_count requests were carried out before it, the $((total - done_count - 1)) after it were not made; the next run reads again"
  fi
  done_count=$((done_count + 1))
  say "$past $secret"
done <"$tmp/requests"

if [ "$plan_status" = 1 ]; then
  fail 1 "the plan has errors (above): its $total requests were carried out, and what the errors cover was kept as it is; failing so that the Job shows it"
fi
say "done: $total requests carried out"
