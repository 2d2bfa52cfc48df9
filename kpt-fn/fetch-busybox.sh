#!/bin/sh
# Fetches Debian's busybox-static for amd64 and arm64 into DIR/<arch>/bin/busybox, for the Argo
# CD plugin sidecar (make cmp-image). Both come from one set of package lists, so both are the same
# version, and `busybox --list` of the amd64 one names the applets of either.
#
# apt-get works on a package list of its own under DIR (Dir::State, Dir::Cache): neither the
# system's apt state nor dpkg's architectures change, and no root is needed. The sources are the
# system's (/etc/apt/sources.list*); Debian's mirrors carry both architectures.
set -eu

dir=$1
state=$dir/apt
rm -rf "$state"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/debs"
: >"$state/status"

apt_get() {
  apt-get -q -o Dir::State="$state" -o Dir::State::Lists="$state/lists" \
    -o Dir::State::status="$state/status" -o Dir::Cache="$state/cache" \
    -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 \
    -o APT::Sandbox::User="$(id -un)" -o Debug::NoLocking=1 "$@"
}

if ! command -v apt-get >/dev/null || ! apt_get update >"$state/update.log" 2>&1; then
  cat "$state/update.log" 2>/dev/null >&2 || true
  echo "fetch-busybox: apt-get could not fetch Debian's package lists; give static BusyBox binaries with BUSYBOX_amd64=... BUSYBOX_arm64=..." >&2
  exit 1
fi

versions=""
for arch in amd64 arm64; do
  (cd "$state/debs" && apt_get download "busybox-static:$arch" >/dev/null)
  deb=$(ls "$state"/debs/busybox-static_*_"$arch".deb)
  versions="$versions $(dpkg-deb -f "$deb" Version)"
  rm -rf "$state/root-$arch" "$dir/$arch"
  dpkg-deb -x "$deb" "$state/root-$arch"
  mkdir -p "$dir/$arch/bin"
  # /bin before Debian 13, /usr/bin since (merged /usr).
  for path in bin/busybox usr/bin/busybox; do
    if [ -f "$state/root-$arch/$path" ]; then
      cp "$state/root-$arch/$path" "$dir/$arch/bin/busybox"
      break
    fi
  done
  test -x "$dir/$arch/bin/busybox" || { echo "fetch-busybox: no busybox in $deb" >&2; exit 1; }
done

set -- $versions
if [ "$1" != "$2" ]; then
  echo "fetch-busybox: amd64 has busybox-static $1, arm64 has $2: the applet lists could differ" >&2
  exit 1
fi
echo "$1" >"$dir/VERSION"
echo "fetch-busybox: busybox-static $1 for amd64 and arm64 in $dir"
rm -rf "$state"
