#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages the build, the demo and the tests need, if any is missing.
# Usage: scripts/deps.sh [build|test]   (test adds the tools only the test suite uses)
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config libjson-c-dev libyaml-dev libcmocka-dev
      libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev libsqlite3-dev tzdata
      libgrpc-dev protobuf-c-compiler libprotobuf-c-dev liblz4-dev libzstd-dev)
if [ "${1:-build}" = test ]; then
    pkgs+=(clang libclang-rt-14-dev clang-format python3 python3-yaml python3-jsonpatch
          influxdb python3-grpcio python3-grpc-tools)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
