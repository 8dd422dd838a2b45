#!/usr/bin/env python3
"""The documented path from a PyTorch memory snapshot to relo-replay's
report, run without PyTorch: builds a snapshot pickle in the shape
torch.cuda.memory._dump_snapshot() writes (plain dicts and lists: a
"segments" list and "device_traces", one list of trace entries per
device, each {"action", "addr", "size", "stream", "time_us", "frames"}),
converts it with tools/torch_snapshot_to_trace.py, and replays the trace
with relo-replay --fit --capacity auto --baseline pytorch --html, as
docs/relo-replay.md shows. Checks that the trace holds the snapshot's
allocations, that the replay reads them all and finds a fit, and that
the report is written.

Usage: snapshot_to_report.py CONVERTER RELO_REPLAY WORKDIR
Exits 0 on success, 1 on failure.
"""
import gzip
import json
import os
import pickle
import random
import shutil
import subprocess
import sys

MIB = 1 << 20


def training_snapshot(steps=12, seed=7):
    """A snapshot of a small training loop: weights allocated once, then per
    step activations that grow with the step, gradients, and their frees;
    one entry of each kind PyTorch also records (segment_alloc,
    free_requested) that the converter skips; a free of a block allocated
    before recording began; two streams."""
    rng = random.Random(seed)
    entries, live = [], {}
    next_addr = [0x7f0000000000]
    time_us = [0]

    def entry(action, addr, size, stream=0):
        time_us[0] += rng.randint(1, 50)
        entries.append({"action": action, "addr": addr, "size": size, "stream": stream,
                        "time_us": time_us[0],
                        "frames": [{"filename": "train.py", "line": rng.randint(1, 200), "name": "step"}]})

    def alloc(size, stream=0):
        addr = next_addr[0]
        next_addr[0] += (size + 511) // 512 * 512
        entry("alloc", addr, size, stream)
        live[addr] = (size, stream)
        return addr

    def free(addr):
        size, stream = live.pop(addr)
        entry("free_requested", addr, size, stream)
        entry("free_completed", addr, size, stream)

    entry("free_completed", 0x1000, 4096)             # allocated before recording began
    entry("segment_alloc", 0x7e0000000000, 20 * MIB)  # a segment: not an allocation
    weights = [alloc(rng.choice((1, 2, 4)) * MIB) for _ in range(8)]
    for step in range(steps):
        acts = [alloc((step + 1) * 256 * 1024 + rng.randint(0, 64) * 512) for _ in range(6)]
        grads = [alloc(rng.choice((1, 2)) * MIB, stream=1) for _ in range(4)]
        for a in reversed(acts):
            free(a)
        for g in grads:
            free(g)
    for w in weights:
        free(w)
    return {"segments": [], "device_traces": [entries]}


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def main():
    converter, replayer, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []
    snapshot = training_snapshot()
    snap = os.path.join(work, "snap.pickle")
    with open(snap, "wb") as f:
        pickle.dump(snapshot, f)
    allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc"]

    trace = os.path.join(work, "snap.trace.gz")
    r = run([sys.executable, converter, snap, "-o", trace])
    if r.returncode != 0:
        failures.append("the converter failed: %r" % r.stderr)
    else:
        lines = gzip.open(trace, "rt").read().splitlines()
        events = [l for l in lines if not l.startswith("#")]
        if sum(1 for l in events if l.startswith("a ")) != len(allocs) or len(events) != 2 * len(allocs):
            failures.append("the trace holds %d events, expected %d allocations and their frees"
                            % (len(events), len(allocs)))

        html = os.path.join(work, "snap.html")
        r = run([replayer, "--json", "--fit", "--capacity", "auto", "--baseline", "pytorch", "--html", html, trace])
        try:
            report = json.loads(r.stdout)["traces"][0]
        except (ValueError, KeyError, IndexError):
            report = None
        if r.returncode != 0 or report is None:
            failures.append("relo-replay failed: %d %r" % (r.returncode, r.stderr[-400:]))
        else:
            if report["events"] != len(events) or not report["ok"]:
                failures.append("relo-replay replayed %r of %d events" % (report["events"], len(events)))
            fit = report.get("fit") or {}
            if not fit.get("capacity") or fit["capacity"] < report["peak_live_bytes"]:
                failures.append("no fit capacity at or above peak live: %r" % fit)
            if not os.path.exists(html) or os.path.getsize(html) < 10000:
                failures.append("the HTML report was not written")
    for f in failures:
        print("FAIL", f)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
