#!/bin/sh
# regen-docs.sh — the figures the README shows, from a fresh run of
# relo-replay: the table under "What it does on real traces" and the
# timeline picture docs/replay.svg. Each is made by the command the README
# prints for it, run from the repository's root:
#
# - the table: the README's line `./build/tools/relo-replay --table md ...`;
#   the Markdown table after it is that command's output, and the line
#   between them names relo's version (`relo X.Y.Z`);
# - the picture: the README's first command, `relo-replay ... --svg
#   replay.svg TRACE`, writing docs/replay.svg instead of replay.svg.
#
# usage: regen-docs.sh RELO_REPLAY
#            rewrites the README's table, its version and docs/replay.svg
#        regen-docs.sh --check table|svg RELO_REPLAY [SCRATCH_DIR]
#            changes nothing: compares the README's table (every cell, and
#            the version) or docs/replay.svg (every text exactly, shapes
#            and coordinates within 0.15 px) with a fresh run, names each
#            difference, and exits 1 when there is one
#
# Exit status: 0 done or no difference, 1 a difference, 2 bad usage, a
# README without the commands, or a command that failed.
set -u
check=""
if [ "${1:-}" = "--check" ]; then
    check=${2:-}
    shift 2 || true
    case "$check" in table|svg) ;; *) echo "regen-docs.sh: --check table or --check svg" >&2; exit 2 ;; esac
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: regen-docs.sh [--check table|svg] RELO_REPLAY [SCRATCH_DIR]" >&2
    exit 2
fi
case "$1" in /*) replay=$1 ;; *) replay=$(pwd)/$1 ;; esac
if [ ! -x "$replay" ]; then
    echo "regen-docs.sh: $replay is not a program (build it: cmake --build build --target relo-replay)" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
readme=$root/README.md
if [ $# -eq 2 ]; then
    scratch=$2
    rm -rf "$scratch" && mkdir -p "$scratch" || exit 2
else
    scratch=$(mktemp -d) || exit 2
    trap 'rm -rf "$scratch"' EXIT
fi
version=$("$replay" --version | awk '{print $2}')

# ---- the table ----

# The README's table command, the table after it (first and last line
# numbers) and the lines between them.
table_cmd_line=$(grep -n -m1 '^\./build/tools/relo-replay --table md ' "$readme" | cut -d: -f1)
if [ -z "$table_cmd_line" ]; then
    echo "regen-docs.sh: README.md has no line './build/tools/relo-replay --table md ...'" >&2
    exit 2
fi
table_args=$(sed -n "${table_cmd_line}p" "$readme" | sed 's/^\.\/build\/tools\/relo-replay //')
table_first=$(awk -v from="$table_cmd_line" 'NR > from && /^\| trace \|/ { print NR; exit }' "$readme")
if [ -z "$table_first" ]; then
    echo "regen-docs.sh: README.md has no table ('| trace |') after line $table_cmd_line" >&2
    exit 2
fi
table_last=$(awk -v from="$table_first" 'NR >= from { if (/^\|/) last = NR; else exit } END { print last }' "$readme")

fresh_table() {
    # The arguments are the README's words, split as a shell would split
    # them (no quotes there), run where the README's command runs.
    # shellcheck disable=SC2086
    (cd "$root" && "$replay" --quiet $table_args) > "$scratch/table.md" || {
        echo "regen-docs.sh: '$replay $table_args' failed" >&2
        exit 2
    }
}

check_table() {
    fresh_table
    sed -n "${table_first},${table_last}p" "$readme" > "$scratch/readme-table.md"
    status=0
    version_re=$(printf '%s' "$version" | sed 's/\./\\./g')
    if ! sed -n "$((table_cmd_line + 1)),$((table_first - 1))p" "$readme" | grep -Eq "relo $version_re([^0-9.]|\.?$)"; then
        echo "FAIL: the lines between the README's table command and its table do not name relo $version"
        status=1
    fi
    # Cell by cell, naming the trace and the column of each difference.
    awk -F' \\| ' '
        function trim(s) { sub(/^\| ?/, "", s); sub(/ ?\|$/, "", s); return s }
        NR == FNR { want[FNR] = $0; rows = FNR; next }
        {
            got[FNR] = $0; fresh = FNR
        }
        END {
            bad = 0
            n = split(got[1], head, / \| /)
            for (i = 1; i <= n; i++) head[i] = trim(head[i])
            if (rows != fresh) {
                # Name the traces one has and the other lacks.
                for (r = 3; r <= rows; r++) { split(want[r], w, / \| /); in_want[trim(w[1])] = 1 }
                for (r = 3; r <= fresh; r++) { split(got[r], g, / \| /); in_got[trim(g[1])] = 1 }
                for (t in in_got) if (!(t in in_want)) printf "FAIL: %s is in a fresh run, not in the README\n", t
                for (t in in_want) if (!(t in in_got)) printf "FAIL: %s is in the README, not in a fresh run\n", t
                printf "FAIL: the README table has %d lines, a fresh run %d\n", rows, fresh
                exit 1
            }
            for (r = 1; r <= fresh; r++) {
                if (want[r] == got[r]) continue
                nw = split(want[r], w, / \| /)
                ng = split(got[r], g, / \| /)
                if (nw != ng) { printf "FAIL: line %d: %d cells in the README, %d in a fresh run\n", r, nw, ng; bad = 1; continue }
                for (i = 1; i <= ng; i++)
                    if (trim(w[i]) != trim(g[i])) {
                        printf "FAIL: %s, %s: the README says %s, a fresh run %s\n", trim(g[1]), head[i], trim(w[i]), trim(g[i])
                        bad = 1
                    }
            }
            exit bad
        }' "$scratch/readme-table.md" "$scratch/table.md" || status=1
    if [ $status -eq 0 ]; then
        echo "ok   README.md's table ($(($(wc -l < "$scratch/table.md") - 2)) traces, relo $version) matches: relo-replay $table_args"
    else
        echo "(regenerate with: scripts/regen-docs.sh $replay)"
    fi
    return $status
}

write_table() {
    fresh_table
    {
        sed -n "1,${table_cmd_line}p" "$readme"
        sed -n "$((table_cmd_line + 1)),$((table_first - 1))p" "$readme" |
            sed "s/relo [0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*/relo $version/"
        cat "$scratch/table.md"
        sed -n "$((table_last + 1)),\$p" "$readme"
    } > "$scratch/README.md" && cat "$scratch/README.md" > "$readme"
    echo "README.md: table of $(($(wc -l < "$scratch/table.md") - 2)) traces, relo $version"
}

# ---- the picture ----

svg_args=$(grep -m1 'relo-replay .*--svg replay\.svg ' "$readme" | sed 's/.*relo-replay //')
if [ -z "$svg_args" ]; then
    echo "regen-docs.sh: README.md has no 'relo-replay ... --svg replay.svg' command" >&2
    exit 2
fi

fresh_svg() {
    out=$1
    args=$(printf '%s\n' "$svg_args" | sed "s|--svg replay\\.svg|--svg $out|")
    # shellcheck disable=SC2086
    (cd "$root" && "$replay" --quiet $args) || {
        echo "regen-docs.sh: '$replay $args' failed" >&2
        exit 2
    }
}

check_svg() {
    fresh_svg "$scratch/replay.svg"
    # Texts (title, figures, labels, legend with its relocation count)
    # exactly; every other line the same shape, its numbers within 0.15.
    if awk '
        function numbers(s, out,   n) {
            n = 0
            while (match(s, /-?[0-9]+(\.[0-9]+)?/)) {
                out[++n] = substr(s, RSTART, RLENGTH) + 0
                s = substr(s, RSTART + RLENGTH)
            }
            return n
        }
        function shape(s) { gsub(/-?[0-9]+(\.[0-9]+)?/, "#", s); return s }
        NR == FNR { want[FNR] = $0; rows = FNR; next }
        { got[FNR] = $0; fresh = FNR }
        END {
            bad = 0
            if (rows != fresh) { printf "FAIL: docs/replay.svg has %d lines, a fresh run %d\n", rows, fresh; bad = 1 }
            for (r = 1; r <= rows && r <= fresh && bad < 10; r++) {
                if (want[r] == got[r]) continue
                if (got[r] ~ /<text/ || want[r] ~ /<text/ || shape(want[r]) != shape(got[r])) {
                    printf "FAIL: line %d differs:\n  docs/replay.svg: %.300s\n  fresh run:       %.300s\n", r, want[r], got[r]
                    bad++
                    continue
                }
                n = numbers(want[r], a)
                numbers(got[r], b)
                for (i = 1; i <= n; i++)
                    if (a[i] - b[i] > 0.15 || b[i] - a[i] > 0.15) {
                        printf "FAIL: line %d, number %d: docs/replay.svg %s, a fresh run %s\n", r, i, a[i], b[i]
                        bad++
                        break
                    }
            }
            exit bad > 0
        }' "$root/docs/replay.svg" "$scratch/replay.svg"; then
        echo "ok   docs/replay.svg matches a fresh run: relo-replay $svg_args"
        return 0
    fi
    echo "(regenerate with: scripts/regen-docs.sh $replay)"
    return 1
}

case "$check" in
    table) check_table; exit $? ;;
    svg) check_svg; exit $? ;;
esac
write_table
fresh_svg "$root/docs/replay.svg"
echo "docs/replay.svg: relo-replay $svg_args"
