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
event in that device's list and what is wrong with it. A file that does
not load as plain data is refused with what is wrong with it: not a
pickle, truncated, corrupt gzip, or the first opcode in it that a
snapshot never holds (one that names a class, calls or builds an object). Exit status: 0 on
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
import pickletools
import sys
import zlib


# What a relo trace holds (docs/trace-format.md, tools/trace.h): every
# number fits in 64 bits, and relo-replay replays at most 256 streams.
MAX_TRACE_NUMBER = (1 << 64) - 1
MAX_TRACE_STREAMS = 256


class RefusedClass(pickle.UnpicklingError):
    """The pickle names a class or function, which a snapshot never does."""


class DataOnlyUnpickler(pickle.Unpickler):
    """An unpickler that loads plain data and refuses every class."""

    def find_class(self, module, name):
        raise RefusedClass("refusing to load %s.%s: a snapshot holds plain data only, and this "
                           "converter runs no code from a file" % (printable(str(module)), printable(str(name))))

    def persistent_load(self, pid):
        raise RefusedClass("the pickle refers to an object outside it (a persistent id): a snapshot "
                           "holds plain data only")


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


# Pickle opcodes that build, call or fetch objects: a snapshot is plain
# data and holds none of them. What each would do, for the message.
FOREIGN_OPCODES = {
    "GLOBAL": "names a class or function",
    "STACK_GLOBAL": "names a class or function",
    "INST": "builds an object of a class",
    "OBJ": "builds an object of a class",
    "NEWOBJ": "builds an object of a class",
    "NEWOBJ_EX": "builds an object of a class",
    "REDUCE": "calls a function",
    "BUILD": "sets an object's state",
    "EXT1": "names a registered class",
    "EXT2": "names a registered class",
    "EXT4": "names a registered class",
    "PERSID": "refers to an object outside the pickle",
    "BINPERSID": "refers to an object outside the pickle",
    "NEXT_BUFFER": "refers to a buffer outside the pickle",
    "READONLY_BUFFER": "refers to a buffer outside the pickle",
}

# Bytes a pickle may start with: PROTO (protocol 2 on), or an opcode that
# begins a protocol 0 or 1 pickle of a dict or a list.
PICKLE_STARTS = b"\x80(}]"


class NotASnapshot(ValueError):
    """The file cannot be a PyTorch memory snapshot: the message says why."""


def describe_bytes(data):
    """The first bytes of data, printable, for a message."""
    return printable(repr(bytes(data[:16]))) + ("..." if len(data) > 16 else "")


def explain_load_error(error, data):
    """A sentence on why data did not load as plain-data pickle."""
    if not data:
        return "the file is empty"
    if data[:1] not in [PICKLE_STARTS[i:i + 1] for i in range(len(PICKLE_STARTS))]:
        return "not a pickle: it starts with %s" % describe_bytes(data)
    # Scan the opcodes (without running them) for the first one a snapshot
    # never holds, or the first that is no opcode at all.
    try:
        for op, _, pos in pickletools.genops(data):
            if op.name in FOREIGN_OPCODES:
                return ("byte %d: pickle opcode %s, which %s: a PyTorch memory snapshot holds "
                        "dicts, lists, strings and numbers only" % (pos, op.name, FOREIGN_OPCODES[op.name]))
    except Exception as e:  # genops stops at the first malformed opcode
        if "unknown" in str(e):
            return "corrupt pickle: %s" % printable(str(e))
    text = str(error)
    if isinstance(error, EOFError) or "truncated" in text:
        return "the pickle data ends before its end mark: the file is truncated"
    if isinstance(error, TypeError) and "unhashable" in text:
        return ("a dict in the pickle has a key that no dict can have (%s): the file is corrupt "
                "or not a snapshot" % printable(text))
    if "unsupported pickle protocol" in text:
        return "%s, newer than this Python (%d.%d) reads" % (printable(text), sys.version_info[0],
                                                            sys.version_info[1])
    return "malformed pickle: %s (the file is corrupt, or not a snapshot)" % printable(text)


def load_snapshot(path):
    """Returns the snapshot object from path (a pickle, optionally gzipped).
    Raises NotASnapshot with a sentence when it does not load as plain data."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise NotASnapshot("corrupt or truncated gzip data (%s)" % printable(str(e)))
    try:
        return DataOnlyUnpickler(io.BytesIO(data)).load()
    except RefusedClass as e:
        raise NotASnapshot(str(e))
    except RecursionError:
        raise NotASnapshot("the pickle nests deeper than this Python can load")
    except Exception as e:  # every other failure of the C unpickler
        raise NotASnapshot(explain_load_error(e, data))


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


def describe_value(value):
    """A short, printable account of a value from the snapshot: a number in
    hex, a string quoted, anything else by its type (never a dump of it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 64:
            return "a %d-bit number" % value.bit_length()
        return "0x%x" % value if value >= 0 else "-0x%x" % -value
    if isinstance(value, str):
        return printable(repr(value[:40])) + ("..." if len(value) > 40 else "")
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    return "a %s" % type(value).__name__


def decimal(number):
    """number in decimal, or its bit length when it is too long to print."""
    return "%d" % number if number.bit_length() <= 64 else "a %d-bit number" % number.bit_length()


def describe_addr(addr):
    return describe_value(addr)


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
                raise BadEvent(device, index, "alloc of %s with a size that is not an integer (%s)"
                               % (describe_addr(addr), describe_value(size)))
            if size < 0:
                raise BadEvent(device, index, "alloc of %s with a negative size (%s)"
                               % (describe_addr(addr), decimal(size)))
            if size > MAX_TRACE_NUMBER:
                raise BadEvent(device, index, "alloc of %s with a size of %s, more than a relo trace holds "
                               "(2^64 - 1 bytes)" % (describe_addr(addr), decimal(size)))
            if total + size > MAX_TRACE_NUMBER:
                raise BadEvent(device, index, "the sizes allocated so far add up to more than 2^64 - 1 bytes, "
                               "more than a relo trace counts")
            if addr in live:
                raise BadEvent(device, index, "alloc of %s, which is still live (allocated at event %d)"
                               % (describe_addr(addr), live[addr][2]))
            stream = ev.get("stream", 0)
            if not isinstance(stream, int) or isinstance(stream, bool):
                raise BadEvent(device, index, "alloc of %s on a stream that is not an integer (%s)"
                               % (describe_addr(addr), describe_value(stream)))
            if stream not in streams and len(streams) == MAX_TRACE_STREAMS:
                raise BadEvent(device, index, "a stream beyond the first %d, more than relo-replay replays"
                               % MAX_TRACE_STREAMS)
            stream = streams.setdefault(stream, len(streams))
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
    except OSError as e:
        say(args.snapshot, "cannot read", e.strerror or e)
        return 1
    except ValueError as e:  # NotASnapshot, BadEvent and the checks of the structure
        say(args.snapshot, e)
        return 1
    except Exception as e:  # whatever else the data provokes: a sentence, never a traceback
        say(args.snapshot, "unexpected content for a snapshot (%s: %s)" % (type(e).__name__, e))
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
