#!/bin/sh
# sweep/verify --dry-run and --shard I/N, on no GPU:
#   - the listing is the rows the sweep runs: for the suites of results/h100/, exactly the
#     args of the committed CSV's rows (so each line reruns its row), its count said last;
#   - over N shards (several N, several grids and suites, verify's suites) every row is
#     listed exactly once, and no shard has more than one row more than another;
#   - --resume leaves out the rows --out holds (not error rows), shard by shard, and the
#     file stays as it was;
#   - no GPU is touched: with no device visible the sweep itself fails, its dry run
#     lists; where strace is there, the dry run opens no more /dev/nvidia* than --version.
# Usage: sh tests/test_shard.sh build/attnbench
bin=${1:-build/attnbench}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_shard.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# rows FILE: the listing's rows (not its # lines).
rows() { grep -v '^#' "$1"; }

# Every row of `CMD --dry-run` in exactly one of N shards, shards within one row of each other.
shards() {
    n=$1
    shift
    "$bin" "$@" --dry-run > "$tmp/all" 2>"$tmp/err" || { fail "$* --dry-run: exit $?: $(head -n 1 "$tmp/err")"; return; }
    total=$(rows "$tmp/all" | wc -l)
    : > "$tmp/union"
    least=$total most=0 i=1
    while [ "$i" -le "$n" ]; do
        "$bin" "$@" --dry-run --shard "$i/$n" > "$tmp/one" 2>"$tmp/err" ||
            { fail "$* --shard $i/$n: exit $?: $(head -n 1 "$tmp/err")"; return; }
        m=$(rows "$tmp/one" | wc -l)
        tail -n 1 "$tmp/one" | grep -q "^# [a-z]* --dry-run: $m rows (shard $i/$n of $total)" ||
            fail "$* --shard $i/$n: last line '$(tail -n 1 "$tmp/one")' does not count $m of $total"
        rows "$tmp/one" >> "$tmp/union"
        [ "$m" -lt "$least" ] && least=$m
        [ "$m" -gt "$most" ] && most=$m
        i=$((i + 1))
    done
    if rows "$tmp/all" | sort | cmp -s - "$(sort "$tmp/union" > "$tmp/u.sorted"; echo "$tmp/u.sorted")"; then
        pass
    else
        fail "$* over $n shards: not every row exactly once ($(wc -l < "$tmp/union") listed, $total rows; twice: $(sort "$tmp/union" | uniq -d | head -n 1))"
    fi
    [ $((most - least)) -le 1 ] && pass || fail "$* over $n shards: shards of $least to $most rows"
}

for n in 1 2 3 5 8; do
    shards "$n" sweep --suite ci
    shards "$n" sweep --beam 1:64 --kv-heads 32,8,1 --ctx 1k,8k --cache contiguous,paged \
        --indirection --kernels cublas,fused,bifurcated,auto
done
for n in 3 8; do
    shards "$n" sweep --suite core
    shards "$n" sweep --suite paper6
    shards "$n" verify
done
shards 3 verify --suite full
shards 2 sweep --suite bifurcated --kernels fused,bifurcated --gen 1 --dtype bf16
shards 5 sweep --beam 1,2 --kernels fused     # more shards than rows: some are empty
shards 4 sweep --beam 1:8 --hot --graph --q-scaling 0.5

# The listing is what the sweep runs: the args of the committed sweeps, line for line.
for suite in ci core paper6 bifurcated-paged; do
    csv=results/h100/$suite.csv
    [ -f "$csv" ] || continue
    "$bin" sweep --suite "$suite" --dry-run | grep -v '^#' | cut -f1 | sort > "$tmp/listed"
    col=$(head -n 1 "$csv" | tr ',' '\n' | grep -nx args | cut -d: -f1)
    tail -n +2 "$csv" | cut -d, -f"$col" | sort > "$tmp/ran"
    cmp -s "$tmp/listed" "$tmp/ran" && pass || fail "sweep --suite $suite --dry-run: not the args of $csv's rows"
done
# unsupported rows are listed, marked, and counted
"$bin" sweep --cache paged --kernels cublas,fused --dry-run > "$tmp/out"
grep -q '^--kernel cublas .*	# unsupported: ' "$tmp/out" && grep -q '^# sweep --dry-run: 2 rows, 1 unsupported$' "$tmp/out" &&
    pass || fail "sweep --cache paged --kernels cublas,fused --dry-run: $(tail -n 1 "$tmp/out")"

# --resume with shards: the rows --out holds are left out, error rows are listed again.
csv=results/h100/ci.csv
"$bin" sweep --suite ci --dry-run --shard 1/3 | grep -v '^#' > "$tmp/shard1"
"$bin" sweep --suite ci --dry-run --shard 2/3 | grep -v '^#' > "$tmp/shard2"
# held: shard 2's first 4 rows, its 5th as an error row, and shard 1's first row
row_of() { while IFS= read -r a; do grep -F ",$a," "$csv"; done; }
{
    head -n 1 "$csv"
    head -n 4 "$tmp/shard2" | row_of
    sed -n 5p "$tmp/shard2" | row_of | sed 's/,ok,/,error,/'
    head -n 1 "$tmp/shard1" | row_of
} > "$tmp/held.csv"
cp "$tmp/held.csv" "$tmp/held.before"
"$bin" sweep --suite ci --dry-run --shard 2/3 --out "$tmp/held.csv" --resume > "$tmp/out"
rows "$tmp/out" > "$tmp/left"
tail -n +5 "$tmp/shard2" > "$tmp/want"
cmp -s "$tmp/left" "$tmp/want" && pass || fail "--shard 2/3 --resume: not the shard's rows less the 4 held"
tail -n 1 "$tmp/out" | grep -q "^# sweep --dry-run: $(wc -l < "$tmp/want") rows (shard 2/3 of 33), 0 unsupported, 4 already in" &&
    pass || fail "--resume --dry-run count: $(tail -n 1 "$tmp/out")"
cmp -s "$tmp/held.csv" "$tmp/held.before" && pass || fail "--dry-run --resume changed --out"
# shard 1's one held row is left out of shard 1 only
"$bin" sweep --suite ci --dry-run --shard 1/3 --out "$tmp/held.csv" --resume | grep -v '^#' > "$tmp/left1"
[ "$(wc -l < "$tmp/left1")" -eq $(($(grep -vc '^#' "$tmp/shard1") - 1)) ] && pass || fail "--shard 1/3 --resume: $(wc -l < "$tmp/left1") rows left"
# --out is checked as the sweep would check it
"$bin" sweep --suite ci --dry-run --out "$tmp/held.csv" > /dev/null 2>&1
[ $? -eq 2 ] && pass || fail "--dry-run took an existing --out without --resume or --force"

# --tp N: a row is the whole step over N GPUs, listed once (its args end in --tp N and
# rerun it), sharded as any row; N must divide the heads and kv heads, and --devices
# must give N GPUs (one line, exit 2, before any GPU).
"$bin" sweep --suite paper8 --dry-run > "$tmp/tp" 2> "$tmp/err"
[ $? -eq 0 ] && [ "$(grep -vc '^#' "$tmp/tp")" -eq 24 ] && [ "$(grep -c -- '--heads 32 --kv-heads 8 .* --tp 2$' "$tmp/tp")" -eq 24 ] &&
    tail -n 1 "$tmp/tp" | grep -q '^# sweep --dry-run: 24 rows' && pass || fail "paper8 --dry-run: not its 24 rows at --tp 2 once each"
[ "$(grep -vc '^#' "$tmp/tp")" -eq "$(grep -v '^#' "$tmp/tp" | sort -u | wc -l)" ] && pass || fail "paper8 --dry-run: a row listed twice"
shards 3 sweep --suite paper8
"$bin" sweep --dry-run --model mistral-7b --tp 2 --beam 8 --ctx 1024 --kernels fused | grep -v '^#' > "$tmp/tprow"
# shellcheck disable=SC2046
"$bin" sweep --dry-run $(sed 's/^--kernel /--kernels /' "$tmp/tprow") | grep -v '^#' | cmp -s - "$tmp/tprow" && pass || fail "a --tp row's args do not list it again"
for bad in "--model mistral-7b --tp 3" "--heads 32 --kv-heads 2 --tp 4" "--model mistral-7b --tp 2 --devices 0"; do
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES='' "$bin" sweep --dry-run $bad > "$tmp/out" 2> "$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- '--tp' "$tmp/err" && pass || fail "sweep $bad: exit $rc, '$(cat "$tmp/err")'"
done

# No GPU is touched. With no device visible the sweep fails at the GPU, so a dry run
# that gets past it did not go there.
CUDA_VISIBLE_DEVICES='' "$bin" sweep --suite ci --out "$tmp/gpu.csv" > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] && grep -q 'no CUDA GPU' "$tmp/err" && pass || fail "sweep with no device visible: not the GPU's failure"
for cmd in "sweep --suite ci" "sweep --suite ci --devices all" "verify --devices 0,1 --shard 1/2"; do
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES='' "$bin" $cmd --dry-run > "$tmp/out" 2> "$tmp/err"
    rc=$?
    if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && ! grep -q 'GB/s' "$tmp/out"; then pass; else fail "$cmd --dry-run with no device visible: exit $rc, $(head -n 1 "$tmp/err")"; fi
done
if command -v strace >/dev/null 2>&1 && strace -f -e trace=open,openat -o "$tmp/trace" true 2>/dev/null; then
    strace -f -e trace=open,openat -o "$tmp/base" "$bin" --version > /dev/null 2>&1
    strace -f -e trace=open,openat -o "$tmp/trace" "$bin" sweep --suite ci --devices all --dry-run > /dev/null 2>&1
    base=$(grep -c '/dev/nvidia' "$tmp/base")
    got=$(grep -c '/dev/nvidia' "$tmp/trace")
    [ "$got" -le "$base" ] && pass || fail "sweep --dry-run opened /dev/nvidia* $got times, --version $base"
else
    echo "shard: strace cannot run here, the /dev/nvidia* check is skipped"
fi

echo "shard: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
