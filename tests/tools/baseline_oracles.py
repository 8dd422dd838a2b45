#!/usr/bin/env python3
"""relo-replay's PyTorch baselines against their Python oracles.

For every trace of the shared corpus, runs the oracle of each baseline
(reference/torch_policy.py, reference/torch_expandable.py) and
`relo-replay --baseline ...` and requires the same figures: peak live, peak
reserved and ratio unlimited; fit capacity and fit ratio with --fit; and at
the fit capacity and one byte below it, the same verdict (completes or out
of memory) and the same peak reserved.

The classic oracle orders free blocks of equal size by Python object
identity, which is an accident of the interpreter's memory; the C model
orders them by address (segment creation order, then offset), as PyTorch
orders blocks by pointer. So the classic oracle runs here with its
identity function replaced by that address (--address-ties); nothing else
of it changes. The expandable oracle already orders by address.

usage: baseline_oracles.py RELO_REPLAY SHARED_DIR
Prints SKIP and exits 77 when SHARED_DIR lacks the traces or the oracles.
"""
import glob
import itertools
import json
import os
import subprocess
import sys

ORACLES = {"pytorch": "torch_policy.py", "pytorch-expandable": "torch_expandable.py"}


def run_with_address_ties(oracle, args):
    """Runs the classic oracle with ties broken by (segment, offset)."""
    sys.argv = [oracle] + args
    with open(oracle) as f:
        src = f.read()
    # The oracle ends by calling main(); define everything, then call it here.
    g = {"__name__": "oracle"}
    exec(compile(src.replace("\nmain()", "\n"), oracle, "exec"), g)
    seq = itertools.count()
    base = g["Block"]

    class Block(base):
        __slots__ = ("seq",)

        def __init__(self):
            self.seq = next(seq)

    g["Block"] = Block
    g["id"] = lambda b: (b.seg.seq << 64) + b.off
    g["main"]()


def oracle_figures(script, kind, args):
    cmd = [sys.executable]
    if kind == "pytorch":
        cmd += [os.path.abspath(__file__), "--address-ties"]
    p = subprocess.run(cmd + [script] + args, capture_output=True, text=True)
    if p.returncode != 0:
        if "OOM" in p.stderr:
            return None  # out of memory
        raise RuntimeError(f"{script} {args} failed:\n{p.stderr}")
    return dict(kv.split("=") for kv in p.stdout.split())


def relo_figures(tool, trace, kind, args):
    p = subprocess.run([tool, "--json", "--quiet", "--baseline", kind] + args + [trace],
                       capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"relo-replay {args} {trace} exited {p.returncode}:\n{p.stderr}")
    doc = json.loads(p.stdout)["traces"][0]
    b = doc["baselines"][0]
    assert b["name"] == kind, b["name"]
    return doc, b


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--address-ties":
        run_with_address_ties(sys.argv[2], sys.argv[3:])
        return 0
    tool, shared = sys.argv[1], sys.argv[2]
    traces = sorted(glob.glob(os.path.join(shared, "traces", "*.trace.gz")))
    scripts = {k: os.path.join(shared, "reference", v) for k, v in ORACLES.items()}
    if not traces or not all(os.path.exists(s) for s in scripts.values()):
        print(f"SKIP: no shared traces or oracles under {shared}")
        return 77
    failures = 0

    def same(what, want, got):
        nonlocal failures
        if str(want) != str(got):
            print(f"  MISMATCH {name} {kind} {what}: oracle {want}, relo-replay {got}")
            failures += 1

    for trace in traces:
        name = os.path.basename(trace)
        for kind, script in scripts.items():
            o = oracle_figures(script, kind, [trace, "--fit"])
            doc, b = relo_figures(tool, trace, kind, ["--fit"])
            print(f"{name} {kind}: oracle {o}")
            same("peak_live", o["peak_live"], doc["trace_peak_live_bytes"])
            same("peak_reserved", o["peak_reserved"], b["peak_reserved_bytes"])
            same("ratio", o["ratio"], f'{b["peak_reserved_bytes"] / doc["trace_peak_live_bytes"]:.4f}')
            fit = b["fit"] or {}
            same("fit_capacity", o["fit_capacity"], fit.get("capacity"))
            if fit.get("capacity"):
                same("fit_ratio", o["fit_ratio"], f'{fit["capacity"] / doc["trace_peak_live_bytes"]:.4f}')
            for cap in (int(o["fit_capacity"]), int(o["fit_capacity"]) - 1):
                oc = oracle_figures(script, kind, [trace, "--capacity", str(cap)])
                _, bc = relo_figures(tool, trace, kind, ["--capacity", f"{cap}B"])
                same(f"completes at {cap}", oc is not None, bc["ok"])
                if oc is not None and bc["ok"]:
                    same(f"peak_reserved at {cap}", oc["peak_reserved"], bc["peak_reserved_bytes"])
    print(f"{len(traces)} traces, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
