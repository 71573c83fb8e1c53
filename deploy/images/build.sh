#!/usr/bin/env bash
# Builds the container images with podman, from Debian packages (no registry is needed):
#
#   localhost/ticketing-base:<key>      mmdebstrap bookworm minbase + python3 + ca-certificates
#   localhost/ticketing-app:<key>       every service and role (app/Containerfile, target production), also
#                                       tagged :local and :<VERSION> (the release's version, the chart's appVersion)
#   localhost/ticketing-app-dev:<key>   the same and the dev tools (target dev: the gateway simulator, the SMTP
#                                       sink), also :local and :<VERSION>; built in the same podman build, from
#                                       the same cached layers
#   localhost/ticketing-postgres:<key>  PostgreSQL 15, provisioned like deploy/local     (also :local)
#   localhost/ticketing-redis:<key>     Redis 7                                            (also :local)
#   localhost/ticketing-kafka:<key>     Kafka 4.0.2 from deploy/local's Maven jars         (also :local)
#
#   build.sh            build what is missing (each <key> is a hash of the image's inputs), print the tags
#
# Caches: the base root filesystem tarball in var/deploy/cache/base-<key>.tar, the Kafka jars in
# var/kafka/libs (infra.sh), podman's own image store, and the host's uv cache mounted into the app build.
# Needs root on Debian for the first run (apt-get install podman runc mmdebstrap uidmap).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$REPO/deploy/images"
CACHE="$REPO/var/deploy/cache"
CONTEXTS="$REPO/var/deploy/contexts"
LOGS="$REPO/var/deploy/logs"
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
BASE_PACKAGES=python3,ca-certificates
UV_VERSION=0.13.8

log() { echo "images: $*" >&2; }
die() { echo "images: ERROR: $*" >&2; exit 1; }

image_key() { # files... -> 16 hex chars over their paths and contents and the base image
  local f
  { for f in "$@"; do printf '%s\n' "${f#"$REPO"/}"; cat "$f"; done; echo "$BASE"; } | sha256sum | cut -c1-16
}

source_files() { # the app image's inputs, as the build context sees them (.dockerignore)
  (cd "$REPO" && find pyproject.toml uv.lock .dockerignore shared services testing/pyproject.toml -type f \
      -not -path '*/tests/*' -not -path '*/__pycache__/*' -not -name '*.pyc' -not -path '*/.*cache*' | sort) \
    | sed "s#^#$REPO/#"
}

ensure_podman() {
  if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v runc >/dev/null; then
    log "installing podman, runc, mmdebstrap, uidmap (apt)"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc mmdebstrap uidmap >/dev/null
  fi
  # crun fails on this kind of host (hybrid cgroups, rlimits): runc and no default ulimits.
  if [[ ! -s /etc/containers/containers.conf ]]; then
    mkdir -p /etc/containers
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n' >/etc/containers/containers.conf
  fi
}

image_exists() { podman image exists "$1"; }

base_image() {
  local key tar
  key="$(printf '%s %s %s' "$SUITE" "$MIRROR" "$BASE_PACKAGES" | sha256sum | cut -c1-16)"
  BASE="localhost/ticketing-base:$key"
  image_exists "$BASE" && return 0
  tar="$CACHE/base-$key.tar"
  if [[ ! -s "$tar" ]]; then
    log "base root filesystem from Debian $SUITE (mmdebstrap, about a minute)"
    mkdir -p "$CACHE"
    mmdebstrap --quiet --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$tar.part.tar" \
      "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
      "deb http://deb.debian.org/debian-security $SUITE-security main"
    mv "$tar.part.tar" "$tar"
  fi
  podman import --quiet "$tar" "$BASE" >/dev/null
}

uv_image() { # the pinned uv binary as an image, the way the public uv image ships it (/uv)
  UV_IMAGE="localhost/ticketing-uv:$UV_VERSION"
  image_exists "$UV_IMAGE" && return 0
  local uv dir
  uv="$(command -v uv || true)"  # deploy/local/bootstrap.sh put the pinned one on PATH or in var/tools
  [[ -x "$REPO/var/tools/bin/uv" ]] && uv="$REPO/var/tools/bin/uv"
  [[ -n "$uv" && "$("$uv" --version | cut -d' ' -f2)" == "$UV_VERSION" ]] || die "uv $UV_VERSION not found"
  dir="$(mktemp -d)"
  cp "$uv" "$dir/uv"
  tar -C "$dir" -c uv | podman import --quiet - "$UV_IMAGE" >/dev/null
  rm -rf "$dir"
}

build() { # name key context containerfile [podman build options...]
  local name="$1" key="$2" context="$3" file="$4"
  shift 4
  local image="localhost/ticketing-$name:$key"
  if ! image_exists "$image"; then
    log "building $image"
    podman build --quiet --network host --layers -f "$file" -t "$image" --build-arg "BASE_IMAGE=$BASE" \
      "$@" "$context" >"$LOGS/$name.log" 2>&1 || { tail -n 40 "$LOGS/$name.log" >&2; die "$name failed"; }
  fi
  podman tag "$image" "localhost/ticketing-$name:local"
  [[ "$name" != app* ]] || podman tag "$image" "localhost/ticketing-$name:$(<"$REPO/VERSION")"  # the chart's appVersion
  local var="${name^^}"
  echo "${var//-/_}_IMAGE=$image"
}

app_image() {
  local cacert=() uv_cache files key name target
  mapfile -t files < <(source_files)
  [[ -s /etc/ssl/certs/ca-certificates.crt ]] && cacert=(--secret id=cacert,src=/etc/ssl/certs/ca-certificates.crt)
  uv_cache="${UV_CACHE_DIR:-$HOME/.cache/uv}"
  mkdir -p "$uv_cache"
  key="$(image_key "$HERE/app/Containerfile" "${files[@]}")"
  # One after the other: the dev target reuses the production build's layers (podman --layers), so it costs
  # only its own uv sync of the dev tools.
  for name in app app-dev; do
    target=production
    [[ "$name" == app ]] || target=dev
    build "$name" "$key" "$REPO" "$HERE/app/Containerfile" --target "$target" \
      --build-arg "UV_IMAGE=$UV_IMAGE" "${cacert[@]}" --volume "$uv_cache:/root/.cache/uv"
  done
}

postgres_image() {
  build postgres "$(image_key "$HERE/postgres/Containerfile" "$HERE/postgres/entrypoint.sh" \
    "$REPO/deploy/local/provision_db.sh")" "$REPO/deploy" "$HERE/postgres/Containerfile"
}

redis_image() {
  build redis "$(image_key "$HERE/redis/Containerfile")" "$HERE/redis" "$HERE/redis/Containerfile"
}

kafka_image() {
  "$REPO/deploy/local/infra.sh" kafka-libs >/dev/null
  local context="$CONTEXTS/kafka"
  rm -rf "$context" && mkdir -p "$context/libs"
  cp -l "$REPO"/var/kafka/libs/*.jar "$context/libs/" 2>/dev/null || cp "$REPO"/var/kafka/libs/*.jar "$context/libs/"
  cp "$HERE/kafka/Containerfile" "$HERE/kafka/entrypoint.sh" "$REPO/deploy/local/kafka/server.properties.in" "$context/"
  build kafka "$(image_key "$context/Containerfile" "$context/entrypoint.sh" "$context/server.properties.in" \
    "$REPO/deploy/local/kafka/pom.xml")" "$context" "$context/Containerfile"
}

main() {
  ensure_podman
  mkdir -p "$LOGS"
  base_image
  uv_image
  # Independent builds run side by side (mostly downloads and unpacking); a failure fails the whole run.
  local dir pids=() name failed=0
  dir="$(mktemp -d)"
  for name in app postgres redis kafka; do
    "${name}_image" >"$dir/$name" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  cat "$dir"/app "$dir"/postgres "$dir"/redis "$dir"/kafka
  rm -rf "$dir"
  [[ "$failed" == 0 ]] || die "an image failed to build (logs in var/deploy/logs)"
}

main "$@"
