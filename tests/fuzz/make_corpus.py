#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_ops into tests/fuzz/corpus/ops/.

Each seed is a small script in fuzz_ops' input language: four configuration
bytes, then operations (one opcode byte and its argument bytes; see
fuzz_ops.c, whose OPS table the codes below must follow). The seeds walk the
paths a fuzzer would find only slowly: growth through page sizes, the full
arena, relocation with and without faults, capture with guards, modes, and
passes the harness drives, with the second thread held inside them.

Run from anywhere: python3 tests/fuzz/make_corpus.py
"""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "ops")

# Opcodes: indexes into OPS[] of fuzz_ops.c.
RESERVE, RELEASE, RETAIN, WRITE, RESOLVE, RECLAIM = 0, 2, 4, 5, 6, 7
PUSH, POP, PREPARE, BEGIN, END, GRAPH_DESTROY = 8, 9, 10, 11, 12, 13
FAULTS, BAD_HANDLE, RELOCATE, STREAM_CYCLE, MANY = 14, 15, 16, 17, 18
PASS_BEGIN, PASS_SKIP, PASS_OWN_COPY, PASS_COPY, PASS_END = 19, 21, 22, 23, 24
PIN, UNPIN, READ, JOB, JOIN, SET_FINISH, ARM_HOOK = 25, 26, 27, 28, 30, 31, 32
NOPS = 33

# Jobs of the second thread (op_job's kind byte), its gate bit, and the
# gates of relo_pass_copy on the second thread (op_pass_copy's byte).
J_READ, J_WRITE, J_PIN, J_UNPIN, J_RELEASE, J_RESOLVE, J_CHECK = range(7)
GATE = 0x10
ON_HELPER, AT_WAIT_DEVICE, AT_COPY, AT_WAIT_COPIES = 1, 2, 4, 6
# op_pass_end's byte: outcome, copy what the runtime did not, try a bad one.
LANDED, ABANDONED, UNKNOWN, COPY_REST, BAD_FIRST = 3, 1, 2, 4, 8
# op_arm_hook's kinds.
HOOK_PIN, HOOK_READ, HOOK_RELEASE, HOOK_OTHER_CHECK = range(4)

# Size kinds of pick_size(): kind byte, then a 16-bit value r.
K_ZERO, K_TINY, K_SMALL_EDGE, K_HOST_PAGE, K_FLOOR_EDGE, K_MIB = 0, 1, 2, 3, 4, 5
K_SMALL_PAGE, K_MAX_EDGE, K_TOO_BIG, K_NEAR_2_64, K_HUGE = 6, 7, 8, 9, 10
K_SMALL, K_LADDER = 12, 14

# Configuration: max page index (8, 16, 32, 2, 3+, 12, 24, 1 MiB), capacity in
# MiB (< 16 = unknown), alignment index (64, 32, 1, 8, 50, 256, 4096, 10),
# flags (1 exclusive placement, 2 relocation off, 4 packed placement (else
# adaptive), 8 pass bound).


def config(page=2, cap_mib=0, align=1, flags=0):
    return bytes([page, cap_mib, align, flags])


def reserve(stream, kind, r=0, seed=0x5A):
    return bytes([RESERVE, stream, kind]) + struct.pack("<H", r) + bytes([seed])


def mib(stream, n, seed=1):
    """Reserve about n MiB (n in 1..12): kind K_MIB with r = n - 1."""
    return reserve(stream, K_MIB, n - 1, seed)


def op(code, *args):
    return bytes([code, *args])


def faults(refuse_copies=False, fail_wait=False, fail_device=False, above=0, after=False):
    bits = (1 if refuse_copies else 0) | (2 if fail_wait else 0) | (4 if fail_device else 0)
    bits |= 8 if after else 0
    return op(FAULTS, bits, above)


def job(kind, k=0, g=0, seed=0x33):
    return op(JOB, kind, k, g, seed)


def grown(stream=0):
    """A 1 MiB allocation left on an outdated page by a 10 MiB one: the
    source of the next pass (index 0 of the live table)."""
    return mib(stream, 1, 7) + mib(stream, 10, 8)


def passes():
    s = {}
    # A pass the runtime copies itself, ended with each outcome.
    s["pass_own_copy_landed"] = config() + grown() + op(PASS_BEGIN, 0, 0) + op(PASS_OWN_COPY, 0x80) \
        + op(PASS_END, LANDED) + op(RECLAIM, 0)
    s["pass_copy_rest"] = config() + grown() + mib(0, 2) + op(PASS_BEGIN, 0, 0) + op(PASS_OWN_COPY, 0) \
        + op(PASS_END, LANDED | COPY_REST | BAD_FIRST)
    s["pass_abandoned"] = config() + grown() + op(PASS_BEGIN, 0, 0) + op(PASS_OWN_COPY, 0x80) \
        + op(PASS_END, ABANDONED)
    s["pass_unknown"] = config() + grown() + op(PASS_BEGIN, 0, 0) + op(PASS_END, UNKNOWN) + op(RELEASE, 0) \
        + op(STREAM_CYCLE, 0)
    s["pass_skip_bounded"] = config() + grown() + mib(0, 2) + mib(0, 3) + op(PASS_BEGIN, 1, 1 << 3) \
        + op(PASS_SKIP, 0) + op(PASS_SKIP, 5) + op(PASS_COPY, 0) + op(PASS_COPY, 0) + op(PASS_END, LANDED)
    s["pass_packed"] = config(flags=4) + b"".join(mib(0, 1 + i % 3, i) for i in range(10)) + op(RELEASE, 1) \
        + op(RELEASE, 3) + op(RELEASE, 5) + op(PASS_BEGIN, 0, 0) + op(PASS_COPY, 0) + op(PASS_END, LANDED)
    s["pass_refused"] = config(flags=1) + grown() + op(PASS_BEGIN, 0, 0) + op(PREPARE, 0) \
        + op(BEGIN, 0) + op(PASS_BEGIN, 0, 0) + op(END, 0)
    # The opener touches its sources while the pass is open: each skips.
    s["pass_opener_touches"] = config() + grown() + mib(0, 1, 9) + mib(0, 12) + op(PASS_BEGIN, 0, 0) \
        + op(READ, 0, 0) + op(WRITE, 2, 5) + op(PIN, 0, 0) + op(RESOLVE, 1, 0) + op(RELEASE, 0) \
        + op(PASS_OWN_COPY, 0x80) + op(PASS_END, LANDED) + op(UNPIN, 0) + op(UNPIN, 0)
    s["pass_pressure"] = config(cap_mib=40) + grown() + mib(1, 1) + mib(1, 10) + op(PASS_BEGIN, 0, 0) \
        + mib(0, 12) + op(RECLAIM, 0) + op(PREPARE, 1) + op(STREAM_CYCLE, 1) + op(PASS_END, LANDED | COPY_REST)
    # relo_pass_copy on the second thread, held at each gate while this
    # thread reads, writes, pins, releases and tries to end the pass.
    for name, gate in (("wait_device", AT_WAIT_DEVICE), ("copy", AT_COPY), ("wait_copies", AT_WAIT_COPIES)):
        s["pass_copy_held_" + name] = config() + grown() + mib(0, 1, 9) + mib(0, 11) \
            + op(PASS_BEGIN, 0, 0) + op(PASS_COPY, ON_HELPER | gate) + op(READ, 0, 1) + op(WRITE, 1, 4) \
            + op(PASS_END, LANDED) + op(PIN, 0, 2) + op(JOIN, 0) + op(PASS_END, LANDED)
    s["pass_copy_held_release"] = config() + grown() + op(PASS_BEGIN, 0, 0) \
        + op(PASS_COPY, ON_HELPER | AT_WAIT_COPIES) + op(RELEASE, 0) + mib(0, 1, 3) + op(PASS_END, LANDED)
    s["pass_copy_finishes"] = config() + op(SET_FINISH, 0, 1) + op(SET_FINISH, 1, 1) + grown() \
        + op(ARM_HOOK, HOOK_PIN, 0) + op(PASS_BEGIN, 0, 0) + op(PASS_COPY, ON_HELPER) + op(PASS_END, LANDED)
    s["pass_copy_finish_fails"] = config() + op(SET_FINISH, 0, 2) + grown() + op(PASS_BEGIN, 0, 0) \
        + op(PASS_COPY, 0) + op(PASS_END, LANDED)
    s["pass_copy_faults"] = config() + grown() + faults(fail_wait=True) + op(PASS_BEGIN, 0, 0) \
        + op(PASS_COPY, ON_HELPER | AT_COPY) + op(PASS_END, LANDED) + faults() + op(RELEASE, 0)
    # The second thread touches sources of the open pass: a pin or write
    # waits for the end, a read or resolve skips the move.
    s["pass_helper_pin_waits"] = config() + grown() + op(PASS_BEGIN, 0, 0) + job(J_PIN, 0) \
        + op(PASS_OWN_COPY, 0x80) + op(PASS_END, LANDED) + job(J_UNPIN, 1)
    s["pass_helper_write_waits"] = config() + grown() + op(PASS_BEGIN, 0, 0) + job(J_WRITE, 0, GATE) \
        + op(PASS_COPY, 0) + op(PASS_END, LANDED) + op(JOIN, 0)
    s["pass_helper_read_held"] = config() + grown() + op(PASS_BEGIN, 0, 0) + job(J_READ, 0, GATE) \
        + op(PASS_OWN_COPY, 0x80) + op(PASS_END, LANDED) + mib(0, 1, 11) + mib(0, 1, 12) + op(JOIN, 0)
    s["pass_helper_others"] = config() + grown() + mib(0, 2, 5) + op(PASS_BEGIN, 0, 0) + job(J_CHECK) \
        + job(J_RESOLVE, 0) + job(J_RELEASE, 1) + job(J_CHECK) + op(PASS_COPY, 0) + op(PASS_END, LANDED)
    s["helper_write_held"] = config() + mib(0, 1) + job(J_WRITE, 0, GATE, 0x44) + op(PASS_BEGIN, 0, 0) \
        + mib(0, 10) + op(RECLAIM, 0) + op(JOIN, 0) + op(PASS_END, LANDED)
    # Checks inside relo's own passes: the backend's wait, finishes, the
    # second thread, and what a finish may do.
    s["own_pass_hooks"] = config() + grown() + op(ARM_HOOK, HOOK_OTHER_CHECK, 0) + op(RECLAIM, 0) \
        + grown() + op(ARM_HOOK, HOOK_RELEASE, 0) + op(RECLAIM, 0) + grown() + op(ARM_HOOK, HOOK_READ, 1) \
        + op(RECLAIM, 0)
    s["own_pass_finishes"] = config() + op(SET_FINISH, 0, 1) + op(SET_FINISH, 1, 1) + grown() \
        + op(ARM_HOOK, HOOK_PIN, 0) + op(RECLAIM, 0) + op(SET_FINISH, 1, 2) + grown(1) + op(RECLAIM, 1)
    s["pins_stay"] = config() + grown() + op(PIN, 0, 0) + op(RECLAIM, 0) + op(PASS_BEGIN, 0, 0) \
        + op(PASS_END, LANDED) + op(UNPIN, 0) + op(UNPIN, 0) + op(RECLAIM, 0)
    return s


def seeds():
    s = passes()
    s["empty"] = config()
    s["one_small"] = config() + reserve(0, K_TINY, 99) + op(RELEASE, 0)
    s["sizes_edges"] = config() + b"".join(
        reserve(i % 2, k, 7) for k in (K_ZERO, K_TINY, K_SMALL_EDGE, K_HOST_PAGE, K_FLOOR_EDGE,
                                       K_SMALL_PAGE, K_MAX_EDGE, K_TOO_BIG, K_NEAR_2_64, K_HUGE)
        for i in range(1))
    # Acceptance 16/17/25: grow, then reclaim moves the 1 MiB.
    s["grow_reclaim"] = config() + mib(0, 1, 7) + mib(0, 10, 8) + op(RECLAIM, 0) + op(RESOLVE, 0, 0)
    s["grow_release"] = config() + mib(0, 1) + mib(0, 10) + op(RELEASE, 0) + mib(0, 1)
    # Acceptance 26/27: faults during relocation.
    s["refuse_copies"] = config() + mib(0, 1) + mib(0, 10) + faults(refuse_copies=True) + op(RECLAIM, 0)
    s["fail_wait"] = config() + mib(0, 1) + mib(0, 10) + faults(fail_wait=True) + op(RECLAIM, 0) \
        + faults() + op(RECLAIM, 1) + mib(1, 2)
    s["fail_device"] = config() + mib(0, 1) + mib(0, 10) + faults(fail_device=True) + op(RECLAIM, 0)
    s["refuse_above"] = config() + mib(0, 1) + faults(above=4) + mib(0, 10) + mib(0, 1)
    s["refuse_after"] = config() + mib(0, 1) + faults(after=True) + mib(0, 3) + mib(0, 5) + mib(1, 7)
    # Acceptance 28: capacity 24 MiB, pressure relocation.
    s["pressure"] = config(page=2, cap_mib=24) + mib(0, 1) + mib(0, 10) + mib(0, 1) + mib(0, 2)
    s["pressure_two_streams"] = config(page=2, cap_mib=40) + mib(0, 1) + mib(1, 1) + mib(0, 10) \
        + mib(1, 10) + mib(0, 3) + op(RECLAIM, 1)
    # Acceptance 19: the ladder through every arena slot (max page 32 MiB).
    ladder = config(page=2, cap_mib=255)
    for k in range(15):
        ladder += reserve(0, K_LADDER, k % 8, k)
        ladder += reserve(0, K_MIB, k % 12, k)
    s["ladder"] = ladder + op(RELOCATE, 0, 2)
    s["ladder_small_page"] = config(page=5, cap_mib=200) + b"".join(
        reserve(0, K_MIB, k % 12, k) for k in range(40)) + op(RECLAIM, 0)
    # Capture (acceptance 38-44).
    s["capture_basic"] = config() + mib(0, 1) + op(PREPARE, 0) + op(BEGIN, 0) + op(RESOLVE, 0, 0) \
        + op(END, 0) + op(GRAPH_DESTROY, 0)
    s["capture_states"] = config() + op(BEGIN, 0) + op(END, 0) + op(PREPARE, 0) + op(PREPARE, 0) \
        + op(BEGIN, 0) + op(BEGIN, 0) + op(END, 0) + op(END, 0)
    s["capture_doomed"] = config() + op(PREPARE, 1) + op(BEGIN, 1) + mib(1, 1) + op(END, 1)
    s["capture_guard_reclaim"] = config() + mib(0, 1, 3) + mib(0, 1, 4) + op(PREPARE, 0) + op(BEGIN, 0) \
        + op(RESOLVE, 0, 0) + op(END, 0) + mib(0, 10) + op(RECLAIM, 0) + op(GRAPH_DESTROY, 0) \
        + op(RECLAIM, 0)
    s["capture_other_stream"] = config() + mib(0, 1) + mib(0, 10) + op(PREPARE, 1) + op(BEGIN, 1) \
        + mib(0, 3) + op(RECLAIM, 0) + op(PREPARE, 0) + op(END, 1) + mib(0, 3) + op(GRAPH_DESTROY, 0)
    s["capture_prepare_moves"] = config() + mib(0, 1) + mib(1, 2) + mib(0, 10) + mib(1, 12) \
        + op(PREPARE, 0) + op(BEGIN, 0) + op(RESOLVE, 0, 1) + op(END, 0)
    # Modes (acceptance 21-23).
    s["modes"] = config() + op(PUSH, 0, 0) + op(PUSH, 0, 0) + op(POP, 0) + reserve(0, K_SMALL, 1024) \
        + op(POP, 0) + reserve(0, K_SMALL, 1024) + op(POP, 0)
    s["dedicated"] = config() + mib(0, 1) + op(PUSH, 0, 1) + mib(0, 10) + op(RELEASE, 1) + op(POP, 0) \
        + mib(0, 1) + op(PUSH, 1, 0) + mib(1, 12) + op(POP, 1) + op(RECLAIM, 1)
    s["modes_deep"] = config() + op(PUSH, 0, 0) * 66 + op(POP, 0) * 67
    # Handles (acceptance 1-4).
    s["handles"] = config() + reserve(0, K_TINY, 3) + op(RETAIN, 0) + op(RELEASE, 0) + op(RESOLVE, 1, 0) \
        + op(RELEASE, 0) + op(BAD_HANDLE, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0) + reserve(0, K_TINY, 3) \
        + op(BAD_HANDLE, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0) + op(WRITE, 0, 9)
    # Placements, alignments.
    s["exclusive"] = config(flags=1) + b"".join(reserve(0, K_SMALL, 50 + 100 * i) for i in range(4)) \
        + op(RELEASE, 0) + op(RELEASE, 0) + reserve(0, K_SMALL, 150) + mib(0, 3) + op(RECLAIM, 0)
    s["align50"] = config(align=4) + reserve(0, K_TINY, 39) + reserve(0, K_TINY, 39) + mib(0, 1) + mib(0, 10) \
        + op(RECLAIM, 0)
    s["align1_packed"] = config(align=2, flags=4) + b"".join(mib(i % 2, 1 + i % 4) for i in range(12)) \
        + op(RELEASE, 1) + op(RELEASE, 3) + op(RELEASE, 5) + op(RECLAIM, 0)
    s["packed_bounded"] = config(flags=12) + b"".join(mib(0, 1 + i % 3) for i in range(16)) \
        + op(RELEASE, 2) + op(RELEASE, 4) + op(RELEASE, 6) + op(RECLAIM, 0) + op(RECLAIM, 0)
    s["reloc_off"] = config(flags=2) + mib(0, 1) + mib(0, 10) + op(RECLAIM, 0) + op(PREPARE, 0)
    s["small_max_page"] = config(page=7) + mib(0, 1) + reserve(0, K_MAX_EDGE, 40) + reserve(0, K_TOO_BIG, 0)
    s["page_3m_unaligned"] = config(page=4, align=6) + mib(0, 2) + reserve(0, K_MAX_EDGE, 31) + mib(0, 3)
    s["stream_cycle"] = config() + mib(1, 1) + op(STREAM_CYCLE, 1) + op(RELEASE, 0) + op(STREAM_CYCLE, 1) \
        + mib(1, 1) + op(RECLAIM, 0)
    s["many_small"] = config() + op(MANY, 7) + reserve(0, K_SMALL, 1000)[1:] + op(MANY, 7) \
        + reserve(1, K_SMALL_EDGE, 50)[1:] + op(RECLAIM, 0)
    s["relocate_reasons"] = config() + mib(0, 1) + mib(0, 4) + mib(0, 10) + op(RELOCATE, 0, 0) \
        + op(RELOCATE, 0, 1) + op(RELOCATE, 1, 2) + op(RELOCATE, 0, 3)
    # Random mixes of every operation.
    rng = random.Random(20261130)
    for i in range(10):
        body = config(rng.randrange(8), rng.choice([0, 24, 64, 128, 255]), rng.randrange(8), rng.randrange(16))
        for _ in range(rng.randrange(10, 60)):
            code = rng.randrange(NOPS)
            if code in (RESERVE, 1):
                body += reserve(rng.randrange(2), rng.choice([K_TINY, K_SMALL, K_MIB, K_MIB, K_FLOOR_EDGE,
                                                               K_LADDER, K_ZERO]),
                                rng.randrange(12), rng.randrange(256))
            else:
                body += bytes([code]) + bytes(rng.randrange(256) for _ in range(3))
        s["mix_%02d" % i] = body
    return s


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        os.remove(os.path.join(OUT, name))
    for name, data in sorted(seeds().items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(seeds()), OUT))


if __name__ == "__main__":
    main()
