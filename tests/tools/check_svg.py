#!/usr/bin/env python3
"""Checks a relo-replay timeline SVG for what a reader must be able to trust.

Usage: check_svg.py FILE.svg [--failed] [--last-event N] [--max-lines K]
                    [--verdict RELO_REPLAY ARGS... TRACE]

- every series is drawn in steps (path commands M, H, V, Z only: no diagonal);
- live is never drawn above reserved at any x;
- the legend lies above the plot, and no label's ground overlaps another;
- at most K faint relocation lines cross the plot (default 12);
- --failed: the title says the replay FAILED and why is written;
- --last-event N: no x tick lies past event N (the axis ends with the data).
- --verdict: the rest of the line is the relo-replay command that drew the
  picture (without --svg); the verdict's table says, for relo and each
  baseline, what `relo-replay --json` says for that command: fit capacity
  and ratio, completed or the event it ran out of memory at, and peak,
  time-averaged and end holding, bytes moved and device allocations per
  1,000 events (for one that ran out of memory, those of its own run on its
  fit capacity, asked of relo-replay --json --capacity FIT).
Exits 1 with one line per problem.
"""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from figures import bytes_match, number_match

NS = "{http://www.w3.org/2000/svg}"
LIVE = "#fd8d3c"
RESERVED = "#9ecae1"


def segments(d):
    """Horizontal runs (x0, x1, y) of a path made of M/H/V/Z commands."""
    runs, x, y = [], 0.0, 0.0
    for cmd, args in re.findall(r"([A-Za-z])([^A-Za-z]*)", d):
        nums = [float(v) for v in re.findall(r"-?[0-9.]+", args)]
        if cmd == "M":
            x, y = nums[0], nums[1]
        elif cmd == "H":
            runs.append((x, nums[0], y))
            x = nums[0]
        elif cmd == "V":
            y = nums[0]
        elif cmd == "Z":
            pass
        else:
            raise ValueError("path command %s is not a step" % cmd)
    return runs


def value_at(runs, x):
    for a, b, y in runs:
        if a <= x <= b and b > a:
            return y
    return None


def replay_json(cmd):
    p = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
    if not p.stdout.strip():
        raise RuntimeError("%s printed no JSON (%s)" % (" ".join(cmd), p.stderr.strip()))
    return json.loads(p.stdout)["traces"][0]


def expected_rows(cmd):
    """What the verdict's rows must say, from relo-replay --json."""
    tool, trace = cmd[0], cmd[-1]
    j = replay_json(cmd)
    rows = []
    fit = j["fit"]
    at_fit = j["at_fit"]
    relo = {"name": "relo " + j["placement"], "fit": fit, "ok": j["ok"], "failed_event": j["failed_event"],
            "status": j["status"], "figures": None}
    if j["ok"]:
        relo["figures"] = (j["peak_reserved_bytes"], j["time_avg_reserved_ratio"], j["end_reserved_bytes"],
                           j["bytes_moved"], j["backend_allocs_per_1k_events"])
    elif at_fit and at_fit["ok"]:
        relo["figures"] = (at_fit["peak_reserved_bytes"], at_fit["time_avg_reserved_ratio"],
                           at_fit["end_reserved_bytes"], at_fit["bytes_moved"], at_fit["backend_allocs_per_1k_events"])
    rows.append(relo)
    for b in j["baselines"]:
        row = {"name": b["name"], "fit": b["fit"], "ok": b["ok"], "failed_event": b["failed_event"],
               "status": b["status"], "figures": None}
        run = b if b["ok"] else None
        if not b["ok"] and b["fit"] and b["fit"]["capacity"]:
            run = replay_json([tool, "--capacity", str(b["fit"]["capacity"]), "--baseline", b["name"], trace])
            run = run["baselines"][0]
        if run and run["ok"]:
            row["figures"] = (run["peak_reserved_bytes"], run["time_avg_reserved_ratio"], run["end_reserved_bytes"],
                              0, run["device_allocs_per_1k_events"])
        rows.append(row)
    return rows, j


def check_verdict(root, cmd, problems):
    rows, j = expected_rows(cmd)
    drawn = {}
    for g in root.iter(NS + "g"):
        m = re.fullmatch(r"verdict-row-([0-9]+)", g.get("id") or "")
        if m:
            drawn[int(m.group(1))] = {re.search(r"k-(\w+)", t.get("class")).group(1): "".join(t.itertext())
                                      for t in g.iter(NS + "text")}
    if len(drawn) != len(rows):
        problems.append("the verdict has %d rows, relo-replay --json %d allocators" % (len(drawn), len(rows)))
        return
    for i, want in enumerate(rows):
        got = drawn[i]
        say = lambda what: problems.append("verdict row %d (%s): %s" % (i, want["name"], what))
        if got.get("name") != want["name"]:
            say("names %r" % got.get("name"))
        f = want["fit"]
        if f is not None:
            cell = got.get("fit", "")
            if f.get("capacity") is None:
                if cell != "not found":
                    say("fit %r where none was found" % cell)
            else:
                m = re.fullmatch(r"(.+) \(([0-9.]+)\)", cell)
                if not m or not bytes_match(m.group(1), f["capacity"]) or not number_match(m.group(2), f["ratio"], 3):
                    say("fit %r, expected %d bytes, ratio %.6f" % (cell, f["capacity"], f["ratio"]))
        elif "fit" in got:
            say("shows a fit %r without --fit" % got["fit"])
        outcome = got.get("outcome", "")
        if want["ok"]:
            if outcome != "completed":
                say("says %r of a run that completed" % outcome)
        else:
            oom = want["status"] in ("RELO_ERR_OUT_OF_MEMORY", "out_of_memory")
            m = re.match(r"(out of memory|failed) at event ([0-9,]+)", outcome)
            if not m or int(m.group(2).replace(",", "")) != want["failed_event"] + 1 or (m.group(1) == "out of memory") != oom:
                say("says %r; relo-replay --json: %s at event %d" % (outcome, want["status"], want["failed_event"] + 1))
        fig = want["figures"]
        keys = ("peak", "avg", "end", "moved", "allocs")
        if fig is None:
            if any(got.get(k) != "-" for k in keys):
                say("shows figures, but no run of it completed")
            continue
        peak, avg, end, moved, allocs = fig
        if not bytes_match(got.get("peak", ""), peak):
            say("peak held %r, expected %d bytes" % (got.get("peak"), peak))
        if not number_match(got.get("avg", ""), avg, 3):
            say("time-averaged held / live %r, expected %.6f" % (got.get("avg"), avg))
        if not bytes_match(got.get("end", ""), end):
            say("end held %r, expected %d bytes" % (got.get("end"), end))
        if i == 0 and not bytes_match(got.get("moved", ""), moved):
            say("bytes moved %r, expected %d" % (got.get("moved"), moved))
        if i > 0 and got.get("moved") != "never":
            say("a model that never moves shows %r moved" % got.get("moved"))
        if not number_match(got.get("allocs", ""), allocs, 2):
            say("device allocations per 1,000 events %r, expected %.3f" % (got.get("allocs"), allocs))


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    verdict_cmd = None
    if "--verdict" in args:
        k = args.index("--verdict")
        verdict_cmd = args[k + 1:]
        args = args[:k]
    failed = "--failed" in args
    last = int(args[args.index("--last-event") + 1]) if "--last-event" in args else None
    max_lines = int(args[args.index("--max-lines") + 1]) if "--max-lines" in args else 12
    root = ET.parse(path).getroot()
    problems = []
    paths = {}
    for p in root.iter(NS + "path"):
        try:
            paths.setdefault(p.get("fill"), []).append(segments(p.get("d")))
        except ValueError as e:
            problems.append(str(e))
    live, reserved = (paths.get(LIVE) or [[]])[0], (paths.get(RESERVED) or [[]])[0]
    if not live or not reserved:
        problems.append("no live or reserved area")
    for a, b, y in live:
        if b <= a:
            continue
        ry = value_at(reserved, (a + b) / 2)
        if ry is not None and y < ry - 0.05:  # SVG y grows downwards
            problems.append("live drawn above reserved at x %.1f" % ((a + b) / 2))
            break
    plot = [r for r in root.iter(NS + "rect") if r.get("stroke") == "#888"]
    top = float(plot[0].get("y")) if plot else 0
    right = float(plot[0].get("x")) + float(plot[0].get("width")) if plot else 0
    for t in root.iter(NS + "text"):
        if t.get("class") == "legend" and float(t.get("y")) >= top:
            problems.append("legend entry '%s' inside the plot" % t.text)
    grounds = [r for r in root.iter(NS + "rect") if r.get("rx") == "3"]
    boxes = [(float(r.get("x")), float(r.get("y")), float(r.get("x")) + float(r.get("width")),
              float(r.get("y")) + float(r.get("height"))) for r in grounds]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                problems.append("two labels overlap")
    dashed = [l for l in root.iter(NS + "line") if l.get("stroke-dasharray") == "3 3"]
    if len(dashed) > max_lines:
        problems.append("%d relocation lines cross the plot (at most %d)" % (len(dashed), max_lines))
    title = "".join(next(t for t in root.iter(NS + "text") if t.get("class") == "title").itertext())
    if failed and "FAILED" not in title:
        problems.append("a failed replay's title does not say so: %r" % title)
    if failed and not any((t.text or "").startswith("failed: ") for t in root.iter(NS + "text")):
        problems.append("a failed replay does not say why")
    if not failed and "FAILED" in title:
        problems.append("a completed replay's title says FAILED")
    if last is not None:
        ticks = [float(t.text) for t in root.iter(NS + "text")
                 if t.get("class") == "tick" and t.get("text-anchor") == "middle"]
        if ticks and max(ticks) > last:
            problems.append("x axis runs to event %g past the data's last event %d" % (max(ticks), last))
        xs = [b for runs in paths.values() for run in runs for (_, b, _) in run]
        if xs and max(xs) > right + 2:
            problems.append("data drawn past the plot's right edge")
    if verdict_cmd:
        check_verdict(root, verdict_cmd, problems)
    for p in problems:
        print("%s: %s" % (path, p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
