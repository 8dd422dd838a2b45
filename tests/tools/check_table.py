#!/usr/bin/env python3
"""relo-replay --table against relo-replay's own per-trace reports.

usage: check_table.py RELO_REPLAY TRACE_OR_FOLDER...

Runs `--table json` and `--table md` over the arguments, and the per-trace
reports the table summarises (`--json --fit` under each placement, with both
PyTorch baselines), then checks, trace by trace, that every figure of the
table is the one the report gives: fit ratios, peak reserved over live,
time-averaged reserved over live, device allocations per 1,000 events and
bytes moved on the unlimited device, and the granule floor; and that each
Markdown cell is its JSON value as the table rounds it.
"""
import json
import math
import os
import subprocess
import sys


def run(replay, *args):
    out = subprocess.run([replay, "--quiet", *args], check=False, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("FAIL: relo-replay %s exited %d" % (" ".join(args), out.returncode))
    return out.stdout


def traces_of(args):
    paths = []
    for a in args:
        if os.path.isdir(a):
            names = sorted(n for n in os.listdir(a) if n.endswith(".trace") or n.endswith(".trace.gz"))
            paths.extend(os.path.join(a, n) for n in names)
        else:
            paths.append(a)
    return paths


def per_1k(v):
    return "%.0f" % v if v >= 99.95 else "%.1f" % v if v >= 9.995 else "%.2f" % v


def human(b):
    names = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, i = float(b), 0
    while v >= 1024 and i < 4:
        v /= 1024
        i += 1
    if i == 0:
        return "%d B" % b
    return ("%.2f %s" if v < 10 else "%.1f %s" if v < 100 else "%.0f %s") % (v, names[i])


def main():
    replay, args = sys.argv[1], sys.argv[2:]
    paths = traces_of(args)
    table = json.loads(run(replay, "--table", "json", *args))
    md = run(replay, "--table", "md", *args).splitlines()
    packed = json.loads(run(replay, "--json", "--fit", "--baseline", "pytorch", "--baseline", "pytorch-expandable",
                            *paths))["traces"]
    adaptive = json.loads(run(replay, "--json", "--fit", "--placement", "adaptive", *paths))["traces"]
    rows = table["traces"]
    granule = table["table"]["granule"]
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append("%s: the table says %r, the report %r" % (what, got, want))

    expect("trace count", len(rows), len(paths))
    expect("Markdown line count", len(md), len(paths) + 2)
    for i, (row, d, s) in enumerate(zip(rows, packed, adaptive)):
        name = d["trace"]
        expect("%s: name" % name, row["trace"], name)
        expect("%s: peak live" % name, row["peak_live_bytes"], d["trace_peak_live_bytes"])
        live = d["trace_peak_live_bytes"]
        expect("%s: floor" % name, "%.6f" % row["floor_ratio"],
               "%.6f" % (math.ceil(live / granule) * granule / live))
        runs = row["runs"]
        expect("%s: packed fit" % name, runs["packed"]["fit_ratio"], d["fit"]["ratio"])
        expect("%s: adaptive fit" % name, runs["adaptive"]["fit_ratio"], s["fit"]["ratio"])
        for b in d["baselines"]:
            expect("%s: %s fit" % (name, b["name"]), runs[b["name"]]["fit_ratio"], b["fit"]["ratio"])
            expect("%s: %s allocs per 1k" % (name, b["name"]), runs[b["name"]]["device_allocs_per_1k_events"],
                   b["device_allocs_per_1k_events"])
        expect("%s: unlimited reserved / live" % name, runs["packed"]["reserved_ratio"], d["reserved_ratio"])
        expect("%s: time-avg" % name, runs["packed"]["time_avg_reserved_ratio"], d["time_avg_reserved_ratio"])
        expect("%s: allocs per 1k" % name, runs["packed"]["device_allocs_per_1k_events"],
               d["backend_allocs_per_1k_events"])
        expect("%s: bytes moved" % name, runs["packed"]["bytes_moved"], d["bytes_moved"])
        cells = [c.strip() for c in md[i + 2].strip("|").split("|")]
        expect("%s: Markdown cell count" % name, len(cells), 12)
        if len(cells) != 12:
            continue
        expect("%s: Markdown name" % name, cells[0], name)
        expect("%s: Markdown peak live" % name, cells[1], human(live))
        expect("%s: Markdown bytes moved" % name, cells[11], human(d["bytes_moved"]))
        figures = [(2, d["fit"]["ratio"], 3), (3, s["fit"]["ratio"], 3), (4, runs["pytorch"]["fit_ratio"], 3),
                   (5, runs["pytorch-expandable"]["fit_ratio"], 3), (6, row["floor_ratio"], 3),
                   (7, d["reserved_ratio"], 3), (8, d["time_avg_reserved_ratio"], 3),
                   (9, d["backend_allocs_per_1k_events"], None),
                   (10, runs["pytorch"]["device_allocs_per_1k_events"], None)]
        for col, value, decimals in figures:
            # The cell is the value rounded: to 3 decimals, or to 3
            # significant digits for calls per 1,000 events.
            want = "%.*f" % (decimals, value) if decimals else per_1k(value)
            places = len(want.split(".")[1]) if "." in want else 0
            ok = cells[col].count(".") == want.count(".") and len(cells[col]) - cells[col].find(".") - 1 == places \
                if "." in want else cells[col].isdigit()
            try:
                close = abs(float(cells[col]) - value) <= 0.5 * 10 ** -places + 1e-6
            except ValueError:
                close = False
            if not (ok and close):
                failures.append("%s: Markdown column %d is %s, the report's value %r" % (name, col + 1, cells[col], value))
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("ok   --table matches the per-trace reports on %d traces" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
