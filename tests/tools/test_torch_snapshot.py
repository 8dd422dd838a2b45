#!/usr/bin/env python3
"""Tests tools/torch_snapshot_to_trace.py on snapshots built from plain
dicts and lists: the events it keeps, the ring-buffer frees it skips, the
header it writes, and its refusal of pickles that name a class.

Usage: test_torch_snapshot.py [CONVERTER]   (default: ../../tools/...)
Exits 0 on success, 1 on failure; ctest skips it (77) without python3.
"""
import os
import pickle
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "tools", "torch_snapshot_to_trace.py")

SNAPSHOT = {
    "segments": [],
    "device_traces": [[
        {"action": "alloc", "addr": 0x1000, "size": 512, "stream": 0, "frames": []},
        {"action": "free_requested", "addr": 0x1000, "size": 512, "stream": 0},
        {"action": "free_completed", "addr": 0x9000, "size": 64, "stream": 0},   # before the ring
        {"action": "alloc", "addr": 0x2000, "size": 2048, "stream": 77},
        {"action": "free_completed", "addr": 0x1000, "size": 512, "stream": 0},
        {"action": "alloc", "addr": 0x1000, "size": 1024, "stream": 0},           # reused address
        {"action": "segment_alloc", "addr": 0x0, "size": 2 << 20, "stream": 0},
        {"action": "free_completed", "addr": 0x2000, "size": 2048, "stream": 77},
    ]],
}

EXPECTED_EVENTS = ["a 1 512", "a 2 2048 1", "f 1", "a 3 1024", "f 2"]


def run(args):
    return subprocess.run([sys.executable, CONVERTER] + args, capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, "toy.pickle")
        with open(snap, "wb") as f:
            pickle.dump(SNAPSHOT, f)
        out = os.path.join(tmp, "toy.trace")
        r = run([snap, "-o", out])
        if r.returncode != 0:
            failures.append("conversion failed: " + r.stderr)
        else:
            lines = open(out).read().splitlines()
            if lines[0] != "# relo-trace 1":
                failures.append("first line is %r" % lines[0])
            events = [l for l in lines if not l.startswith("#")]
            if events != EXPECTED_EVENTS:
                failures.append("events %r, expected %r" % (events, EXPECTED_EVENTS))
            header = dict(l[2:].split(": ", 1) for l in lines if l.startswith("# ") and ": " in l)
            for key, want in (("events", "5"), ("peak_live_bytes", "3072"),
                              ("max_alloc_bytes", "2048"), ("workload", "toy")):
                if header.get(key) != want:
                    failures.append("header %s = %r, expected %r" % (key, header.get(key), want))
            if not header.get("skipped_frees", "").startswith("1 "):
                failures.append("skipped_frees = %r" % header.get("skipped_frees"))

        gz = os.path.join(tmp, "toy.trace.gz")
        r = run([snap, "-o", gz])
        import gzip
        if r.returncode != 0 or not gzip.open(gz, "rt").read().startswith("# relo-trace 1"):
            failures.append("gzip output failed: " + r.stderr)

        class Evil:
            def __reduce__(self):
                return (os.system, ("echo pwned",))
        evil = os.path.join(tmp, "evil.pickle")
        with open(evil, "wb") as f:
            pickle.dump({"device_traces": [[Evil()]]}, f)
        r = run([evil])
        if r.returncode == 0 or "refusing" not in r.stderr or "pwned" in r.stdout:
            failures.append("a pickle naming a class was not refused: %r %r" % (r.stdout, r.stderr))

        empty = os.path.join(tmp, "empty.pickle")
        with open(empty, "wb") as f:
            pickle.dump({"device_traces": [[]]}, f)
        if run([empty]).returncode == 0:
            failures.append("a snapshot without events was accepted")

    for f in failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
