#!/usr/bin/env python3
"""Converts a PyTorch CUDA memory snapshot into a relo trace (format 1).

Usage: torch_snapshot_to_trace.py SNAPSHOT.pickle [-o OUT.trace[.gz]]
                                  [--device N] [--workload NAME]
(installed as relo-torch-snapshot-to-trace)

A snapshot is what torch.cuda.memory._dump_snapshot() writes: a pickle of
plain dicts and lists whose "device_traces" holds, per device, a list of
events {"action", "addr", "size", "stream", ...}. This reads "alloc" and
"free_completed" events (the moment memory really became free), maps each
address to a fresh trace id (addresses come back after a free), and skips
frees of blocks allocated before the trace began: the snapshot's trace is
a ring buffer. Stream numbers become small integers in order of first use.

Each device is its own trace: devices share no memory, so one sequential
trace of all of them would replay as if one device held them all. With
--device N only that device is converted. Without it, a snapshot whose
events are on one device gives that device's trace; one with events on
several gives one file per device with -o (OUT.trace.gz becomes
OUT-dev0.trace.gz, OUT-dev1.trace.gz, ...) and is refused on standard
output, which holds one trace.

A malformed event stops the conversion with the device, the index of the
event in that device's list and what is wrong with it. Exit status: 0 on
success, 1 for an unreadable or malformed snapshot or an output that
cannot be written, 2 for bad usage.

The pickle is read with an Unpickler that refuses every class, so a
snapshot can never run code: only dicts, lists, strings and numbers load.
Text that comes from outside (the file name, --workload) is written into
the header with every character that is not printable escaped (a newline
becomes \\x0a), so no name can add a line to the trace or send a control
sequence to a terminal. Standard library only.
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


def printable(text):
    """text with every character that is not printable escaped (\\xHH,
    \\uHHHH, \\UHHHHHHHH), so it stays on one line and moves no terminal."""
    out = []
    for c in text:
        if c.isprintable():
            out.append(c)
        elif ord(c) < 0x100:
            out.append("\\x%02x" % ord(c))
        elif ord(c) < 0x10000:
            out.append("\\u%04x" % ord(c))
        else:
            out.append("\\U%08x" % ord(c))
    return "".join(out)


def load_snapshot(path):
    """Returns the snapshot object from path (a pickle, optionally gzipped)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return DataOnlyUnpickler(io.BytesIO(data)).load()


class BadEvent(ValueError):
    """A malformed event: where it is and what is wrong with it."""

    def __init__(self, device, index, reason):
        ValueError.__init__(self, "device %d, event %d: %s" % (device, index, reason))


def device_traces(snapshot):
    """The snapshot's per-device event lists."""
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    if not isinstance(traces, list):
        raise ValueError("the snapshot has no device_traces list")
    return [t or [] for t in traces]


def describe_addr(addr):
    return "0x%x" % addr if isinstance(addr, int) else repr(addr)[:40]


def convert(events, device=0):
    """Returns (lines of events, stats) for one device's event list."""
    if not isinstance(events, list):
        raise ValueError("device %d: its trace is a %s, not a list" % (device, type(events).__name__))
    lines = []
    live = {}          # address -> (trace id, size, event index)
    streams = {}       # snapshot stream -> small integer
    next_id = 1
    live_bytes = peak = total = max_alloc = 0
    skipped = 0
    for index, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise BadEvent(device, index, "a %s, not a dict" % type(ev).__name__)
        action = ev.get("action")
        if action not in ("alloc", "free_completed"):
            continue
        addr = ev.get("addr")
        if not isinstance(addr, int) or isinstance(addr, bool):
            raise BadEvent(device, index, "%s without an integer addr (%s)" % (action, describe_addr(addr)))
        if action == "alloc":
            size = ev.get("size")
            if not isinstance(size, int) or isinstance(size, bool):
                raise BadEvent(device, index, "alloc of %s with a size that is not an integer (%r)"
                               % (describe_addr(addr), size))
            if size < 0:
                raise BadEvent(device, index, "alloc of %s with a negative size (%d)" % (describe_addr(addr), size))
            if addr in live:
                raise BadEvent(device, index, "alloc of %s, which is still live (allocated at event %d)"
                               % (describe_addr(addr), live[addr][2]))
            stream = streams.setdefault(ev.get("stream", 0), len(streams))
            live[addr] = (next_id, size, index)
            lines.append("a %d %d" % (next_id, size) + (" %d" % stream if stream else ""))
            next_id += 1
            live_bytes += size
            total += size
            peak = max(peak, live_bytes)
            max_alloc = max(max_alloc, size)
        else:
            if addr not in live:
                skipped += 1   # allocated before the ring buffer began
                continue
            tid, tsize, _ = live.pop(addr)
            lines.append("f %d" % tid)
            live_bytes -= tsize
    stats = {"events": len(lines), "peak_live_bytes": peak, "total_allocated_bytes": total,
             "max_alloc_bytes": max_alloc, "skipped_frees": skipped, "live_at_end": len(live),
             "streams": len(streams)}
    return lines, stats


def device_path(output, device):
    """OUT.trace.gz -> OUT-devN.trace.gz (the suffixes a trace file has)."""
    head, tail = os.path.split(output)
    cut = len(tail)
    for ext in (".gz", ".trace", ".txt"):
        if tail[:cut].endswith(ext):
            cut -= len(ext)
    return os.path.join(head, "%s-dev%d%s" % (tail[:cut], device, tail[cut:]))


def write_trace(out, lines, stats, workload, source):
    out.write("# relo-trace 1\n")
    out.write("# workload: %s\n" % printable(workload))
    out.write("# source: %s\n" % printable(source))
    for key in ("events", "peak_live_bytes", "total_allocated_bytes", "max_alloc_bytes"):
        out.write("# %s: %d\n" % (key, stats[key]))
    out.write("# skipped_frees: %d (blocks allocated before the snapshot's trace began)\n"
              % stats["skipped_frees"])
    for line in lines:
        out.write(line + "\n")


def write_file(path, lines, stats, workload, source):
    if path and path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as out:
            write_trace(out, lines, stats, workload, source)
    elif path:
        with open(path, "w", encoding="utf-8") as out:
            write_trace(out, lines, stats, workload, source)
    else:
        write_trace(sys.stdout, lines, stats, workload, source)
        sys.stdout.flush()


def say(*parts):
    """Prints a message on standard error, each part made printable."""
    print(": ".join(printable(str(p)) for p in parts), file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("-o", "--output", help="output file (.gz compresses); default stdout; "
                    "with events on several devices, one file per device (OUT-devN)")
    ap.add_argument("--device", type=int, help="convert only this device (default: each device "
                    "with events, one trace each)")
    ap.add_argument("--workload", help="workload name for the header (default: file name)")
    args = ap.parse_args(argv)
    try:
        snapshot = load_snapshot(args.snapshot)
        traces = device_traces(snapshot)
        if args.device is not None:
            if args.device < 0 or args.device >= len(traces):
                raise ValueError("device %d not in the snapshot (it has %d)" % (args.device, len(traces)))
            chosen = [args.device]
        else:
            chosen = list(range(len(traces)))
        converted = []
        for d in chosen:
            lines, stats = convert(traces[d], d)
            if lines:
                converted.append((d, lines, stats))
    except (OSError, ValueError, pickle.UnpicklingError, EOFError) as e:
        say(args.snapshot, e)
        return 1
    if not converted:
        where = "device %d" % args.device if args.device is not None else "device_traces"
        say(args.snapshot, "no alloc events in %s" % where)
        return 1
    if len(converted) > 1 and not args.output:
        say(args.snapshot, "events on devices %s: choose one with --device N, or give -o OUT to write "
            "one trace per device" % ", ".join(str(d) for d, _, _ in converted))
        return 2
    base = os.path.basename(args.snapshot)
    workload = args.workload or base.split(".")[0]
    for d, lines, stats in converted:
        source = ("PyTorch memory snapshot %s; alloc and free_completed events of device %d"
                  % (base, d))
        path = args.output
        if len(converted) > 1:
            path = device_path(args.output, d)
        try:
            write_file(path, lines, stats, workload if len(converted) == 1 else "%s-dev%d" % (workload, d),
                       source)
        except OSError as e:
            say(path or "standard output", "cannot write", e.strerror or e)
            return 1
        if len(converted) > 1:
            say(path, "device %d" % d, "%d events" % stats["events"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
