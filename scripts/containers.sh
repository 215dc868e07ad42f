#!/usr/bin/env bash
# Container tooling for the docker sandbox backend and Harbor trials (`make containers`).
#
# 1. The engine: Debian's docker.io, installed when absent; dockerd started in the background
#    when nothing answers (log: var/dockerd.log).
# 2. Local base images, for machines that reach no image registry (only Debian's and PyPI's
#    package mirrors): `debootstrap --variant=minbase bookworm` imported as hilbench/bookworm,
#    carrying this machine's CA bundle (pip and apt inside containers verify against it), and
#    on it the stand-ins the generated Dockerfiles name — python:3.11-slim (Debian's Python
#    3.11, pip, a `python` link) and, for the other versions SWE-bench pins
#    (HILBENCH_PYTHON_IMAGES, default 3.9), python:X.Y-slim carrying this machine's pyenv
#    build of that version (without its site-packages; pip from its own ensurepip). Each is rebuilt only when what it is made from changed (a
#    content key kept as an image label); a tag that names a real pulled image is left alone.
#    A team whose machines reach a registry skips this: HILBENCH_PULL_BASES=1 pulls them.
# Needs root (apt, dockerd, debootstrap), as CI and these machines have.
set -euo pipefail
cd "$(dirname "$0")/.."
VAR="${HILBENCH_VAR_DIR:-var}"
mkdir -p "$VAR"
MIRROR="${DEBIAN_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
FORMAT=2  # bump when the images' recipe changes
# The bundle's own path: Debian's ca-certificates rewrites /etc/ssl/certs/ca-certificates.crt.
IMAGE_CA=/etc/ssl/hilbench-ca.crt

say() { echo "containers: $*"; }

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: $VAR/dockerd.log)"
  nohup dockerd >"$VAR/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { say "dockerd did not start; see $VAR/dockerd.log"; exit 1; }
fi
say "engine $(docker version --format '{{.Server.Version}}')"

if [ "${HILBENCH_PULL_BASES:-0}" = 1 ]; then
  docker pull python:3.11-slim
  exit 0
fi

label_of() { docker image inspect --format '{{ index .Config.Labels "hilbench.key" }}' "$1" 2>/dev/null || true; }

# The Debian base: minbase bookworm and this machine's CA bundle.
BASE=hilbench/bookworm
base_key="$FORMAT-$(printf '%s' "$MIRROR" | sha256sum | cut -c1-12)-$(sha256sum "$CA_BUNDLE" | cut -c1-12)"
if [ "$(label_of $BASE)" != "$base_key" ]; then
  root="$(mktemp -d "${TMPDIR:-/tmp}/hilbench-bookworm.XXXXXX")"
  say "debootstrap bookworm from $MIRROR (a few minutes)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$VAR/debootstrap.log" 2>&1 \
    || { say "debootstrap failed; see $VAR/debootstrap.log"; rm -rf "$root"; exit 1; }
  install -D -m 0644 "$CA_BUNDLE" "$root/etc/ssl/certs/ca-certificates.crt"
  install -D -m 0644 "$CA_BUNDLE" "$root$IMAGE_CA"
  printf 'deb %s bookworm main\n' "$MIRROR" >"$root/etc/apt/sources.list"
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
  tar -C "$root" -c . | docker import \
    --change "LABEL hilbench.key=$base_key" \
    --change "ENV SSL_CERT_FILE=$IMAGE_CA PIP_CERT=$IMAGE_CA REQUESTS_CA_BUNDLE=$IMAGE_CA NODE_EXTRA_CA_CERTS=$IMAGE_CA" \
    --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
  rm -rf "$root"
  say "built $BASE"
else
  say "$BASE is current"
fi

# Stand-ins for the registry images the generated Dockerfiles name.
build_standin() {  # tag, Dockerfile body[, build context folder]
  local tag="$1" body="$2" context="${3:-}" key
  key="$FORMAT-$base_key-$(printf '%s' "$body" | sha256sum | cut -c1-12)"
  if docker image inspect "$tag" >/dev/null 2>&1 && [ -z "$(label_of "$tag")" ]; then
    say "$tag is a pulled image; left alone"
    return
  fi
  if [ "$(label_of "$tag")" = "$key" ]; then
    say "$tag is current"
    return
  fi
  if [ -n "$context" ]; then
    printf 'FROM %s\n%s\nLABEL hilbench.key=%s\n' "$BASE" "$body" "$key" >"$context/Dockerfile"
    DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$context" >/dev/null
  else
    printf 'FROM %s\n%s\nLABEL hilbench.key=%s\n' "$BASE" "$body" "$key" \
      | DOCKER_BUILDKIT=0 docker build -q -t "$tag" - >/dev/null
  fi
  say "built $tag"
}

build_standin python:3.11-slim 'RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip python3-venv ca-certificates && ln -sf /usr/bin/python3 /usr/local/bin/python && rm -rf /var/lib/apt/lists/*
ENV PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1'

# python:X.Y-slim from the machine's pyenv build, at the same path (its libpython is found
# through an absolute rpath), readable by the containers' non-root users.
for version in ${HILBENCH_PYTHON_IMAGES:-3.9}; do
  dir="$(ls -d "$HOME/.pyenv/versions/$version".* 2>/dev/null | sort -V | tail -n1 || true)"
  if [ -z "$dir" ]; then
    say "no pyenv Python $version on this machine: python:$version-slim not built"
    continue
  fi
  body="RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 libffi8 libsqlite3-0 zlib1g libbz2-1.0 liblzma5 libreadline8 libncursesw6 libgdbm6 libuuid1 && rm -rf /var/lib/apt/lists/*
COPY python $dir
RUN chmod 755 /root /root/.pyenv /root/.pyenv/versions && $dir/bin/python$version -m ensurepip && ln -sf $dir/bin/python$version /usr/local/bin/python && ln -sf $dir/bin/python$version /usr/local/bin/python$version && ln -sf $dir/bin/pip$version /usr/local/bin/pip
ENV PATH=$dir/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PIP_DISABLE_PIP_VERSION_CHECK=1
# $(basename "$dir")"
  if [ "$(label_of "python:$version-slim")" = "$FORMAT-$base_key-$(printf '%s' "$body" | sha256sum | cut -c1-12)" ]; then
    say "python:$version-slim is current"
    continue
  fi
  context="$(mktemp -d "${TMPDIR:-/tmp}/hilbench-python.XXXXXX")"
  mkdir "$context/python"
  tar -C "$dir" --exclude='./lib/python*/site-packages/*' -cf - . | tar -C "$context/python" -xf -
  build_standin "python:$version-slim" "$body" "$context"
  rm -rf "$context"
done
