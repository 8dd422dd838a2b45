#!/usr/bin/env python3
"""Checks a relo-replay --json report for consistency.

Usage: check_replay_json.py REPORT.json

For every trace: the replay completed; its measured peak live bytes equal
the peak the reader computed and the header's peak_live_bytes (when the
header has one); peak reserved >= peak live; at every sample reserved >=
live and outdated <= reserved; there are at most 2000 samples, in event
order. Prints one line per trace; exits 1 on the first inconsistency
found in any trace.
"""
import json
import sys

MAX_SAMPLES = 2000


def check(t):
    problems = []
    name = t.get("trace", "?")
    if not t.get("ok"):
        problems.append("replay failed: %s" % t.get("error"))
        return problems
    live = t["peak_live_bytes"]
    if live != t["trace_peak_live_bytes"]:
        problems.append("peak live %d != the trace's %d" % (live, t["trace_peak_live_bytes"]))
    header = t.get("header_peak_live_bytes")
    if header is not None and live != header:
        problems.append("peak live %d != header peak_live_bytes %d" % (live, header))
    if t["peak_reserved_bytes"] < live:
        problems.append("peak reserved %d < peak live %d" % (t["peak_reserved_bytes"], live))
    if t["events_done"] != t["events"]:
        problems.append("%d of %d events replayed" % (t["events_done"], t["events"]))
    samples = t["samples"]
    if not samples:
        problems.append("no samples")
    if len(samples) > MAX_SAMPLES:
        problems.append("%d samples (at most %d)" % (len(samples), MAX_SAMPLES))
    last = -1
    for s in samples:
        if s["reserved"] < s["live"]:
            problems.append("event %d: reserved %d < live %d" % (s["event"], s["reserved"], s["live"]))
            break
        if s["outdated"] > s["reserved"]:
            problems.append("event %d: outdated %d > reserved %d" % (s["event"], s["outdated"], s["reserved"]))
            break
        if s["event"] <= last:
            problems.append("samples out of order at event %d" % s["event"])
            break
        last = s["event"]
    if samples and max(s["live"] for s in samples) != live:
        problems.append("the samples miss the live peak")
    # Memory over time: held bytes never fall below live ones, on average
    # or at the end, and nothing moves more bytes than were ever allocated
    # times the passes allowed (a ratio, never negative).
    avg = t.get("time_avg_reserved_ratio")
    if avg is None or avg < 1.0:
        problems.append("time-averaged reserved / live %s (expected >= 1)" % avg)
    if t["end_reserved_bytes"] < t["end_live_bytes"]:
        problems.append("end reserved %d < end live %d" % (t["end_reserved_bytes"], t["end_live_bytes"]))
    if t["bytes_moved_ratio"] < 0 or (t["bytes_moved"] == 0) != (t["bytes_moved_ratio"] == 0):
        problems.append("bytes_moved_ratio %s with %d bytes moved" % (t["bytes_moved_ratio"], t["bytes_moved"]))
    fit = t.get("fit")
    at_fit = t.get("at_fit")
    if fit and fit.get("capacity") is not None:
        if not at_fit or not at_fit["ok"] or at_fit["capacity"] != fit["capacity"]:
            problems.append("no completed replay at the fit capacity: %s" % at_fit)
        elif at_fit["peak_reserved_bytes"] > at_fit["capacity"] or at_fit["time_avg_reserved_ratio"] < 1.0:
            problems.append("replay at the fit capacity out of bounds: %s" % at_fit)
    elif at_fit is not None:
        problems.append("at_fit without a fit: %s" % at_fit)
    for b in t.get("baselines", []):
        if b["ok"] and b["device_allocs"] < 1:
            problems.append("baseline %s completed without a device allocation" % b["name"])
    return [name + ": " + p for p in problems]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        report = json.load(f)
    failed = False
    for t in report["traces"]:
        problems = check(t)
        if problems:
            failed = True
            for p in problems:
                print("FAIL", p)
        else:
            print("ok   %-28s live %14d  reserved/live %.3f  %4d samples  %.1f ns/event" % (
                t["trace"], t["peak_live_bytes"], t["reserved_ratio"], len(t["samples"]),
                t["ns_per_event"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
