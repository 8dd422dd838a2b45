#!/bin/sh
# fragmentation.sh RELO_REPLAY [TRACES_DIR]
#
# The fragmentation table of every trace (*.trace.gz) in TRACES_DIR (default
# examples/traces; any folder of traces recorded by
# tools/torch_snapshot_to_trace.py will do): peak reserved / peak live with no
# capacity limit ("unlim.") and the fit ratio (smallest capacity the trace
# completes on / peak live, by relo-replay --fit, within 0.1 %), for the
# seed policy (adaptive layout, relocation on), the seed policy with
# relocation off, the EXCLUSIVE layout, and relo's default, the dense
# policy. Sim backend charging a 2 MiB granule per buffer (relo-replay's
# default); needs python3 to read the JSON.
# Exits 2, saying why, when TRACES_DIR holds no trace or RELO_REPLAY is not
# a program, and 77 without python3.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: fragmentation.sh RELO_REPLAY [TRACES_DIR]" >&2
    exit 2
fi
replay=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here/../examples/traces}
if [ ! -x "$replay" ]; then
    echo "fragmentation.sh: $replay is not a program (build it: cmake --build build --target relo-replay)" >&2
    exit 2
fi
set -- "$dir"/*.trace.gz
if [ ! -e "$1" ]; then
    echo "fragmentation.sh: no traces (*.trace.gz) in $dir" >&2
    exit 2
fi
command -v python3 >/dev/null 2>&1 || { echo "fragmentation.sh needs python3" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$replay" --quiet --json --fit --policy seed "$@" > "$tmp/seed.json" || true
"$replay" --quiet --json --fit --policy seed --no-relocation "$@" > "$tmp/norelo.json" || true
"$replay" --quiet --json --fit --layout exclusive "$@" > "$tmp/exclusive.json" || true
"$replay" --quiet --json --fit "$@" > "$tmp/dense.json" || true
python3 - "$tmp" <<'PY'
import json, sys, os
tmp = sys.argv[1]
runs = [json.load(open(os.path.join(tmp, n + ".json")))["traces"] for n in ("seed", "norelo", "exclusive", "dense")]
def cell(t):
    if not t["ok"]:
        return "fail", "fail"
    fit = t["fit"]
    f = "%.3f" % fit["ratio"] if fit and fit.get("ratio") is not None else "none"
    return "%.3f" % t["reserved_ratio"], f
print("| trace | peak live | unlim. seed | fit seed | unlim. seed no-reloc | fit seed no-reloc | unlim. exclusive "
      "| fit exclusive | unlim. dense (default) | fit dense (default) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for i, t in enumerate(runs[0]):
    cells = []
    for r in runs:
        cells.extend(cell(r[i]))
    live = t["trace_peak_live_bytes"]
    human = "%.2f GiB" % (live / 2**30) if live >= 2**30 else "%.1f MiB" % (live / 2**20)
    print("| %s | %s | %s |" % (t["trace"], human, " | ".join(cells)))
PY
