#!/usr/bin/env bash
# Tools the chart's tests need, built once and cached under var/deploy/tools (keyed by version):
#
#   tools.sh helm      print the path of helm v3.22.0, building it with `go install` if missing
#                      (no release binary can be downloaded here; about 4 CPU-minutes the first time,
#                      seconds once Go's build cache has it)
#   tools.sh promtool  print the path of Prometheus' promtool (the chart's alert rules are checked with it):
#                      the one on PATH (`make contract-tools` installs Debian's `prometheus`), else the
#                      Debian package's binary unpacked here (apt-get download, no install, no daemon)
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

promtool_bin() {
  if command -v promtool >/dev/null; then command -v promtool; return; fi
  local dir="$TOOLS/prometheus-deb"
  mkdir -p "$TOOLS"
  exec 9>"$TOOLS/.promtool.lock"
  flock 9
  if [[ ! -x "$dir/usr/bin/promtool" ]]; then
    echo "tools: unpacking promtool from Debian's prometheus package" >&2
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && apt-get download -q prometheus >&2)
    rm -rf "$dir" && dpkg -x "$tmp"/prometheus_*.deb "$dir" && rm -rf "$tmp"
  fi
  echo "$dir/usr/bin/promtool"
}

case "${1:-}" in
  helm) helm_bin ;;
  promtool) promtool_bin ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
