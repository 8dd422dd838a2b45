#!/usr/bin/env python3
"""Checks a relo-replay timeline SVG for what a reader must be able to trust.

Usage: check_svg.py FILE.svg [--failed] [--last-event N] [--max-lines K]

- every series is drawn in steps (path commands M, H, V, Z only: no diagonal);
- live is never drawn above reserved at any x;
- the legend lies above the plot, and no label's ground overlaps another;
- at most K faint relocation lines cross the plot (default 12);
- --failed: the title says the replay FAILED and why is written;
- --last-event N: no x tick lies past event N (the axis ends with the data).
Exits 1 with one line per problem.
"""
import re
import sys
import xml.etree.ElementTree as ET

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


def main():
    args = sys.argv[1:]
    path = args.pop(0)
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
    for p in problems:
        print("%s: %s" % (path, p))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
