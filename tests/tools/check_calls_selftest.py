#!/usr/bin/env python3
"""The layer check on calls (check_calls.py) on small trees built here.

Usage: check_calls_selftest.py CHECKER [CC]

Compiles a few C files laid out in folders (base/, pool/, api/, testing/)
with CC (default $CC, else cc) into a temporary folder of objects named as
CMake names them (pool/pool.c.o), then runs CHECKER on it. The clean tree
must pass; each broken tree must fail, with exactly its fault listed:
a call from base/ up to api/, a cycle between two files of pool/, a relo__
function nothing else calls, a file in no folder. An object whose source
is gone (--src) is left out. Where the compiler does link-time
optimisation, the same tree built as LTO objects gives the same result,
and an nm that cannot read the IR (llvm-nm on GCC's) is named and told
what to do. Exit 0 when every case behaves, 1 otherwise.
"""
import os
import shutil
import subprocess
import sys
import tempfile

# The clean tree: api calls pool, pool calls base and its own slot file,
# the testing folder calls what only the tests need.
CLEAN = {
    "base/util.c": """
int relo__base_add(int a, int b);
int relo__base_add(int a, int b) { return a + b; }
""",
    "pool/slot.c": """
int relo__base_add(int a, int b);
int relo__slot_count(int n);
int relo__slot_count(int n) { return relo__base_add(n, 1); }
""",
    "pool/pool.c": """
int relo__base_add(int a, int b);
int relo__slot_count(int n);
int relo__pool_take(int n);
int relo__pool_peek(void);
int relo__pool_take(int n) { return relo__base_add(relo__slot_count(n), 2); }
int relo__pool_peek(void) { return 7; }
""",
    "api/api.c": """
int relo__pool_take(int n);
int relo_take(int n);
int relo_take(int n) { return relo__pool_take(n); }
""",
    "testing/testing.c": """
int relo__pool_peek(void);
int relo__testing_peek(void);
int relo__testing_peek(void) { return relo__pool_peek(); }
""",
}

# Each broken tree: the files it adds or replaces, the lines the check must
# print, and lines it must not print (no other rule may fire).
UPWARD = {
    "base/up.c": """
int relo_take(int n);
int relo_up(int n);
int relo_up(int n) { return relo_take(n); }
""",
}
CYCLE = {
    "pool/slot.c": """
int relo__base_add(int a, int b);
int relo__pool_peek(void);
int relo__slot_count(int n);
int relo__slot_count(int n) { return relo__base_add(n, relo__pool_peek()); }
""",
}
UNUSED = {
    "pool/slot.c": """
int relo__base_add(int a, int b);
int relo__slot_count(int n);
int relo__slot_spare(int n);
int relo__slot_spare(int n) { return n * 3; }
int relo__slot_count(int n) { return relo__base_add(relo__slot_spare(n), 1); }
""",
}
NO_FOLDER = {
    "loose.c": """
int relo__base_add(int a, int b);
int relo_loose(int n);
int relo_loose(int n) { return relo__base_add(n, n); }
""",
}


def build(tree, cc, top, flags):
    """Writes tree's sources under top/src and compiles each into
    top/obj/<path>.o. Returns (src, obj)."""
    src, obj = os.path.join(top, "src"), os.path.join(top, "obj")
    for path, text in tree.items():
        s, o = os.path.join(src, path), os.path.join(obj, path + ".o")
        os.makedirs(os.path.dirname(s), exist_ok=True)
        os.makedirs(os.path.dirname(o), exist_ok=True)
        with open(s, "w") as f:
            f.write(text.lstrip())
        subprocess.run([cc, "-std=c11", "-O1", "-c", s, "-o", o] + flags, check=True)
    return src, obj


def run_check(checker, obj, *args):
    run = subprocess.run([sys.executable, checker] + list(args) + [obj], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True)
    return run.returncode, run.stdout


class Cases:
    def __init__(self, checker, cc, scratch):
        self.checker, self.cc, self.scratch = checker, cc, scratch
        self.failed = 0
        self.n = 0

    def tree(self, changes, flags=()):
        self.n += 1
        tree = dict(CLEAN)
        tree.update(changes)
        return build(tree, self.cc, os.path.join(self.scratch, "t%d" % self.n), list(flags))

    def expect(self, name, rc, out, want_rc, present=(), absent=()):
        problems = []
        if rc != want_rc:
            problems.append("exit status %d, expected %d" % (rc, want_rc))
        lines = out.splitlines()
        for p in present:
            if not any(p in line for line in lines):
                problems.append("no line holds %r" % p)
        for a in absent:
            if any(a in line for line in lines):
                problems.append("a line holds %r" % a)
        if problems:
            self.failed += 1
            print("FAIL %s: %s\n  output:\n    %s" % (name, "; ".join(problems), out.rstrip().replace("\n", "\n    ")))
        else:
            print("ok   %s" % name)


def lto_kind(cc, scratch):
    """'gcc' when cc -flto writes GCC's IR, 'llvm' when LLVM bitcode, else None."""
    probe = os.path.join(scratch, "probe.c")
    with open(probe, "w") as f:
        f.write("int relo_probe(void);\nint relo_probe(void) { return 1; }\n")
    run = subprocess.run([cc, "-flto", "-c", probe, "-o", probe + ".o"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if run.returncode != 0:
        return None
    with open(probe + ".o", "rb") as f:
        data = f.read()
    if data[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b"):
        return "llvm"
    return "gcc" if b".gnu.lto_" in data else None


def main(argv):
    if len(argv) < 1:
        print("usage: check_calls_selftest.py CHECKER [CC]", file=sys.stderr)
        return 2
    checker = argv[0]
    cc = argv[1] if len(argv) > 1 else os.environ.get("CC") or "cc"
    if not shutil.which(os.environ.get("NM") or "nm"):
        print("SKIP: no nm")
        return 77
    scratch = tempfile.mkdtemp(prefix="check_calls.")
    try:
        c = Cases(checker, cc, scratch)

        src, obj = c.tree({})
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("clean tree passes", rc, out, 0, ["5 files, 5 calls between files", "layers (base pool api testing)"])

        src, obj = c.tree(UPWARD)
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("call from base up to api fails", rc, out, 1,
                 ["upward calls", "  base/up.c -> api/api.c: relo_take"], ["cycle among", "no other object uses", "no known folder"])

        src, obj = c.tree(CYCLE)
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("two-file cycle inside pool fails", rc, out, 1,
                 ["cycle among 2 files (pool/pool.c, pool/slot.c)", "  pool/pool.c -> pool/slot.c: relo__slot_count",
                  "  pool/slot.c -> pool/pool.c: relo__pool_peek"], ["upward calls", "no other object uses", "no known folder"])

        src, obj = c.tree(UNUSED)
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("relo__ function no other file calls fails", rc, out, 1,
                 ["no other object uses", "  pool/slot.c: relo__slot_spare"], ["upward calls", "cycle among", "no known folder"])
        rc, out = run_check(checker, obj, "--src", src, "--keep", "relo__slot_spare")
        c.expect("--keep lets that one symbol be", rc, out, 0)

        src, obj = c.tree(NO_FOLDER)
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("file in no folder fails", rc, out, 1, ["no known folder", "  loose.c"], ["upward calls", "cycle among"])
        rc, out = run_check(checker, obj, "--src", src, "--flat-map", write_map(scratch, "loose.c base\n"))
        c.expect("--flat-map places a file in no folder", rc, out, 0, ["6 files"])

        # The object of a moved file stays in a build folder: --src leaves
        # it out, and without --src it counts.
        src, obj = c.tree(UPWARD)
        os.remove(os.path.join(src, "base/up.c"))
        rc, out = run_check(checker, obj, "--src", src)
        c.expect("object whose source is gone is left out", rc, out, 0, ["1 stale objects skipped"])
        rc, out = run_check(checker, obj)
        c.expect("without --src it is checked", rc, out, 1, ["  base/up.c -> api/api.c: relo_take"])

        kind = lto_kind(cc, scratch)
        if kind == "gcc":
            builds = (("fat GCC", ["-flto", "-ffat-lto-objects"]), ("IR-only GCC", ["-flto", "-fno-fat-lto-objects"]))
        elif kind == "llvm":
            builds = (("LLVM bitcode", ["-flto"]),)
        else:
            builds = ()
            print("skip LTO objects (%s -flto makes none)" % cc)
        for name, flags in builds:
            src, obj = c.tree(CYCLE, flags)
            rc, out = run_check(checker, obj, "--src", src)
            if rc == 2 and "-DRELO_LTO=OFF" in out:
                print("ok   %s LTO objects: this nm cannot read them, and the check says what to do" % name)
                continue
            c.expect("%s LTO objects give the same result" % name, rc, out, 1,
                     ["cycle among 2 files (pool/pool.c, pool/slot.c)"])
        if kind == "gcc":
            # The last tree holds GCC's IR only; llvm-nm cannot read it.
            llvm_nm = shutil.which("llvm-nm")
            if llvm_nm:
                rc, out = run_check(checker, obj, "--src", src, "--nm", llvm_nm)
                c.expect("an nm that cannot read GCC's IR is named, with what to do", rc, out, 2,
                         ["read no symbols", "-DRELO_LTO=OFF", "--nm gcc-nm"])
            else:
                print("skip an nm that cannot read GCC's IR (no llvm-nm)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("%d failed" % c.failed)
    return 1 if c.failed else 0


def write_map(scratch, text):
    path = os.path.join(scratch, "flat.map")
    with open(path, "w") as f:
        f.write(text)
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
