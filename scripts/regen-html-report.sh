#!/bin/sh
# regen-html-report.sh — docs/html-report.png, the picture of relo-replay's
# interactive report that docs/relo-replay.md shows: the report of a shipped
# trace at relo's fit capacity with both PyTorch baselines, as headless
# Chromium draws its first screen (the summary and the timeline).
#
# usage: regen-html-report.sh RELO_REPLAY [OUT.png]
#            writes OUT.png (default: docs/html-report.png) from the command
#            relo-replay --fit --capacity auto --baseline pytorch
#            --baseline pytorch-expandable --html PAGE TRACE, run from the
#            repository's root on examples/traces/transformer_train_growing
#
# Needs chromium (or chromium-browser, google-chrome). Exit status: 0 done,
# 2 bad usage, no browser, or a command that failed.
set -u
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: regen-html-report.sh RELO_REPLAY [OUT.png]" >&2
    exit 2
fi
case "$1" in /*) replay=$1 ;; *) replay=$(pwd)/$1 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/docs/html-report.png}
case "$out" in /*) ;; *) out=$(pwd)/$out ;; esac
if [ ! -x "$replay" ]; then
    echo "regen-html-report.sh: $replay is not a program (build it: cmake --build build --target relo-replay)" >&2
    exit 2
fi
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" > /dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
    echo "regen-html-report.sh: no chromium found (apt-get install chromium)" >&2
    exit 2
fi
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT
trace=examples/traces/transformer_train_growing.trace.gz
args="--fit --capacity auto --baseline pytorch --baseline pytorch-expandable"
# shellcheck disable=SC2086
(cd "$root" && "$replay" --quiet $args --html "$scratch/report.html" "$trace") || {
    echo "regen-html-report.sh: '$replay $args --html PAGE $trace' failed" >&2
    exit 2
}
# --no-sandbox: Chromium refuses to run as root without it (CI containers).
"$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1240 \
    --screenshot="$scratch/report.png" "file://$scratch/report.html" > "$scratch/browser.log" 2>&1
if [ ! -s "$scratch/report.png" ]; then
    cat "$scratch/browser.log" >&2
    echo "regen-html-report.sh: $browser wrote no screenshot" >&2
    exit 2
fi
cp "$scratch/report.png" "$out" || exit 2
echo "$out: relo-replay $args --html PAGE $trace, drawn by $browser ($("$replay" --version))"
