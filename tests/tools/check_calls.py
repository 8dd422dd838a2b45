#!/usr/bin/env python3
"""The layer rule of HACKING.md on calls: what the objects of librelo
reference, read from their symbol tables with nm.

Usage: check_calls.py [--order base,backend,...] [--nm NM] [--src DIR]
                      [--keep SYMBOL] [--flat-map FILE] OBJDIR [OBJDIR ...]

OBJDIR is the folder that holds a library's objects for src/, e.g.
build/CMakeFiles/relo_static.dir/src, whose objects are named after their
sources (pool/pool.c.o). Several may be given (the device backends'
libraries); an object's name is its path under its OBJDIR, without ".o".
A file's layer is its first folder: pool/pool.c.o is in layer "pool",
backend/cuda.c.o in "backend". --order lists the layers bottom first.
--flat-map FILE names the layer of files that are in no folder: one
"path layer" pair a line ('#' starts a comment), e.g. "pool.c pool".
--src DIR (the sources, e.g. src) leaves out objects whose source is gone:
what a build folder keeps of a file that was moved or removed.

A reference from one object to a global symbol another defines is a call
(references to data count the same). nm -u gives what an object
references, nm --defined-only -g what it defines. The check fails on:
  - a call from a file to a file of a layer later in the order (upward);
  - a cycle between files: every strongly connected component of the
    file call graph with more than one file, within one folder or not;
  - a relo__ global symbol that no other object references: it is used in
    its own file only (make it static) or not at all (remove it). Objects
    of the testing folder count as users, so an internal function that
    only the tests reach goes through testing/; what testing/ defines is
    for the tests and is not checked. --keep SYMBOL names one that this
    build may leave without a user (relo__assert_fail, called only when
    RELO_DEBUG >= 2);
  - a file in no known folder.
Exit 0 with a one-line summary when the rule holds; 1 with each violation
listed ("caller -> callee: symbol"); 2 when the objects cannot be read
(e.g. link-time-optimised objects that hold only compiler IR, which nm
reads only with the compiler's plugin: configure with -DRELO_LTO=OFF, or
pass --nm gcc-nm).
"""
import argparse
import os
import subprocess
import sys

DEFAULT_ORDER = "base,backend,mem,pool,layout,core,pass,policy,api,testing"
OBJECT_SUFFIXES = (".o", ".obj")


class ReadError(Exception):
    pass


def find_objects(objdirs, src):
    """Returns ({name: [object paths]}, stale names): name is the path under
    its OBJDIR without the object suffix ("pool/pool.c"). With src, an
    object whose source src/name is gone is left out as stale."""
    objects, stale = {}, set()
    for top in objdirs:
        if not os.path.isdir(top):
            raise ReadError("%s: no such folder (build the library first)" % top)
        for root, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(OBJECT_SUFFIXES):
                    continue
                path = os.path.join(root, f)
                name = os.path.relpath(path, top).replace(os.sep, "/")
                name = name[: name.rfind(".")]
                if src is not None and not os.path.isfile(os.path.join(src, name)):
                    stale.add(name)
                    continue
                objects.setdefault(name, []).append(path)
    if not objects:
        raise ReadError("no object files under %s" % ", ".join(objdirs))
    return objects, sorted(stale)


def lto_kind(path):
    """'gcc' when the object carries GCC's LTO IR, 'llvm' when it is LLVM
    bitcode, None otherwise."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
        return "llvm"
    if b".gnu.lto_" in data:
        return "gcc"
    return None


def advice(kind):
    if kind == "llvm":
        return "configure with -DRELO_LTO=OFF, or pass --nm llvm-nm"
    return "configure with -DRELO_LTO=OFF, or pass --nm gcc-nm"


def nm_symbols(nm, path, args):
    """The symbol names nm prints for path with args (POSIX format)."""
    try:
        run = subprocess.run([nm, "-P"] + args + [path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
    except OSError as e:
        raise ReadError("cannot run %s: %s" % (nm, e))
    if run.returncode != 0:
        kind = lto_kind(path)
        why = run.stderr.strip() or "exit status %d" % run.returncode
        if kind:
            raise ReadError("%s: %s cannot read this link-time-optimised object (%s): %s"
                            % (path, nm, why, advice(kind)))
        raise ReadError("%s: %s failed: %s" % (path, nm, why))
    names = set()
    for line in run.stdout.splitlines():
        fields = line.split()
        if len(fields) < 2 or line.endswith(":"):
            continue
        name = fields[0]
        # GCC marks its IR objects with these; they are no one's calls.
        if name.startswith("__gnu_lto_"):
            continue
        names.add(name)
    return names


def read_objects(nm, objects):
    """Returns ({name: defined globals}, {name: undefined references})."""
    defined, undefined = {}, {}
    for name, paths in objects.items():
        d, u = set(), set()
        for path in paths:
            pd = nm_symbols(nm, path, ["--defined-only", "-g"])
            pu = nm_symbols(nm, path, ["-u"])
            kind = lto_kind(path)
            if kind and not pd and not pu:
                raise ReadError("%s: %s read no symbols from this link-time-optimised object, which holds "
                                "only compiler IR (its LTO plugin is missing): %s" % (path, nm, advice(kind)))
            d |= pd
            u |= pu
        defined[name] = d
        undefined[name] = u
    return defined, undefined


def read_map(path):
    layers = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 2:
                raise ReadError("%s:%d: expected 'path layer'" % (path, n))
            layers[fields[0]] = fields[1]
    return layers


def layer_of(name, order, flat_map):
    if name in flat_map:
        return flat_map[name]
    if "/" in name:
        folder = name.split("/", 1)[0]
        if folder in order:
            return folder
    return None


def components(nodes, edges):
    """Strongly connected components (Tarjan's, iterative), each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                out.append(sorted(comp))
    return out


def check(defined, undefined, order, flat_map, keep=()):
    """Returns (report lines, number of violations, summary)."""
    definers = {}
    for name, syms in defined.items():
        for s in syms:
            definers.setdefault(s, []).append(name)
    # calls[caller][callee] = symbols
    calls = {}
    used = set()
    for caller, syms in undefined.items():
        for s in syms:
            for callee in definers.get(s, ()):
                if callee != caller:
                    calls.setdefault(caller, {}).setdefault(callee, set()).add(s)
                    used.add((callee, s))
    names = sorted(defined)
    layer = {n: layer_of(n, order, flat_map) for n in names}
    rank = {l: i for i, l in enumerate(order)}
    out, count = [], 0

    def edge_line(caller, callee):
        return "  %s -> %s: %s" % (caller, callee, ", ".join(sorted(calls[caller][callee])))

    lost = [n for n in names if layer[n] is None]
    if lost:
        out.append("files in no known folder (%s):" % ", ".join(order))
        out.extend("  %s" % n for n in lost)
        count += len(lost)

    upward = []
    for caller in names:
        for callee in sorted(calls.get(caller, {})):
            lc, le = layer[caller], layer[callee]
            if lc is not None and le is not None and rank.get(le, -1) > rank.get(lc, -1):
                upward.append(edge_line(caller, callee))
    if upward:
        out.append("upward calls (a file calls a folder later in the order):")
        out.extend(upward)
        count += len(upward)

    edges = {c: set(callees) for c, callees in calls.items()}
    for comp in components(names, edges):
        if len(comp) < 2:
            continue
        members = set(comp)
        out.append("cycle among %d files (%s):" % (len(comp), ", ".join(comp)))
        for caller in comp:
            for callee in sorted(calls.get(caller, {})):
                if callee in members:
                    out.append(edge_line(caller, callee))
        count += 1

    unused = []
    for n in names:
        # What the testing folder defines is there for the tests.
        if layer[n] == "testing":
            continue
        for s in sorted(defined[n]):
            if s.startswith("relo__") and (n, s) not in used and s not in keep:
                unused.append("  %s: %s" % (n, s))
    if unused:
        out.append("relo__ symbols no other object uses (make them static, or remove them if dead):")
        out.extend(unused)
        count += len(unused)

    n_edges = sum(len(v) for v in calls.values())
    n_syms = sum(len(s) for v in calls.values() for s in v.values())
    present = [l for l in order if any(layer[n] == l for n in names)]
    summary = "%d files, %d calls between files (%d symbols), %d layers (%s)" % (
        len(names), n_edges, n_syms, len(present), " ".join(present) or "none")
    return out, count, summary


def main(argv):
    ap = argparse.ArgumentParser(description="The layer rule on calls, from the objects' symbol tables.")
    ap.add_argument("objdirs", nargs="+", metavar="OBJDIR")
    ap.add_argument("--order", default=DEFAULT_ORDER, help="layers, bottom first, comma-separated")
    ap.add_argument("--nm", default=os.environ.get("NM") or "nm", help="the nm to run (default $NM or nm)")
    ap.add_argument("--flat-map", metavar="FILE", help="'path layer' lines for files in no folder")
    ap.add_argument("--keep", metavar="SYMBOL", action="append", default=[],
                    help="a relo__ symbol this build may leave without a user (repeatable)")
    ap.add_argument("--src", metavar="DIR", help="the sources: objects whose source DIR/name is gone are skipped")
    args = ap.parse_args(argv)
    order = [l for l in args.order.split(",") if l]
    try:
        flat_map = read_map(args.flat_map) if args.flat_map else {}
        objects, stale = find_objects(args.objdirs, args.src)
        defined, undefined = read_objects(args.nm, objects)
    except (ReadError, OSError) as e:
        print("check_calls: %s" % e, file=sys.stderr)
        return 2
    lines, count, summary = check(defined, undefined, order, flat_map, set(args.keep))
    if stale:
        summary += " (%d stale objects skipped)" % len(stale)
    if count:
        print("\n".join(lines))
        print("check_calls: %d violations; %s" % (count, summary))
        return 1
    print("check_calls: no upward call, no cycle, no unused relo__ symbol; %s" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
