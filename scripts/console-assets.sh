#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The web console's npm part (docs/console.md, "Assets"). The pages (web/console/*.html,
# *.js, *.css) are our own files, served as written. The one library they use, uPlot, comes
# from the npm registry pinned by web/console/package-lock.json; its built files are
# committed under web/console/vendor/ so that the C build (which embeds web/console into the
# binaries) needs no network. This script keeps the two in step:
#   install  npm ci in web/console (uPlot and playwright-core for the browser tests), when
#            node_modules is missing or older than the lockfile
#   vendor   copies uPlot's built files from node_modules into vendor/ (after a version bump)
#   check    fails when vendor/ differs from what the lockfile's package ships (make test);
#            says so and succeeds when node_modules is not installed (offline)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
web="$root/web/console"
files=(dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE)
mode="${1:-check}"
case "$mode" in
install)
    if [ ! -f "$web/node_modules/.package-lock.json" ] ||
        [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
        (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    ;;
vendor)
    mkdir -p "$web/vendor"
    for f in "${files[@]}"; do cp "$web/node_modules/uplot/$f" "$web/vendor/$(basename "$f")"; done
    echo "console-assets: vendor/ now holds uplot $(node -p "require('$web/node_modules/uplot/package.json').version")"
    ;;
check)
    if [ ! -d "$web/node_modules/uplot" ]; then
        echo "console-assets: web/console/node_modules not installed (scripts/deps.sh test); vendor/ not checked"
        exit 0
    fi
    want=$(node -p "require('$web/package-lock.json').packages['node_modules/uplot'].version")
    have=$(node -p "require('$web/node_modules/uplot/package.json').version")
    [ "$want" = "$have" ] || { echo "console-assets: node_modules has uplot $have, the lockfile $want: run $0 install" >&2; exit 1; }
    for f in "${files[@]}"; do
        cmp -s "$web/node_modules/uplot/$f" "$web/vendor/$(basename "$f")" ||
            { echo "console-assets: vendor/$(basename "$f") differs from uplot $want's $f: run $0 vendor" >&2; exit 1; }
    done
    echo "console-assets: vendor/ matches uplot $want"
    ;;
*)
    echo "usage: $0 install|vendor|check" >&2
    exit 2
    ;;
esac
