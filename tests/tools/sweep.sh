#!/bin/sh
# sweep.sh RELO_REPLAY TRACE
#
# Monotonic at every capacity, under the default placement: finds TRACE's fit
# capacity (relo-replay --fit), then replays it at every 0.25 % step of
# peak live from there up to 1.5x peak live (--sweep fit:1.5:0.25%); every
# replay must complete. Exits 77 (skip) when TRACE does not exist (the
# shared corpus is absent).
set -u
replay=$1
trace=$2
if [ ! -e "$trace" ]; then
    echo "SKIP: $trace not found"
    exit 77
fi
out=$("$replay" --quiet --sweep fit:1.5:0.25% "$trace" 2>&1)
status=$?
[ -n "$out" ] && echo "$out"
if [ "$status" -ne 0 ]; then
    echo "FAIL $(basename "$trace"): a replay above the fit capacity ran out of memory (see above)"
    exit 1
fi
echo "ok   $(basename "$trace"): every 0.25 % step from the fit capacity to 1.5x peak live completes"
