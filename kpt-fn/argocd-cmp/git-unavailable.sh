#!/bin/sh
# kpt refuses to start without a `git` on PATH (kpt run/run.go, exec.LookPath("git")), though
# rendering a package never calls it. This image has no git: a command that needs it fails here,
# saying so.
echo "git is not part of the capi2argo plugin image: kpt fn render needs none" >&2
exit 1
