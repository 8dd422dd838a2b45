#!/bin/sh
# vulkan_or_skip.sh RELO_REPLAY TRACE
#
# Replays TRACE on the Vulkan backend (bytes checked after every move and
# at every free); reports SKIP (77) where this machine has no Vulkan driver
# or device, never a pass.
out=$("$1" --backend vulkan --json "$2" 2>&1)
rc=$?
case "$out" in
*"no Vulkan 1.2 driver"* | *"no Vulkan 1.2 device"*)
    echo "SKIP: no Vulkan driver or device"
    exit 77
    ;;
esac
printf '%s\n' "$out" | head -c 2000
echo
[ $rc -eq 0 ] && printf '%s' "$out" | grep -q '"ok":true'
