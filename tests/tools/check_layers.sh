#!/bin/sh
# check_layers.sh CC ROOT — the layer rule of docs/architecture.md, checked
# on what the compiler sees: every file of ROOT/src lies in a layer, and no
# file includes, directly or through other headers (CC -MM), a header of a
# layer above its own. A file the table does not name fails too, so a new
# file is placed in a layer on purpose. Exit 0 when the rule holds, 1 with
# the offending includes listed when it does not.
set -eu
CC=$1
ROOT=$2

# The layers, bottom first (docs/architecture.md keeps the same table).
layer_of() {
    case $1 in
    util.h | hostmem.h | hostmem.c | lock.h | lock.c | reason.h | status.c | version.c | \
        releaser.h | releaser.c | backend/*) echo 1 ;;
    page.h | slab.c | handle.h | handle.c | free_tree.c | \
        free_index.h | free_index.c) echo 2 ;;
    pool.h | pool.c | occupancy.h | occupancy.c | sliced_pool.c | unsliced_pool.c | arena.h | \
        arena.c) echo 3 ;;
    layout.h | layout_adaptive.c | layout_dense.c | layout_buckets.c) echo 4 ;;
    relocation.h | relocation.c | compaction.c | slide.c | trim.c | \
        runtime_pass.c | steps.c | \
        stream.h | stream.c | device.h | device.c | capture.h | capture.c | \
        stats.h | stats.c | log.h | log.c | check.c | testing.h | testing.c) echo 5 ;;
    *) echo 0 ;;
    esac
}

cd "$ROOT"
fail=0
for f in $(cd src && find . -name '*.c' -o -name '*.h' | sed 's|^\./||' | sort); do
    mine=$(layer_of "$f")
    if [ "$mine" = 0 ]; then
        echo "src/$f is in no layer: place it in tests/tools/check_layers.sh and docs/architecture.md"
        fail=1
        continue
    fi
    # What the compiler reads for this file: the file itself first, then
    # every header, transitively. Headers are checked as a unit of their own.
    deps=$("$CC" -MM -MG -Iinclude -Isrc -Isrc/backend -x c "src/$f" 2>/dev/null | tr -d '\\' | tr ' ' '\n' |
        sed -n 's|^src/||p') || {
        echo "src/$f: $CC -MM failed"
        fail=1
        continue
    }
    for d in $deps; do
        [ "$d" = "$f" ] && continue
        theirs=$(layer_of "$d")
        if [ "$theirs" = 0 ] || [ "$theirs" -gt "$mine" ]; then
            echo "src/$f (layer $mine) includes src/$d (layer $theirs)"
            fail=1
        fi
    done
done
[ "$fail" = 0 ] && echo "every file includes only its own layer and the layers below"
exit "$fail"
