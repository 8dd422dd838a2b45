#!/bin/sh
# opencl_or_skip.sh RELO_REPLAY TRACE
#
# Replays TRACE on the OpenCL backend; reports SKIP (77) where this machine
# has no OpenCL platform or device, never a pass.
out=$("$1" --backend opencl --json "$2" 2>&1)
rc=$?
case "$out" in
*"no OpenCL platform"* | *"no OpenCL device"*)
    echo "SKIP: no OpenCL platform or device"
    exit 77
    ;;
esac
printf '%s\n' "$out" | head -c 2000
echo
[ $rc -eq 0 ] && printf '%s' "$out" | grep -q '"ok":true'
