#!/bin/sh
# --resume keeps the finished rows of an interrupted sweep and drops a row cut off
# mid-write (no GPU needed: the CSV is read before the GPU is touched).
bin=${1:-build/attnbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { if [ "$2" = "$3" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1: got '$2', want '$3'"; fi; }
cp tests/fixtures/compare_base.csv "$tmp/sweep.csv"
rows=$(wc -l < "$tmp/sweep.csv")
printf 'h100,fused,gqa,1,16,32,8,128,81' >> "$tmp/sweep.csv"
"$bin" sweep --beam 1 --out "$tmp/sweep.csv" --resume >/dev/null 2>"$tmp/err"
check "unfinished row dropped" "$(wc -l < "$tmp/sweep.csv")" "$rows"
check "file ends with a full row" "$(tail -c 1 "$tmp/sweep.csv" | od -An -c | tr -d ' ')" '\n'
check "finished rows kept" "$(head -n 2 "$tmp/sweep.csv")" "$(head -n 2 tests/fixtures/compare_base.csv)"
"$bin" sweep --beam 1 --out "$tmp/sweep.csv" --resume >/dev/null 2>"$tmp/err"
check "a complete file is left alone" "$(wc -l < "$tmp/sweep.csv")" "$rows"
echo "resume: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
