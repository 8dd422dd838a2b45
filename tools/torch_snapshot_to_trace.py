#!/usr/bin/env python3
"""Converts a PyTorch CUDA memory snapshot into a relo trace (format 1).

Usage: torch_snapshot_to_trace.py SNAPSHOT.pickle [-o OUT.trace[.gz]]
                                  [--device N] [--workload NAME]
                                  [--max-bytes BYTES] [--max-events N]
                                  [--max-memory BYTES]
(installed as relo-torch-snapshot-to-trace)

A snapshot is what torch.cuda.memory._dump_snapshot() writes: a pickle of
plain dicts and lists (the same dicts and lists saved as JSON are read
too; either may be gzipped) whose "device_traces" holds, per device, a list of
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
A hostile file costs bounded time and memory. The pickle data is read as
a stream, gunzipped on the fly, and refused past --max-bytes (default
4 GiB), so a small gzip file cannot grow into gigabytes. The entries of
the device traces, of every action, are counted and refused past
--max-events (default 50,000,000), and so are more than one entry per 4
bytes of pickle: a real snapshot spends tens of bytes on each event, and
only a pickle that repeats one event or one list by reference lists more.
While converting, the process's address space is capped (RLIMIT_AS, where
the system has it) at --max-memory beyond what it held at the start
(default: half of physical memory), so a pickle of millions of tiny
objects stops with a message instead of exhausting the machine.

Text that comes from outside (the file name, --workload) is written into
the header with every character that is not printable escaped (a newline
becomes \\x0a), so no name can add a line to the trace or send a control
sequence to a terminal. Standard library only.
"""
import argparse
import gzip
import io
import json
import os
import pickle
import pickletools
import sys
import zlib


# What a relo trace holds (docs/trace-format.md, tools/trace.h): every
# number fits in 64 bits, and relo-replay replays at most 256 streams.
MAX_TRACE_NUMBER = (1 << 64) - 1
MAX_TRACE_STREAMS = 256


# The bounds' defaults: pickle data read (after gunzip), entries of the
# device traces read, and memory while converting (a share of this
# machine's). A real snapshot spends tens of bytes of pickle on each event.
DEFAULT_MAX_BYTES = 4 << 30
DEFAULT_MAX_EVENTS = 50 * 1000 * 1000
MIN_BYTES_PER_EVENT = 4
EVENTS_WITHOUT_RATIO = 1000


def default_max_memory():
    """Half of this machine's physical memory; 8 GiB where unknown."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def size_text(n):
    """n bytes in the largest binary unit that keeps it whole, e.g. 4 GiB."""
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d bytes" % n


def parse_size(text):
    """A byte count with an optional binary unit: 4096, 512M, 4G, 1.5G."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper()
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and len(t) > len(suffix) and t[-len(suffix) - 1] in "KMGT":
            t = t[:-len(suffix)]
    unit = t[-1:] if t[-1:] in "KMGT" else ""
    try:
        value = float(t[:len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a byte count (such as 4096, 512M or 4G)" % text)
    if not value >= 1 or value > 1 << 62:
        raise argparse.ArgumentTypeError("'%s' is out of range (1 byte to 4 EiB)" % text)
    return int(value)


def parse_count(text):
    """A positive whole number."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a whole number" % text)
    if value < 1:
        raise argparse.ArgumentTypeError("'%s' is not above 0" % text)
    return value


def limit_memory(max_memory):
    """Caps this process's address space at what it holds now plus
    max_memory, so that loading a hostile pickle raises MemoryError
    instead of exhausting the machine. Returns whether it could (Linux
    and other systems with RLIMIT_AS)."""
    try:
        import resource
        with open("/proc/self/statm") as f:
            now = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = now + max_memory
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft != resource.RLIM_INFINITY:
            want = min(want, soft)
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
        return True
    except (ImportError, OSError, ValueError, IndexError):
        return False


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


def explain_load_error(error, f):
    """A sentence on why the pickle in file f (at its start) did not load
    as plain data."""
    data = f.peek(16)[:16]
    if not data:
        return "the file is empty"
    if data[:1] not in [PICKLE_STARTS[i:i + 1] for i in range(len(PICKLE_STARTS))]:
        return "not a pickle: it starts with %s" % describe_bytes(data)
    # Scan the opcodes (without running them) for the first one a snapshot
    # never holds, or the first that is no opcode at all.
    try:
        for op, _, pos in pickletools.genops(f):
            if op.name in FOREIGN_OPCODES:
                return ("byte %d: pickle opcode %s, which %s: a PyTorch memory snapshot holds "
                        "dicts, lists, strings and numbers only" % (pos, op.name, FOREIGN_OPCODES[op.name]))
    except NotASnapshot:
        raise
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


class Limits:
    """The bounds on what a snapshot may cost (see the module comment)."""

    def __init__(self, max_bytes, max_events):
        self.max_bytes = max_bytes
        self.max_events = max_events
        self.pickle_bytes = 0   # bytes of pickle data read, after gunzip
        self.events = 0         # entries of device traces read, every action

    def take_event(self):
        """Counts one entry read from a device trace; refuses one too many."""
        self.events += 1
        if self.events > self.max_events:
            raise NotASnapshot("more than %d events in its device traces, the most converted "
                               "(--max-events raises the limit)" % self.max_events)
        # A real snapshot spends tens of bytes on each event; a pickle that
        # names one object again costs two. Many more events than bytes / 4
        # means events repeated by reference, which no snapshot holds.
        if self.events > max(EVENTS_WITHOUT_RATIO, self.pickle_bytes // MIN_BYTES_PER_EVENT):
            raise NotASnapshot("its device traces hold over %d events in %d bytes of pickle: it repeats "
                               "events by reference, which a PyTorch snapshot never does"
                               % (self.events - 1, self.pickle_bytes))


class BoundedReader(io.RawIOBase):
    """The bytes of a file, gunzipped when they are gzip data, stopping
    with NotASnapshot past limits.max_bytes (so a small gzip file cannot
    make the converter decode gigabytes)."""

    def __init__(self, raw, gz, limits):
        io.RawIOBase.__init__(self)
        self.source = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        self.gz = gz
        self.limits = limits
        self.position = 0

    def readable(self):
        return True

    def tell(self):
        return self.position

    def readinto(self, buffer):
        try:
            n = self.source.readinto(buffer)
        except (OSError, EOFError, zlib.error) as e:
            if not self.gz:
                raise
            raise NotASnapshot("corrupt or truncated gzip data (%s)" % printable(str(e)))
        self.limits.pickle_bytes += n
        self.position += n
        if self.limits.pickle_bytes > self.limits.max_bytes:
            raise NotASnapshot("more than %s of pickle data%s, the most read (--max-bytes raises the limit)"
                               % (size_text(self.limits.max_bytes), " after gunzip" if self.gz else ""))
        return n


def open_bounded(path, limits):
    """path opened for reading through a BoundedReader, buffered."""
    raw = open(path, "rb")
    try:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        return io.BufferedReader(BoundedReader(raw, gz, limits), 1 << 16)
    except BaseException:
        raw.close()
        raise


def is_json(head):
    """Whether the first bytes of a file begin a JSON object or array
    (after a byte-order mark and blanks); no pickle starts so."""
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    head = head.lstrip(b" \t\r\n")
    return head[:1] in (b"{", b"[")


def load_json(f):
    """The snapshot object from JSON text in f; NotASnapshot when invalid."""
    text = f.read()
    try:
        return json.loads(text.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise NotASnapshot("JSON that is not UTF-8 (byte %d)" % e.start)
    except RecursionError:
        raise NotASnapshot("the JSON nests deeper than this Python can load")
    except ValueError as e:
        raise NotASnapshot("not valid JSON: %s" % printable(str(e)))


def load_snapshot(path, limits):
    """Returns the snapshot object from path: a pickle (what
    torch.cuda.memory._dump_snapshot writes) or the same dicts and lists
    as JSON, either optionally gzipped. Raises NotASnapshot with a sentence
    when it does not load as plain data or passes limits.max_bytes, and
    MemoryError past the memory limit."""
    with open_bounded(path, limits) as f:
        if is_json(f.peek(64)[:64]):
            return load_json(f)
        try:
            return DataOnlyUnpickler(f).load()
        except (NotASnapshot, MemoryError, OSError):
            raise
        except RefusedClass as e:
            raise NotASnapshot(str(e))
        except RecursionError:
            raise NotASnapshot("the pickle nests deeper than this Python can load")
        except Exception as e:  # every other failure of the C unpickler
            failure = e
    # Said outside the handler, where the objects the load made are freed.
    with open_bounded(path, Limits(limits.max_bytes, limits.max_events)) as f:
        raise NotASnapshot(explain_load_error(failure, f))


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


def convert(events, device, limits):
    """Returns (the trace's event lines as bytes, stats) for one device's
    event list; every entry read counts against limits."""
    if not isinstance(events, list):
        raise ValueError("device %d: its trace is a %s, not a list" % (device, type(events).__name__))
    lines = bytearray()
    count = 0
    live = {}          # address -> (trace id, size, event index)
    streams = {}       # snapshot stream -> small integer
    next_id = 1
    live_bytes = peak = total = max_alloc = 0
    skipped = 0
    for index, ev in enumerate(events):
        limits.take_event()
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
            lines += b"a %d %d %d\n" % (next_id, size, stream) if stream else b"a %d %d\n" % (next_id, size)
            count += 1
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
            lines += b"f %d\n" % tid
            count += 1
            live_bytes -= tsize
    stats = {"events": count, "peak_live_bytes": peak, "total_allocated_bytes": total,
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
    """Writes the header and the event lines (bytes) to the binary file out."""
    head = ["# relo-trace 1", "# workload: %s" % printable(workload), "# source: %s" % printable(source)]
    for key in ("events", "peak_live_bytes", "total_allocated_bytes", "max_alloc_bytes"):
        head.append("# %s: %d" % (key, stats[key]))
    head.append("# skipped_frees: %d (blocks allocated before the snapshot's trace began)" % stats["skipped_frees"])
    out.write(("\n".join(head) + "\n").encode("utf-8"))
    out.write(lines)


def write_file(path, lines, stats, workload, source):
    if path and path.endswith(".gz"):
        with gzip.open(path, "wb") as out:
            write_trace(out, lines, stats, workload, source)
    elif path:
        with open(path, "wb") as out:
            write_trace(out, lines, stats, workload, source)
    else:
        sys.stdout.flush()
        write_trace(sys.stdout.buffer, lines, stats, workload, source)
        sys.stdout.buffer.flush()


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
    ap.add_argument("--max-bytes", type=parse_size, default=DEFAULT_MAX_BYTES, metavar="BYTES",
                    help="read at most this much pickle data, after gunzip (default %s)"
                    % size_text(DEFAULT_MAX_BYTES))
    ap.add_argument("--max-events", type=parse_count, default=DEFAULT_MAX_EVENTS, metavar="N",
                    help="read at most this many events from the device traces, of every action "
                    "(default %d)" % DEFAULT_MAX_EVENTS)
    ap.add_argument("--max-memory", type=parse_size, default=None, metavar="BYTES",
                    help="use at most this much memory (default: half of physical memory; "
                    "where the system caps address space)")
    args = ap.parse_args(argv)
    limits = Limits(args.max_bytes, args.max_events)
    max_memory = args.max_memory or default_max_memory()
    limit_memory(max_memory)
    try:
        snapshot = load_snapshot(args.snapshot, limits)
        traces = device_traces(snapshot)
        if args.device is not None:
            if args.device < 0 or args.device >= len(traces):
                raise ValueError("device %d not in the snapshot (it has %d)" % (args.device, len(traces)))
            chosen = [args.device]
        else:
            chosen = list(range(len(traces)))
        converted = []
        for d in chosen:
            limits.take_event()  # an empty device costs a little too
            lines, stats = convert(traces[d], d, limits)
            if lines:
                converted.append((d, lines, stats))
        del snapshot, traces
    except MemoryError:
        say(args.snapshot, "loading it needs more than %s of memory, the most allowed (--max-memory raises "
            "the limit)" % size_text(max_memory))
        return 1
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
        say(args.snapshot, "no alloc events in %s: PyTorch records them only while allocation history "
            "is on (torch.cuda.memory._record_memory_history() before the workload, "
            "torch.cuda.memory._dump_snapshot() after it)" % where)
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
