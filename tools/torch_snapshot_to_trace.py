#!/usr/bin/env python3
"""Converts a PyTorch CUDA memory snapshot into a relo trace (format 1).

Usage: torch_snapshot_to_trace.py SNAPSHOT.pickle [-o OUT.trace[.gz]]
                                  [--device N] [--workload NAME]

A snapshot is what torch.cuda.memory._dump_snapshot() writes: a pickle of
plain dicts and lists whose "device_traces" holds, per device, a list of
events {"action", "addr", "size", "stream", ...}. This reads "alloc" and
"free_completed" events (the moment memory really became free), maps each
address to a fresh trace id (addresses come back after a free), and skips
frees of blocks allocated before the trace began: the snapshot's trace is
a ring buffer. Stream numbers become small integers in order of first use.

The pickle is read with an Unpickler that refuses every class, so a
snapshot can never run code: only dicts, lists, strings and numbers load.
Standard library only.
"""
import argparse
import gzip
import io
import os
import pickle
import sys


class DataOnlyUnpickler(pickle.Unpickler):
    """An unpickler that loads plain data and refuses every class."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            "refusing to load %s.%s: snapshots hold plain data only" % (module, name))


def load_snapshot(path):
    """Returns the snapshot object from path (a pickle, optionally gzipped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return DataOnlyUnpickler(io.BytesIO(data)).load()


def device_events(snapshot, device):
    """The event list of one device (or of every device, in order, when None)."""
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    if not isinstance(traces, list):
        raise ValueError("the snapshot has no device_traces list")
    if device is not None:
        if device < 0 or device >= len(traces):
            raise ValueError("device %d not in the snapshot (it has %d)" % (device, len(traces)))
        return [traces[device] or []]
    return [t or [] for t in traces]


def convert(snapshot, device=None):
    """Returns (lines of events, stats) for the chosen device(s)."""
    lines = []
    live = {}          # address -> (trace id, size)
    streams = {}       # snapshot stream -> small integer
    next_id = 1
    live_bytes = peak = total = max_alloc = 0
    skipped = 0
    for events in device_events(snapshot, device):
        for ev in events:
            if not isinstance(ev, dict):
                continue
            action = ev.get("action")
            addr = ev.get("addr")
            size = ev.get("size", 0)
            if action == "alloc":
                if not isinstance(size, int) or size < 0 or addr in live:
                    raise ValueError("bad alloc event: %r" % (ev,))
                stream = streams.setdefault(ev.get("stream", 0), len(streams))
                live[addr] = (next_id, size)
                lines.append("a %d %d" % (next_id, size) + (" %d" % stream if stream else ""))
                next_id += 1
                live_bytes += size
                total += size
                peak = max(peak, live_bytes)
                max_alloc = max(max_alloc, size)
            elif action == "free_completed":
                if addr not in live:
                    skipped += 1   # allocated before the ring buffer began
                    continue
                tid, tsize = live.pop(addr)
                lines.append("f %d" % tid)
                live_bytes -= tsize
    stats = {"events": len(lines), "peak_live_bytes": peak, "total_allocated_bytes": total,
             "max_alloc_bytes": max_alloc, "skipped_frees": skipped, "live_at_end": len(live),
             "streams": len(streams)}
    return lines, stats


def write_trace(out, lines, stats, workload, source):
    out.write("# relo-trace 1\n")
    out.write("# workload: %s\n" % workload)
    out.write("# source: %s\n" % source)
    for key in ("events", "peak_live_bytes", "total_allocated_bytes", "max_alloc_bytes"):
        out.write("# %s: %d\n" % (key, stats[key]))
    out.write("# skipped_frees: %d (blocks allocated before the snapshot's trace began)\n"
              % stats["skipped_frees"])
    for line in lines:
        out.write(line + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("-o", "--output", help="output file (.gz compresses); default stdout")
    ap.add_argument("--device", type=int, help="device index (default: every device)")
    ap.add_argument("--workload", help="workload name for the header (default: file name)")
    args = ap.parse_args(argv)
    try:
        snapshot = load_snapshot(args.snapshot)
        lines, stats = convert(snapshot, args.device)
    except (OSError, ValueError, pickle.UnpicklingError, EOFError) as e:
        print("%s: %s" % (args.snapshot, e), file=sys.stderr)
        return 1
    if not lines:
        print("%s: no alloc events in device_traces" % args.snapshot, file=sys.stderr)
        return 1
    base = os.path.basename(args.snapshot)
    workload = args.workload or base.split(".")[0]
    source = "PyTorch memory snapshot %s; alloc and free_completed events of device_traces" % base
    if args.output and args.output.endswith(".gz"):
        with gzip.open(args.output, "wt") as out:
            write_trace(out, lines, stats, workload, source)
    elif args.output:
        with open(args.output, "w") as out:
            write_trace(out, lines, stats, workload, source)
    else:
        write_trace(sys.stdout, lines, stats, workload, source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
