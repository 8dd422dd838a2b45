#!/bin/sh
# format.sh [--check] [FILE...] — relo's C sources in the style of the
# repository's .clang-format. Without FILE, every .c and .h file of src,
# include, tools, tests, bench and examples (tracked files in a git
# checkout; files found on disk otherwise). Without --check, rewrites the
# files that differ and names them; with --check, rewrites nothing and
# exits 1 naming the files that differ. Exit 0 when every file is in
# style, 2 when clang-format is missing. CLANG_FORMAT names the program
# (default clang-format); other major versions may place a few lines
# differently from the one HACKING.md names.
set -eu

usage() {
    echo "usage: scripts/format.sh [--check] [FILE...]" >&2
    exit 2
}

check=0
case ${1:-} in
--check) check=1; shift ;;
-h | --help) usage ;;
-*) usage ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    echo "format.sh: $CLANG_FORMAT not found: install clang-format or set CLANG_FORMAT" >&2
    exit 2
fi

if [ ! -f "$ROOT/.clang-format" ]; then
    echo "format.sh: $ROOT/.clang-format is missing" >&2
    exit 2
fi

DIRS="src include tools tests bench examples"
# Code kept as its authors wrote it, never reformatted: none today. Add a
# folder here (one shell pattern a line) when one is vendored.
KEEP='*/third_party/*
*/vendor/*'

list_files() {
    if [ $# -gt 0 ]; then
        for f in "$@"; do echo "$f"; done
    elif git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$ROOT" && git ls-files -- $DIRS | grep '\.[ch]$' | sed "s|^|$ROOT/|")
    else
        (cd "$ROOT" && find $DIRS -type f \( -name '*.c' -o -name '*.h' \) | sort | sed "s|^|$ROOT/|")
    fi
}

kept() {
    for pat in $KEEP; do
        case $1 in $pat) return 0 ;; esac
    done
    return 1
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
differ=0
for f in $(list_files "$@"); do
    kept "$f" && continue
    [ -f "$f" ] || { echo "format.sh: $f: no such file" >&2; exit 2; }
    "$CLANG_FORMAT" --style=file "$f" >"$tmp"
    cmp -s "$f" "$tmp" && continue
    differ=$((differ + 1))
    name=${f#"$ROOT"/}
    if [ "$check" = 1 ]; then
        echo "$name"
    else
        cat "$tmp" >"$f"
        echo "formatted $name"
    fi
done
if [ "$check" = 1 ] && [ "$differ" -gt 0 ]; then
    echo "format.sh: $differ files differ from .clang-format (scripts/format.sh formats them)" >&2
    exit 1
fi
exit 0
