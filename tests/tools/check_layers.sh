#!/bin/sh
# check_layers.sh CC ROOT — the layer rule on includes, checked on what the
# compiler sees: every file of ROOT/src lies in a layer's folder, and no
# file includes, directly or through other headers (CC -MM), a header of a
# folder above its own. A file outside the folders fails too, so a new file
# is placed in a layer on purpose. (tests/tools/check_calls.py checks the
# same rule on calls.) Exit 0 when the rule holds, 1 with
# the offending includes listed when it does not.
set -eu
CC=$1
ROOT=$2

# The layers, bottom first: a file's layer is its folder (HACKING.md and
# docs/architecture.md name the same order).
layer_of() {
    case $1 in
    base/*) echo 1 ;;
    backend/*) echo 2 ;;
    mem/*) echo 3 ;;
    pool/*) echo 4 ;;
    layout/*) echo 5 ;;
    core/*) echo 6 ;;
    pass/*) echo 7 ;;
    policy/*) echo 8 ;;
    api/*) echo 9 ;;
    testing/*) echo 10 ;;
    *) echo 0 ;;
    esac
}

cd "$ROOT"
fail=0
for f in $(cd src && find . -name '*.c' -o -name '*.h' | sed 's|^\./||' | sort); do
    mine=$(layer_of "$f")
    if [ "$mine" = 0 ]; then
        echo "src/$f is in no layer: put it in the folder of its layer (HACKING.md)"
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
