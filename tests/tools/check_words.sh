#!/bin/sh
# check_words.sh ROOT — the repository speaks of the product only. Every
# tracked text file under ROOT (git ls-files; in a tree that is not a git
# checkout, the files under its source folders) is searched for words that
# belong to how relo was developed rather than to what it is: issue numbers
# in prose ("#12"), development sessions and rounds, numbered attempts, a
# list of "acceptance behaviours" the repository does not hold, paths and
# kits outside the repository, and the people who worked on it. History
# belongs in commit messages and CHANGELOG.md's entries, which name
# releases. Exit 0 when nothing is found; 1 with file:line: text for each
# hit.
#
# check_words.sh --self-test — writes lines that must be flagged and lines
# that must not (colours, preprocessor lines, product words) into a
# temporary folder, runs the check over it and fails unless it flags
# exactly the first kind.
set -eu

# One extended regular expression per kind, matched without regard to case.
# Issue numbers: '#' and one or two digits, not inside a word, an HTML
# entity (&#38;), a colour (#888, #1f77b4: three or more hex digits) or a
# path; preprocessor lines never match ('#' then a letter).
PAT_ISSUE='(^|[^&[:alnum:]_/#])#[0-9]{1,2}([^[:alnum:]_]|$)'
# Product nouns that may carry a number after '#' (the report's
# "allocation #1"): such occurrences are removed before the issue pattern
# is tried.
PAT_ISSUE_OK='(allocation|slot|page|event|move|stream|thread|step|row|line|pass|handle|device|trace) #[0-9]+'
PAT_WORDS='\bsessions?\b|\b(development|numbered) (rounds?|attempts?)\b|\brounds? [0-9]+\b|\battempts? [0-9]+'
PAT_WORDS="$PAT_WORDS"'|acceptance (behaviou?rs?|defaults?|list)|acceptance\.md|\bbehaviou?rs? [0-9]+'
PAT_WORDS="$PAT_WORDS"'|\.\./shared|\bpeers?[ -]kit|\bour (machine|team|vm)\b|\bthe team\b|\bteam'"'"'s\b'
PAT_WORDS="$PAT_WORDS"'|\bengineers?\b|\bCEO\b|\bthe issue\b|\bissue'"'"'s\b|\bissue targets?\b'

# Lines allowed to hold a hit, as 'file:ERE' (one per line): where the
# build itself names something outside the repository on purpose. The test
# suite reads an optional corpus of traces and reference oracles from a
# folder beside the checkout where one exists, and skips those tests where
# it does not; that default path is the one such line.
ALLOW='tests/tools/CMakeLists.txt:^set\(RELO_SHARED_TRACES [$][{]PROJECT_SOURCE_DIR[}]/\.\./shared/traces CACHE PATH'

# True when the hit "file:line:text" is an allowed line.
allowed() {
    printf '%s\n' "$ALLOW" | while IFS= read -r a; do
        file=${a%%:*}
        re=${a#*:}
        case $1 in
        "$file":*)
            text=$(printf '%s\n' "$1" | cut -d: -f3-)
            if printf '%s\n' "$text" | grep -qE -e "$re"; then echo yes; fi
            ;;
        esac
    done | grep -q yes
}

# Prints file:line: text for every hit in the files named on stdin.
scan() {
    while IFS= read -r f; do
        [ -f "$f" ] || continue
        case $f in
        */check_words.sh | check_words.sh) continue ;; # the patterns themselves
        esac
        # -I: binary files (pictures, compressed traces, fuzz inputs) hold no prose.
        grep -nIiE -e "$PAT_WORDS" "$f" 2>/dev/null | sed "s|^|$f:|" || true
        grep -nIE -e "$PAT_ISSUE" "$f" 2>/dev/null | while IFS= read -r hit; do
            rest=$(printf '%s\n' "$hit" | sed -E "s/$PAT_ISSUE_OK//Ig")
            if printf '%s\n' "$rest" | grep -qE -e "$PAT_ISSUE"; then printf '%s:%s\n' "$f" "$hit"; fi
        done
    done | while IFS= read -r hit; do
        allowed "$hit" || printf '%s\n' "$hit"
    done
}

list_files() {
    if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$1" ls-files
    else
        (cd "$1" && find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||')
    fi
}

check_tree() {
    hits=$(cd "$1" && list_files . | scan | sort -t: -k1,1 -k2,2n -u)
    if [ -n "$hits" ]; then
        printf '%s\n' "$hits"
        echo "check_words: $(printf '%s\n' "$hits" | wc -l | tr -d ' ') line(s) speak of how relo was developed;" \
            "say what the product does instead (history goes in commit messages)"
        return 1
    fi
    echo "check_words: no development-process words in $(cd "$1" && list_files . | wc -l | tr -d ' ') files"
}

self_test() {
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    # Built from pieces so that this file holds none of them whole.
    h='#'
    {
        echo "bad: as ${h}13 asks, the lock is cheap"
        echo "bad: measured in se""ssion 20"
        echo "bad: Se""ssions 12 to 14 tried it"
        echo "bad: kept since att""empt 15"
        echo "bad: a numbered att""empt"
        echo "bad: the second development ro""und"
        echo "bad: ro""und 3 of the work"
        echo "bad: acceptance behavio""urs 1-4: handles"
        echo "bad: see acceptance"".md"
        echo "bad: Behavio""urs 26, 27 and 37 wrap the backend"
        echo "bad: the traces in ../sha""red/traces"
        echo "bad: in the peers"" kit"
        echo "bad: measured on our"" machine"
        echo "bad: the te""am's VM"
        echo "bad: the replayer's engi""neer"
        echo "bad: the is""sue's target: 1.6"
        echo "bad: (${h}7)"
    } >"$dir/bad.md"
    {
        echo "#include <stdio.h>"
        echo "#define X 1"
        echo "color: ${h}888; fill=\"${h}1f77b4\"; ${h}000000"
        echo "the row says allocation ${h}1 moved"
        echo "&${h}38; is an entity"
        echo "round by round, rounded up to the granule, round-trip"
        echo "an attempt that failed is retried; each attempt waits"
        echo "behaviour under pressure"
        echo "shared/ and relo_shared are product names"
    } >"$dir/good.c"
    # The one allowed line passes; the same path in a comment does not.
    mkdir -p "$dir/tests/tools"
    {
        echo 'set(RELO_SHARED_TRACES ${PROJECT_SOURCE_DIR}/../sha''red/traces CACHE PATH "corpus")'
        echo '# bad: the examples when ../sha''red is absent'
    } >"$dir/tests/tools/CMakeLists.txt"
    out=$(check_tree "$dir" || true)
    bad_lines=$(wc -l <"$dir/bad.md" | tr -d ' ')
    flagged_bad=$(printf '%s\n' "$out" | grep -c '^bad\.md:' || true)
    flagged_good=$(printf '%s\n' "$out" | grep -c '^good\.c:' || true)
    flagged_cmake=$(printf '%s\n' "$out" | grep -c '^tests/tools/CMakeLists\.txt:2:' || true)
    flagged_allowed=$(printf '%s\n' "$out" | grep -c '^tests/tools/CMakeLists\.txt:1:' || true)
    printf '%s\n' "$out"
    if [ "$flagged_bad" != "$bad_lines" ] || [ "$flagged_good" != 0 ] || [ "$flagged_cmake" != 1 ] ||
        [ "$flagged_allowed" != 0 ]; then
        echo "check_words self-test: flagged $flagged_bad of $bad_lines bad lines, $flagged_good good ones," \
            "$flagged_cmake of 1 bad CMake line and $flagged_allowed allowed ones"
        return 1
    fi
    echo "check_words self-test: every bad line flagged, no good one"
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
else
    check_tree "${1:-.}"
fi
