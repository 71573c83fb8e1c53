#!/usr/bin/env bash
# Tools the chart's tests need, built once and cached under var/deploy/tools (keyed by version):
#
#   tools.sh helm      print the path of helm v3.22.0, building it with `go install` if missing
#                      (no release binary can be downloaded here; about 4 CPU-minutes the first time,
#                      seconds once Go's build cache has it)
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HELM_VERSION=v3.22.0
TOOLS="$REPO/var/deploy/tools"

helm_bin() {
  local dir="$TOOLS/helm-$HELM_VERSION"
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.helm.lock"
  flock 9  # a second caller waits for the build under way instead of starting another
  if [[ ! -x "$dir/helm" ]]; then
    command -v go >/dev/null || { echo "tools: go is needed to build helm" >&2; exit 1; }
    echo "tools: building helm $HELM_VERSION with go install" >&2
    mkdir -p "$dir"
    CGO_ENABLED=0 GOBIN="$dir" GOFLAGS=-buildvcs=false go install -ldflags="-s -w" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  fi
  echo "$dir/helm"
}

case "${1:-}" in
  helm) helm_bin ;;
  *) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
