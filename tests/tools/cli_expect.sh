#!/bin/sh
# cli_expect.sh RC PATTERN [--file FILE] -- COMMAND...
#
# Runs COMMAND and passes when it exits with RC and its stdout+stderr match
# the extended regular expression PATTERN (an empty PATTERN matches all).
# With --file FILE, FILE must also exist afterwards and be non-empty.
set -u
want_rc=$1
pattern=$2
shift 2
file=""
if [ "${1:-}" = "--file" ]; then
    file=$2
    shift 2
fi
[ "${1:-}" = "--" ] && shift
[ -n "$file" ] && rm -f "$file"
out=$("$@" 2>&1)
rc=$?
status=0
if [ "$rc" != "$want_rc" ]; then
    echo "FAIL: exit status $rc, expected $want_rc"
    status=1
fi
if [ -n "$pattern" ] && ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    echo "FAIL: output does not match: $pattern"
    status=1
fi
if [ -n "$file" ] && [ ! -s "$file" ]; then
    echo "FAIL: $file was not written"
    status=1
fi
if [ $status != 0 ]; then
    echo "command: $*"
    printf '%s\n' "$out" | head -40
fi
exit $status
