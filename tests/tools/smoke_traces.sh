#!/bin/sh
# smoke_traces.sh RELO_REPLAY TRACES_DIR FALLBACK_DIR CHECKER
#
# Replays every trace of TRACES_DIR (the shared corpus; FALLBACK_DIR, the
# examples, when it does not exist) once on the sim backend with --json,
# and checks each report with CHECKER (check_replay_json.py): peak live
# matches the header, reserved >= live at every sample. No --fit, so the
# whole run takes seconds. Exits 77 (skip) without python3.
set -u
replay=$1
dir=$2
fallback=$3
checker=$4
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
[ -d "$dir" ] || dir=$fallback
found=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for trace in "$dir"/*.trace.gz "$dir"/*.trace; do
    [ -e "$trace" ] || continue
    found=$((found + 1))
    name=$(basename "$trace")
    "$replay" --json --quiet "$trace" > "$tmp/$name.json" 2> "$tmp/$name.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL $name: relo-replay exited with $rc"
        cat "$tmp/$name.err"
        failed=$((failed + 1))
        continue
    fi
    python3 "$checker" "$tmp/$name.json" || failed=$((failed + 1))
done
echo "smoke: $found traces from $dir, $failed failed"
[ "$found" -gt 0 ] || { echo "FAIL: no trace found in $dir"; exit 1; }
[ "$failed" -eq 0 ]
