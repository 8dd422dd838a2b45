#!/bin/sh
# Monotonic in capacity: every shared trace that completes on its fit
# capacity C must also complete on larger capacities. For each trace and
# each placement, finds C with relo-replay --fit, then replays at several
# multiples of C and fails on the first that runs out of memory.
#
# usage: monotonic.sh RELO_REPLAY TRACE_DIR [FALLBACK_DIR]
# Exits 77 (skip) when no trace directory exists.
set -u
replay=$1
dir=$2
[ -d "$dir" ] || dir=${3:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "SKIP: no trace directory"
    exit 77
fi
multiples="1.01 1.02 1.05 1.1 1.25 1.5 2"
failed=0
checked=0
for placement in adaptive packed; do
    for trace in "$dir"/*.trace.gz; do
        [ -e "$trace" ] || continue
        name=$(basename "$trace" .trace.gz)
        fit=$("$replay" --quiet --json --fit --placement "$placement" "$trace" |
              sed -n 's/.*"fit":{"capacity":\([0-9]*\).*/\1/p')
        if [ -z "$fit" ]; then
            echo "FAIL $placement $name: no fit capacity"
            failed=$((failed + 1))
            continue
        fi
        for m in $multiples; do
            cap=$(awk -v c="$fit" -v m="$m" 'BEGIN { printf "%.0f", c * m }')
            checked=$((checked + 1))
            if ! "$replay" --quiet --placement "$placement" --capacity "$cap" "$trace" >/dev/null 2>&1; then
                echo "FAIL $placement $name: completes on $fit bytes but not on $cap (x$m)"
                failed=$((failed + 1))
            fi
        done
        echo "ok   $placement $name: fit $fit, x{$multiples} complete"
    done
done
echo "$((checked - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
