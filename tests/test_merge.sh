#!/bin/sh
# attnbench merge on no GPU. A fake sharded sweep: the rows of a committed sweep
# (results/h100/) dealt to files as --shard I/N deals them (by the --dry-run listing of
# each shard); merging the files gives back the unsharded set of rows, header first.
# Refused, with exit 2, one line on stderr and OUT left as it was (or not made):
# mismatched columns, mismatched versions, a configuration in two files or twice in
# one, an existing OUT without --force, OUT among the inputs, an input twice, unreadable
# or malformed inputs. A resumed shard's error rows followed by their rerun join.
# Usage: sh tests/test_merge.sh build/attnbench
bin=${1:-build/attnbench}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_merge.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; sed 's/^/    stderr: /' "$tmp/stderr" 2>/dev/null | head -3 >&2; }

# fake_shards CSV SUITE N: DIR $tmp/SUITE-N/shard-I.csv for each shard that has rows.
fake_shards() {
    csv=$1 suite=$2 n=$3
    d="$tmp/$suite-$n"
    mkdir -p "$d"
    col=$(head -n 1 "$csv" | tr ',' '\n' | grep -nx args | cut -d: -f1)
    i=1
    while [ "$i" -le "$n" ]; do
        "$bin" sweep --suite "$suite" --dry-run --shard "$i/$n" | grep -v '^#' | cut -f1 > "$d/args-$i"
        if [ -s "$d/args-$i" ]; then
            awk -F, -v col="$col" 'NR == FNR { want[$0] = 1; next } FNR == 1 || ($col in want)' \
                "$d/args-$i" "$csv" > "$d/shard-$i.csv"
        fi
        i=$((i + 1))
    done
}

# joins SUITE N: the merge of the fake shards is the committed sweep, as a set of rows.
joins() {
    suite=$1 n=$2
    csv=results/h100/$suite.csv
    [ -f "$csv" ] || return 0
    fake_shards "$csv" "$suite" "$n"
    d="$tmp/$suite-$n"
    if ! "$bin" merge "$d/all.csv" "$d"/shard-*.csv >"$tmp/stdout" 2>"$tmp/stderr"; then
        fail "merge of $suite's $n shards: exit $?"
        return
    fi
    rows=$(($(wc -l < "$csv") - 1))
    head -n 1 "$d/all.csv" | cmp -s - "$(head -n 1 "$csv" > "$tmp/h"; echo "$tmp/h")" || fail "$suite, $n shards: header differs"
    tail -n +2 "$d/all.csv" | sort > "$tmp/got"
    tail -n +2 "$csv" | sort > "$tmp/want"
    if cmp -s "$tmp/got" "$tmp/want" && grep -q "^# merged $rows rows from " "$tmp/stdout"; then
        pass
    else
        fail "merge of $suite's $n shards is not $csv's rows ($(wc -l < "$tmp/got") of $rows)"
    fi
}
joins ci 1
joins ci 3
joins ci 40          # more shards than rows: the empty ones write no file
joins bifurcated 2
joins bifurcated 7
joins paper6 5

# refused OUT ARGS...: exit 2, one line on stderr, OUT byte for byte as before (or absent).
refused() {
    target=$1
    shift
    if [ -f "$target" ]; then cp "$target" "$tmp/before"; else rm -f "$tmp/before"; fi
    "$bin" merge "$target" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    lines=$(wc -l < "$tmp/stderr" | tr -d ' ')
    if [ "$rc" -ne 2 ]; then fail "merge $target $*: exit $rc, not 2"; return; fi
    if [ "$lines" -ne 1 ]; then fail "merge $target $*: $lines lines on stderr, not 1"; return; fi
    if [ -f "$tmp/before" ] && ! cmp -s "$tmp/before" "$target"; then fail "merge $target $*: $target changed"; return; fi
    if [ ! -f "$tmp/before" ] && [ -e "$target" ]; then fail "merge $target $*: $target was made"; return; fi
    passed=$((passed + 1))
}
says() { if grep -q -- "$1" "$tmp/stderr"; then pass; else fail "stderr lacks '$1'"; fi; }

d="$tmp/ci-3"
s1=$d/shard-1.csv s2=$d/shard-2.csv s3=$d/shard-3.csv
out="$tmp/out.csv"
# mismatched columns: a file of an earlier version, with fewer columns
refused "$out" "$s1" tests/fixtures/compare_base.csv
says "compare_base.csv:1: its columns are not those of"
# mismatched versions
sed '3s/45265b48e72a/0123456789ab/' "$s2" > "$tmp/version.csv"
refused "$out" "$s1" "$tmp/version.csv"
says "version.csv:3: version '0123456789ab' is not '45265b48e72a'"
# a configuration in two files: a row of shard 1 in shard 2 as well
{ cat "$s2"; sed -n 4p "$s1"; } > "$tmp/overlap.csv"
refused "$out" "$s1" "$tmp/overlap.csv" "$s3"
says "overlap.csv:$(wc -l < "$tmp/overlap.csv"): the configuration of .*shard-1.csv:4 again"
# ... or twice in one file
{ cat "$s2"; sed -n 2p "$s2"; } > "$tmp/twice.csv"
refused "$out" "$s1" "$tmp/twice.csv"
says "twice.csv:$(wc -l < "$tmp/twice.csv"): the configuration of line 2 again"
# the same input twice, OUT among the inputs
refused "$out" "$s1" "$s2" "$s1"
says "is given twice"
refused "$s1" "$s2" "$s1"
says "both the output and an input"
# unreadable and malformed inputs
refused "$out" "$s1" "$tmp/none.csv"
says "none.csv: cannot read"
{ cat "$s2"; echo 'h100,fused,gqa,1'; } > "$tmp/ragged.csv"
refused "$out" "$s1" "$tmp/ragged.csv"
says "ragged.csv:$(wc -l < "$tmp/ragged.csv"):"
refused "$out" "$s1" "$tmp"
# OUT: an existing results CSV needs --force; anything else is refused even with it
"$bin" merge "$out" "$s1" "$s2" "$s3" > /dev/null 2>&1 && pass || fail "merge into a new file"
refused "$out" "$s1" "$s2" "$s3"
says "holds results already: --force replaces it"
"$bin" merge "$out" "$s1" --force > /dev/null 2>&1 && [ "$(wc -l < "$out")" -eq "$(wc -l < "$s1")" ] &&
    pass || fail "merge --force did not replace OUT"
printf 'notes, not results\n' > "$tmp/notes.txt"
refused "$tmp/notes.txt" "$s1" --force
refused "$tmp/nodir/out.csv" "$s1"
# bad command lines
refused "$out"
says "needs OUT.csv and at least one input"
refused "$out" "$s1" --resume
"$bin" merge --help 2>/dev/null | grep -q '^usage: attnbench merge OUT.csv' && pass || fail "merge --help"

# A resumed shard: an error row, then the row that ran again, joins as it is (33 rows
# and the error row, header first).
{ sed '2s/,ok,/,error,/' "$s2"; sed -n 2p "$s2"; } > "$tmp/resumed.csv"
rm -f "$out"
"$bin" merge "$out" "$s1" "$tmp/resumed.csv" "$s3" >/dev/null 2>"$tmp/stderr" &&
    [ "$(wc -l < "$out")" -eq 35 ] && pass || fail "merge of a resumed shard with its error row"

echo "merge: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
