#!/usr/bin/env python3
"""Tests tools/torch_snapshot_to_trace.py on snapshots built from plain
dicts and lists: the events it keeps, the ring-buffer frees it skips, the
header it writes, and its refusal of pickles that name a class.

Usage: test_torch_snapshot.py [CONVERTER [RELO_REPLAY]]
(CONVERTER defaults to ../../tools/...; with RELO_REPLAY, the traces
written at the format's limits are read back by it)
Exits 0 on success, 1 on failure; ctest skips it (77) without python3.
"""
import gzip
import json
import os
import pickle
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTER = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "tools", "torch_snapshot_to_trace.py")
REPLAYER = sys.argv[2] if len(sys.argv) > 2 else None

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
        if r.returncode != 0 or not gzip.open(gz, "rt").read().startswith("# relo-trace 1"):
            failures.append("gzip output failed: " + r.stderr)

        # The same snapshot saved as JSON, plain or gzipped, converts alike;
        # text that is not JSON says so.
        for name, data in (("toy.json", json.dumps(SNAPSHOT).encode()),
                           ("toy.json.gz", gzip.compress(json.dumps(SNAPSHOT).encode()))):
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            r = run([path])
            events = [l for l in r.stdout.splitlines() if not l.startswith("#")]
            if r.returncode != 0 or events != EXPECTED_EVENTS:
                failures.append("%s: %d %r %r" % (name, r.returncode, events, r.stderr))
        path = os.path.join(tmp, "broken.json")
        with open(path, "w") as f:
            f.write('{"device_traces": [[{"action": "alloc",')
        r = run([path])
        if r.returncode != 1 or "not valid JSON" not in r.stderr or "Traceback" in r.stderr:
            failures.append("broken JSON: %d %r" % (r.returncode, r.stderr))

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
        r = run([empty])
        if r.returncode != 1 or "torch.cuda.memory._record_memory_history() before the workload" not in r.stderr:
            failures.append("a snapshot without events: %d %r" % (r.returncode, r.stderr))

        # Each device is its own trace: one file per device with -o, a
        # refusal on stdout, one device with --device.
        two = os.path.join(tmp, "two.pickle")
        with open(two, "wb") as f:
            pickle.dump({"device_traces": [
                [{"action": "alloc", "addr": 0x1000, "size": 100, "stream": 0},
                 {"action": "free_completed", "addr": 0x1000, "size": 100, "stream": 0}],
                [],
                [{"action": "alloc", "addr": 0x1000, "size": 300, "stream": 0}],
            ]}, f)
        r = run([two, "-o", os.path.join(tmp, "two.trace.gz")])
        dev0, dev2 = os.path.join(tmp, "two-dev0.trace.gz"), os.path.join(tmp, "two-dev2.trace.gz")
        if r.returncode != 0 or not os.path.exists(dev0) or not os.path.exists(dev2) \
                or os.path.exists(os.path.join(tmp, "two-dev1.trace.gz")):
            failures.append("no trace per device: %r %r" % (r.stderr, sorted(os.listdir(tmp))))
        else:
            ev0 = [l for l in gzip.open(dev0, "rt").read().splitlines() if not l.startswith("#")]
            ev2 = [l for l in gzip.open(dev2, "rt").read().splitlines() if not l.startswith("#")]
            if ev0 != ["a 1 100", "f 1"] or ev2 != ["a 1 300"]:
                failures.append("per-device events %r %r" % (ev0, ev2))
        r = run([two])
        if r.returncode != 2 or "choose one with --device" not in r.stderr:
            failures.append("several devices on stdout not refused: %r" % r.stderr)
        r = run([two, "--device", "2"])
        if r.returncode != 0 or [l for l in r.stdout.splitlines() if not l.startswith("#")] != ["a 1 300"]:
            failures.append("--device 2 gave %r %r" % (r.stdout, r.stderr))

        # A bad event: its device, index and reason, not a dump of it.
        bad = os.path.join(tmp, "bad.pickle")
        with open(bad, "wb") as f:
            pickle.dump({"device_traces": [[
                {"action": "alloc", "addr": 0x1000, "size": 8, "stream": 0, "frames": ["x"] * 50},
                {"action": "alloc", "addr": 0x2000, "size": -8, "stream": 0, "frames": ["x"] * 50},
            ]]}, f)
        r = run([bad])
        want = "device 0, event 1: alloc of 0x2000 with a negative size (-8)"
        if r.returncode != 1 or want not in r.stderr or "frames" in r.stderr or "Traceback" in r.stderr:
            failures.append("bad event reported as %r" % r.stderr)
        with open(bad, "wb") as f:
            pickle.dump({"device_traces": [[
                {"action": "alloc", "addr": 0x1000, "size": 8},
                {"action": "alloc", "addr": 0x1000, "size": 8},
            ]]}, f)
        r = run([bad])
        if "event 1: alloc of 0x1000, which is still live (allocated at event 0)" not in r.stderr:
            failures.append("double alloc reported as %r" % r.stderr)

        # A name with a newline or an escape in it adds no line to the trace
        # and sends no control sequence to the terminal: the header and the
        # messages escape what is not printable.
        sneaky = os.path.join(tmp, "innocent.\na 424242 987654321\n#\x1b[2J.pickle")
        with open(sneaky, "wb") as f:
            pickle.dump(SNAPSHOT, f)
        r = run([sneaky, "--workload", "w\nf 1\r\x1b]0;t\x07"])
        events = [l for l in r.stdout.split("\n") if l and not l.startswith("#")]
        if r.returncode != 0 or events != EXPECTED_EVENTS or any(
                c in r.stdout.replace("\n", "") for c in "\r\x1b\x07"):
            failures.append("a name with control characters changed the trace: %r" % r.stdout)
        elif "innocent.\\x0aa 424242 987654321\\x0a#\\x1b[2J.pickle" not in r.stdout:
            failures.append("the escaped name is not in the header: %r" % r.stdout)
        with open(sneaky, "wb") as f:
            pickle.dump({"device_traces": [[]]}, f)
        r = run([sneaky])
        if r.returncode != 1 or "\x1b" in r.stderr or "\\x1b[2J.pickle: no alloc events" not in r.stderr:
            failures.append("a message printed a control character or no escaped name: %r" % r.stderr)

        # Pickles that are not plain data, or not pickles: the converter's
        # own sentence on what is wrong with the file, never a traceback.
        event = {"action": "alloc", "addr": 0x1000, "size": 8}
        for name, data, want in (
                ("build", b"\x80\x04}(X\x0d\x00\x00\x00device_traces]]au}b.",
                 "byte 27: pickle opcode BUILD, which sets an object's state"),
                ("unhashable_key", b"\x80\x04}]]s.", "a key that no dict can have (unhashable type: 'list')"),
                ("persistent_id", b"\x80\x04Pabc\n.", "refers to an object outside it"),
                ("extension", b"\x80\x04\x82\x01.", "pickle opcode EXT1, which names a registered class"),
                ("truncated", pickle.dumps(SNAPSHOT)[:-20], "the file is truncated"),
                ("not_pickle", b"garbage\n", "not a pickle: it starts with b'garbage\\n'"),
                ("empty_file", b"", "the file is empty"),
                ("underflow", b"\x80\x04s.", "malformed pickle: unpickling stack underflow"),
                ("corrupt_gzip", b"\x1f\x8b\x08\x00garbage", "corrupt or truncated gzip data"),
                ("stream_list", pickle.dumps({"device_traces": [[dict(event, stream=[1])]]}),
                 "device 0, event 0: alloc of 0x1000 on a stream that is not an integer (a list)"),
                ("size_list", pickle.dumps({"device_traces": [[dict(event, size=[0] * 100000)]]}),
                 "alloc of 0x1000 with a size that is not an integer (a list)"),
                ("addr_nested", pickle.dumps({"device_traces": [[dict(event, addr=[[[]]])]]}),
                 "alloc without an integer addr (a list)"),
                ("size_2_80", pickle.dumps({"device_traces": [[dict(event, size=1 << 80)]]}),
                 "alloc of 0x1000 with a size of a 81-bit number, more than a relo trace holds (2^64 - 1 bytes)"),
                ("size_sum_2_64", pickle.dumps({"device_traces": [[
                    dict(event, size=(1 << 64) - 1), dict(event, addr=0x2000, size=1)]]}),
                 "device 0, event 1: the sizes allocated so far add up to more than 2^64 - 1 bytes"),
                ("streams_257", pickle.dumps({"device_traces": [[
                    dict(event, addr=a, stream=a) for a in range(1, 259)]]}),
                 "device 0, event 256: a stream beyond the first 256, more than relo-replay replays"),
                ("negative_huge", pickle.dumps({"device_traces": [[dict(event, size=-(10 ** 5000))]]}),
                 "with a negative size (a 16610-bit number)")):
            path = os.path.join(tmp, name + ".pickle")
            with open(path, "wb") as f:
                f.write(data)
            r = run([path])
            if r.returncode != 1 or want not in r.stderr or "Traceback" in r.stderr or len(r.stderr) > 400:
                failures.append("%s: %d %r, expected status 1 and %r" % (name, r.returncode, r.stderr[-600:], want))

        # Sizes adding up to the most a trace counts (2^64 - 1), and the most
        # streams it holds, are written, and relo-replay reads them.
        edge = os.path.join(tmp, "edge.pickle")
        with open(edge, "wb") as f:
            pickle.dump({"device_traces": [[dict(event, size=(1 << 64) - 256)] + [
                dict(event, addr=a, size=1, stream=a) for a in range(1, 256)]]}, f)
        r = run([edge])
        events = [l for l in r.stdout.splitlines() if not l.startswith("#")]
        if r.returncode != 0 or events[0] != "a 1 18446744073709551360" or events[-1] != "a 256 1 255":
            failures.append("the largest size and 256 streams: %d %r %r" % (r.returncode, events[:1], r.stderr))
        elif REPLAYER:
            trace = os.path.join(tmp, "edge.trace")
            with open(trace, "w") as f:
                f.write(r.stdout)
            rr = subprocess.run([REPLAYER, "--json", trace], capture_output=True, text=True)
            if rr.returncode not in (0, 1) or '"events":256,' not in rr.stdout or '"streams":256' not in rr.stdout:
                failures.append("relo-replay did not read the edge trace: %d %r" % (rr.returncode, rr.stderr))

        # Bounds: pickle data after gunzip (a small gzip file of a large
        # pickle), events read, events repeated by reference (a small file
        # that would list millions), and memory while loading.
        fr = {"action": "free_completed", "addr": 0x1000, "size": 8}
        bomb = os.path.join(tmp, "bomb.pickle.gz")
        with open(bomb, "wb") as f:
            f.write(gzip.compress(pickle.dumps({"device_traces": [[event]], "pad": b"\0" * (8 << 20)})))
        shared = os.path.join(tmp, "shared.pickle")
        with open(shared, "wb") as f:
            pickle.dump({"device_traces": [[event, fr] * 500] * 1000}, f)
        dicts = os.path.join(tmp, "dicts.pickle")
        with open(dicts, "wb") as f:
            f.write(b"\x80\x04](" + b"}" * 3000000 + b"e.")
        for args, rc, want in (
                ([bomb, "--max-bytes", "1M"], 1, "more than 1 MiB of pickle data after gunzip, the most read "
                 "(--max-bytes raises the limit)"),
                ([bomb], 0, ""),
                ([snap, "--max-events", "5"], 1, "more than 5 events in its device traces, the most converted "
                 "(--max-events raises the limit)"),
                ([snap, "--max-events", "9"], 0, ""),
                ([shared], 1, "it repeats events by reference, which a PyTorch snapshot never does"),
                ([dicts, "--max-memory", "64M"], 1, "loading it needs more than 64 MiB of memory, the most allowed "
                 "(--max-memory raises the limit)"),
                ([snap, "--max-bytes", "lots"], 2, "'lots' is not a byte count"),
                ([snap, "--max-events", "0"], 2, "'0' is not above 0")):
            r = run(args)
            if r.returncode != rc or want not in r.stderr or "Traceback" in r.stderr:
                failures.append("%s: %d %r, expected %d and %r" % (args[1:], r.returncode, r.stderr[-400:], rc, want))

        # An unwritable -o: a sentence and status 1, no traceback.
        r = run([snap, "-o", os.path.join(tmp, "no-such-dir", "x.trace")])
        if r.returncode != 1 or "cannot write" not in r.stderr or "Traceback" in r.stderr:
            failures.append("unwritable -o gave %d %r" % (r.returncode, r.stderr))

    for f in failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
