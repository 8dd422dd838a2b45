#!/bin/sh
# escape_names.sh RELO_REPLAY DATA_DIR WORK_DIR
#
# relo-replay on traces whose file names hold an escape sequence, a
# newline and a C1 control: every message and the table name the file
# with those bytes escaped (\x1b, \x0a, \xc2\x9b), and no raw control
# byte reaches the output, good trace or bad.
set -u
replay=$1
data=$2
work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
esc=$(printf '\033')
csi=$(printf '\302\233')
nl='
'
good="$work/good${esc}[2J${csi}31m.trace"
bad="$work/bad${esc}]0;title$(printf '\007')${nl}x.trace"
cp "$data/tiny.trace" "$good" && cp "$data/bad_free.trace" "$bad" || exit 1
out=$("$replay" "$good" "$bad" 2>&1)
rc=$?
status=0
if [ $rc != 2 ]; then
    echo "FAIL: exit status $rc, expected 2 (one trace unreadable)"
    status=1
fi
case "$out" in
    *"$esc"* | *"$csi"* | *"$(printf '\007')"*)
        echo "FAIL: a raw control byte reached the output"
        status=1 ;;
esac
for want in 'bad\x1b]0;title\x07\x0ax.trace:4: free of id 1' 'good\x1b[2J\xc2\x9b31m'; do
    case "$out" in
        *"$want"*) ;;
        *) echo "FAIL: '$want' is not in the output"; status=1 ;;
    esac
done
if [ $status != 0 ]; then
    printf '%s\n' "$out" | od -c | head -40
fi
rm -rf "$work"
exit $status
