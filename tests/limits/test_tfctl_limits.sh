#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `tfctl limits` as a user runs it without the hypervisor: serve creates a region and keeps
# its heartbeat, show prints it, set changes limits live, and bad input is refused with a
# message naming the option and the value (exit 2). Usage: test_tfctl_limits.sh TFCTL
set -u
tfctl=$1
dir=$(mktemp -d /tmp/tf-test-tfctl-limits-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
uuid=GPU-00112233-4455-6677-8899-aabbccddeeff

out=$("$tfctl" limits serve --duration 0.5 --nvml /nonexistent/libnvidia-ml.so.1 \
    --region "$dir/a" --name ns/pod --device $uuid --vram-limit 2Gi --compute-percent 30 2>&1) ||
    fail "serve: $out"
echo "$out" | grep -q "NVML unavailable" || fail "serve did not say NVML is unavailable: $out"
show=$("$tfctl" limits show --region "$dir/a") || fail "show: $show"
echo "$show" | grep -q "name ns/pod" || fail "show name: $show"
echo "$show" | grep -q "heartbeat fresh" || fail "show heartbeat: $show"
echo "$show" | grep -q "$uuid  *30.00% *2Gi" || fail "show limits: $show"

"$tfctl" limits set --region "$dir/a" --compute-percent 60 --vram-limit 512Mi || fail "set"
"$tfctl" limits show --region "$dir/a" | grep -q "60.00% *512Mi" || fail "set not applied"
"$tfctl" limits set --region "$dir/a" --compute-percent none || fail "set none"
"$tfctl" limits show --region "$dir/a" | grep -q "$uuid  *- *512Mi" || fail "none not applied"

err=$("$tfctl" limits set --region "$dir/a" --vram-limit 4Gb 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad quantity exit $rc"
echo "$err" | grep -q -- '--vram-limit: "4Gb" is not a valid quantity' || fail "message: $err"
err=$("$tfctl" limits set --region "$dir/a" --compute-percent 101 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad percent exit $rc: $err"
echo "$err" | grep -q -- '--compute-percent' || fail "message: $err"
err=$("$tfctl" limits show --region "$dir/missing" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "missing region exit $rc"
echo "$err" | grep -q "(the limit region.s limits part)" || fail "message: $err"
err=$("$tfctl" limits serve --nvml /nonexistent --region "$dir/b" --device 0 2>&1); rc=$?
[ $rc -eq 2 ] || fail "index without NVML exit $rc"
echo "$err" | grep -q "an index needs NVML" || fail "message: $err"
err=$("$tfctl" limits serve --vram-limit 1Gi 2>&1); rc=$?
[ $rc -eq 2 ] || fail "option before --region exit $rc"
printf 'garbage' > "$dir/c"
err=$("$tfctl" limits show --region "$dir/c" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$err" | grep -q "rejected the limit region.s limits part" || fail "corrupt: $rc $err"
# Serving an existing region attaches to it (keeps it, applies the limits given).
"$tfctl" limits serve --duration 0.2 --nvml /nonexistent --region "$dir/a" --device $uuid \
    --compute-percent 45 >/dev/null 2>&1 || fail "re-attach"
"$tfctl" limits show --region "$dir/a" | grep -q "45.00%" || fail "re-attach limits"
# The usage part is the workload's user's alone: serve's user by default, --user's when
# given (0660 with a group); another user can neither write it nor raise the limits.
upart() { echo "$(dirname "$1")/rw/$(basename "$1")"; }
[ "$(stat -c '%a %U' "$(upart "$dir/a")")" = "600 $(id -un)" ] ||
    fail "default usage part: $(stat -c '%a %U' "$(upart "$dir/a")")"
chmod 755 "$dir"
"$tfctl" limits serve --duration 0.2 --nvml /nonexistent --region "$dir/u" --device $uuid \
    --compute-percent 20 --user nobody >/dev/null 2>&1 || fail "serve --user"
[ "$(stat -c '%a %U' "$(upart "$dir/u")")" = "600 nobody" ] ||
    fail "--user usage part: $(stat -c '%a %U' "$(upart "$dir/u")")"
[ "$(stat -c '%a %U' "$dir/u")" = "644 $(id -un)" ] || fail "limits part: $(stat -c '%a %U' "$dir/u")"
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "exec 3>>'$(upart "$dir/u")'" ||
        fail "the --user cannot open its usage part for writing"
    setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "exec 3>>'$dir/u'" 2>/dev/null &&
        fail "the --user can write the limits part"
    setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "exec 3>>'$(upart "$dir/a")'" \
        2>/dev/null && fail "another user can write a usage part"
fi
"$tfctl" limits serve --duration 0.2 --nvml /nonexistent --region "$dir/a" --device $uuid \
    --user nobody:nogroup >/dev/null 2>&1 || fail "re-attach --user"
[ "$(stat -c '%a %U %G' "$(upart "$dir/a")")" = "660 nobody nogroup" ] ||
    fail "re-attach --user usage part: $(stat -c '%a %U %G' "$(upart "$dir/a")")"
err=$("$tfctl" limits serve --region "$dir/v" --user no-such-user-xyz 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q -- '--user "no-such-user-xyz"' || fail "bad user: $rc $err"
echo "tfctl limits: ok"
