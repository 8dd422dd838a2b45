#!/bin/sh
# fragmentation.sh RELO_REPLAY [TRACES_DIR]
#
# The fragmentation table of every trace in TRACES_DIR (default
# ../shared/traces beside the project): peak reserved / peak live with no
# capacity limit ("unlim.") and the fit ratio (smallest capacity the trace
# completes on / peak live, by relo-replay --fit, within 0.5 %), for relo's
# default (adaptive layout, relocation on), with relocation off, and for
# the EXCLUSIVE layout, and for the dense policy (--policy dense). Sim
# backend; needs python3 to read the JSON.
set -eu
replay=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-$here/../../shared/traces}
command -v python3 >/dev/null 2>&1 || { echo "fragmentation.sh needs python3" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$replay" --quiet --json --fit "$dir"/*.trace.gz > "$tmp/default.json" || true
"$replay" --quiet --json --fit --no-relocation "$dir"/*.trace.gz > "$tmp/norelo.json" || true
"$replay" --quiet --json --fit --layout exclusive "$dir"/*.trace.gz > "$tmp/exclusive.json" || true
"$replay" --quiet --json --fit --policy dense "$dir"/*.trace.gz > "$tmp/dense.json" || true
python3 - "$tmp" <<'PY'
import json, sys, os
tmp = sys.argv[1]
runs = [json.load(open(os.path.join(tmp, n + ".json")))["traces"] for n in ("default", "norelo", "exclusive", "dense")]
def cell(t):
    if not t["ok"]:
        return "fail", "fail"
    fit = t["fit"]
    f = "%.3f" % fit["ratio"] if fit and fit.get("ratio") is not None else "none"
    return "%.3f" % t["reserved_ratio"], f
print("| trace | peak live | unlim. | fit | unlim. no-reloc | fit no-reloc | unlim. exclusive | fit exclusive "
      "| unlim. dense | fit dense |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for i, t in enumerate(runs[0]):
    cells = []
    for r in runs:
        cells.extend(cell(r[i]))
    live = t["trace_peak_live_bytes"]
    human = "%.2f GiB" % (live / 2**30) if live >= 2**30 else "%.1f MiB" % (live / 2**20)
    print("| %s | %s | %s |" % (t["trace"], human, " | ".join(cells)))
PY
