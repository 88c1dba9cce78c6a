#!/bin/sh
# compare and table judge only real numbers, show every column, pivot large files
# fast, and fail on output they could not write. Needs no GPU.
# Usage: sh tests/test_csv_input.sh build/attnbench
bin=${1:-build/attnbench}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_csv_input.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
base=tests/fixtures/compare_base.csv

check() { # name got want
    if [ "$2" = "$3" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1: got '$2', want '$3'" >&2; fi
}
lines() { wc -l <"$1" | tr -d ' '; }

# An ok row's median that is not a time: compare refuses NEW naming its line.
for v in inf nan -inf 1e999 "" 0 -5; do
    awk -F, -v OFS=, -v v="$v" 'NR == 3 { $19 = v } { print }' "$base" > "$tmp/new.csv"
    "$bin" compare "$base" "$tmp/new.csv" >"$tmp/out" 2>"$tmp/err"
    check "compare, median '$v': exit" $? 2
    check "compare, median '$v': one line" "$(lines "$tmp/err")" 1
    check "compare, median '$v': names file:line" "$(grep -c "new.csv:3: column median_us" "$tmp/err")" 1
    "$bin" table --in "$tmp/new.csv" --rows ctx --cols beam >"$tmp/out" 2>"$tmp/err"
    check "table, median '$v': exit" $? 2
done
# p90 and min are times too
awk -F, -v OFS=, 'NR == 2 { $22 = "-1" } { print }' "$base" > "$tmp/new.csv"
"$bin" compare "$base" "$tmp/new.csv" >"$tmp/out" 2>"$tmp/err"
check "compare, negative min_us: exit" $? 2

# GPU names equal in their first 31 characters are not one GPU: refused, not cut
awk -F, -v OFS=, 'NR > 1 { $1 = "NVIDIA H100 80GB HBM3 engineering sample A" } { print }' "$base" > "$tmp/a.csv"
awk -F, -v OFS=, 'NR > 1 { $1 = "NVIDIA H100 80GB HBM3 engineering sample B" } { print }' "$base" > "$tmp/b.csv"
"$bin" compare "$tmp/a.csv" "$tmp/b.csv" >"$tmp/out" 2>"$tmp/err"
check "compare, long GPU names: exit" $? 2
check "compare, long GPU names: reason" "$(grep -c "column gpu" "$tmp/err")" 1

# 50,000 rows, 300 columns: every column in the Markdown table, within seconds
awk -F, -v OFS=, 'NR == 1 { print; next } NR == 2 { for (i = 0; i < 50000; i++) { $5 = 1 + i % 300; $9 = 1024 * (1 + int(i / 300)); print } }' \
    "$base" > "$tmp/big.csv"
start=$(date +%s)
limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 20"
$limit "$bin" table --in "$tmp/big.csv" --rows ctx --cols beam >"$tmp/big.md" 2>"$tmp/err"
check "table, 50,000 rows: exit" $? 0
check "table, 50,000 rows: within 10 s" "$(( $(date +%s) - start <= 10 ))" 1
check "table, 300 columns shown" "$(head -n 1 "$tmp/big.md" | awk -F'|' '{ print NF - 2 }')" 301
check "table, 167 rows of ctx" "$(lines "$tmp/big.md")" 169

# output that cannot be written: exit 1, one line
if [ -w /dev/full ]; then
    "$bin" table --in "$base" --rows ctx --cols beam >/dev/full 2>"$tmp/err"
    check "table > /dev/full: exit" $? 1
    check "table > /dev/full: one line" "$(lines "$tmp/err")" 1
    "$bin" compare "$base" "$base" >/dev/full 2>"$tmp/err"
    check "compare > /dev/full: exit" $? 1
    "$bin" list >/dev/full 2>"$tmp/err"
    check "list > /dev/full: exit" $? 1
    "$bin" sweep --help >/dev/full 2>"$tmp/err"
    check "sweep --help > /dev/full: exit" $? 1
    check "sweep --help > /dev/full: one line" "$(lines "$tmp/err")" 1
fi

# user text with a newline stays one line
nl='
'
"$bin" run --kernel "fu${nl}sed" >"$tmp/out" 2>"$tmp/err"
check "newline in a value: exit" $? 2
check "newline in a value: one line" "$(lines "$tmp/err")" 1
check "newline in a value: escaped" "$(grep -c 'fu\\nsed' "$tmp/err")" 1
"$bin" table --in "$tmp/no${nl}such.csv" --rows ctx --cols beam >"$tmp/out" 2>"$tmp/err"
check "newline in a file name: one line" "$(lines "$tmp/err")" 1

echo "csv input: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
