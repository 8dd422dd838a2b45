#!/bin/sh
# bench/fragmentation.sh given a folder without traces (empty, or missing)
# must say so and exit 2, never print an empty table and succeed.
#
# usage: fragmentation_no_traces.sh FRAGMENTATION_SH RELO_REPLAY SCRATCH_DIR
set -u
script=$1
replay=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch/empty"
for dir in "$scratch/empty" "$scratch/missing"; do
    sh "$script" "$replay" "$dir" >"$scratch/out" 2>"$scratch/err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q "no traces" "$scratch/err"; then
        echo "FAIL: fragmentation.sh on $dir exited $rc (expected 2 and \"no traces\")"
        cat "$scratch/out" "$scratch/err"
        exit 1
    fi
done
echo "ok   fragmentation.sh refuses a folder without traces: $(cat "$scratch/err")"
