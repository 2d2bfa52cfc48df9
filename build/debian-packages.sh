#!/usr/bin/env bash
# Installs the Debian packages build/debian-packages lists whose test is false, where it can (as
# root, with apt-get); where it cannot, says loudly which are missing and what for: the steps
# that need them then say they are skipped. `make packages` (make test's first step) and .ci/run
# both run it.
set -uo pipefail
list="$(dirname "$0")/debian-packages"
missing=()
reasons=()
# A field without the spaces around it (xargs would trim too, but refuses the apostrophes the
# reasons are written with, and says so on every run).
trim() {
  local text="$1"
  text="${text#"${text%%[![:space:]]*}"}"
  printf '%s' "${text%"${text##*[![:space:]]}"}"
}
while IFS='|' read -r package probe why; do
  package=$(trim "$package")
  case "$package" in ''|'#'*) continue ;; esac
  if ! sh -c "$probe" >/dev/null 2>&1; then
    missing+=("$package")
    reasons+=("$package ($(trim "$why"))")
  fi
done < "$list"
[ ${#missing[@]} -eq 0 ] && { echo "debian packages: all present"; exit 0; }
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "debian packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  if apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    exit 0
  fi
  echo "debian packages: apt-get could not install them all"
fi
for reason in "${reasons[@]}"; do
  echo "debian packages: *** missing, and not installable here (not root, or no apt): $reason ***"
done
exit 0
