#!/bin/sh
# Bad input on the command line (SPEC §5): every case must exit with status 2 and
# say why in exactly one line on stderr, before any GPU work (so this runs on CI
# machines without a GPU). Usage: sh tests/test_bad_input.sh build/attnbench
bin=${1:-build/attnbench}
if [ ! -x "$bin" ]; then
    echo "test_bad_input: $bin is not an executable" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_bad_input.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
csv="$tmp/out.csv"
passed=0
failed=0

limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 60"

# bad ARGS...: exit status 2, one non-empty line on stderr, no --out file written.
bad() {
    $limit "$bin" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    lines=$(wc -l <"$tmp/stderr" | tr -d ' ')
    why=""
    [ "$rc" -eq 2 ] || why="exit status $rc, not 2"
    [ -z "$why" ] && [ "$lines" -ne 1 ] && why="$lines lines on stderr, not 1"
    [ -z "$why" ] && ! grep -q '[^[:space:]]' "$tmp/stderr" && why="empty message on stderr"
    [ -z "$why" ] && [ -e "$csv" ] && why="wrote $csv"
    if [ -z "$why" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: attnbench $*: $why" >&2
        sed 's/^/    stderr: /' "$tmp/stderr" | head -5 >&2
    fi
    rm -f "$csv"
}

# check_help COMMAND: --help exits 0 with the text on stdout.
check_help() {
    $limit "$bin" "$1" --help >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q "usage: attnbench $1" "$tmp/stdout"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: attnbench $1 --help: exit status $rc or no usage line on stdout" >&2
    fi
}

# the problem itself
bad run --kv-heads 3 --kernel fused
bad run --heads 32 --kv-heads 12 --kernel fused
bad run --cache paged --block-size 12 --kernel fused
bad run --cache paged --block-size 256 --kernel fused
bad run --cache paged --block-size 4 --kernel fused
bad run --block-size 48 --kernel fused
bad run --batch 0 --kernel fused
bad run --beam 0 --kernel fused
bad run --ctx -5 --kernel fused
bad run --heads 0 --kernel fused
bad run --gen -1 --kernel fused
bad run --head-dim 100 --kernel fused
bad run --splits 4 --multi-block off --kernel fused
# --q-len: 1 to 16 query tokens, the last decoded ones (at most --gen); one value for run;
# a kernel without it refuses it when asked by name
bad run --q-len 0 --kernel fused
bad run --q-len 17 --kernel fused
bad run --q-len x --kernel fused
bad run --q-len 4 --gen 3 --kernel fused
bad run --q-len 1,4 --kernel fused
bad run --q-len 4 --kernel cublas
bad sweep --q-len 2,4 --gen 3 --out "$csv"
bad sweep --q-len 1:32 --out "$csv"
bad run --q-len 4 --step append --kernel fused
bad sweep --beam 1:4 --kv-heads 32,8,3 --out "$csv"
bad sweep --cache paged --block-size 8:256 --out "$csv"

# names
bad run --kernel nope
bad sweep --kernels fused,nope --beam 1:4 --out "$csv"
bad run --dtype fp8 --kernel fused
bad run --cache weird --kernel fused
bad run --multi-block maybe --kernel fused
bad run --model 70b --kernel fused
bad verify --suite medium
bad sweep --suite no-such-suite --out "$csv"

# a kernel that does not support the asked layout (cublas reads a contiguous cache)
bad run --cache paged --kernel cublas

# the 8-bit KV cache: names, a 16-bit cache outside the queries' dtype, one value for
# run, and the kernels that do not read it
bad run --kv-dtype fp4 --kernel fused
bad run --kv-dtype fp8 --kv-scale row --kernel fused
bad run --dtype bf16 --kv-dtype fp16 --kernel fused
bad sweep --dtype fp16,fp32 --kv-dtype fp16,int8 --out "$csv"
bad run --kv-dtype fp8,int8 --kernel fused
bad run --kv-dtype int8 --kv-scale tensor,head --kernel fused
bad run --dtype int8 --kernel fused
bad run --kv-dtype fp8 --kernel cublas
bad run --kv-dtype int8 --kernel cublas-bifurcated
bad verify --suite kvq8

# --step append: names, RoPE options without it or out of range, the kernels that do
# not run it
bad run --step decode --kernel fused
bad run --step append --rope llama --kernel fused
bad run --rope gptj --kernel fused
bad run --rope-base 500000 --kernel fused
bad run --step append --rope-base 1 --kernel fused
bad run --step append --rope-scale -2 --kernel fused
bad run --step append --kernel cublas
bad run --step append --kernel cublas-bifurcated
bad run --step append --kernel flashinfer

# numbers and lists
bad run --beam 1:3 --kernel fused
bad run --ctx 8q --kernel fused
bad run --ctx 3000000000 --kernel fused
bad run --iters -1 --kernel fused
bad run --min-time 0 --kernel fused
bad run --seed x --kernel fused

# limits, checked as the option is parsed, with the bound the later code uses
bad run --iters 1000001 --kernel fused
bad run --warmup 1000001 --kernel fused
bad run --iters 2147483648 --kernel fused
bad run --iters 99999999999999999999 --kernel fused
bad run --batch 64k --beam 64k --kernel fused
bad sweep --batch 1,64k --beam 64k --out "$csv"
bad run --batch 1k --beam 1k --heads 4k --kv-heads 4k --head-dim 8 --kernel fused
bad run --ctx 1m --gen 1023m --kernel fused
bad run --layers 4294967297 --kernel fused
bad run --q-scaling inf --kernel fused
bad table --in tests/fixtures/compare_base.csv --paper 4294967302
bad table --in tests/fixtures/compare_base.csv --paper 6x
bad table --in tests/fixtures/compare_base.csv --paper 6 --layers 4294967297
bad table --in tests/fixtures/compare_base.csv --paper 6 --layers 0
bad table --in tests/fixtures/compare_base.csv --paper 6 --agg mean
bad table --in tests/fixtures/compare_base.csv --paper 6 --threshold 1
bad compare tests/fixtures/compare_base.csv tests/fixtures/compare_base.csv --threshold -1
bad compare tests/fixtures/compare_base.csv tests/fixtures/compare_base.csv --threshold nan
bad compare tests/fixtures/compare_base.csv
bad compare tests/fixtures/compare_base.csv --rows ctx tests/fixtures/compare_base.csv

# the shape of the command line
bad run --beam 1,2 --kernel fused
bad run --dtype fp16,bf16 --kernel fused
bad run --beam 4
bad run --kernel
bad run --frobnicate --kernel fused
bad run stray --kernel fused
bad sweep --beam 1:4
bad sweep --beam 1:4 --resume
# --resume on a results CSV whose columns are not this version's (or an earlier one's)
{ printf 'gpu,attn,kernel'; head -n 1 tests/fixtures/compare_base.csv | cut -d, -f4- | sed 's/^/,/'; } > "$tmp/foreign.csv"
bad sweep --beam 1 --out "$tmp/foreign.csv" --resume
bad sweep --out "$csv"
bad sweep --beam 1:4 --out "$csv" --profile
bad list --batch 1
bad peak --iters 3
bad frobnicate

# shards, devices and dry runs (sweep and verify only), and merge's command line
for v in 0/3 4/3 3 1/0 /3 3/ a/b 1/2/3 -1/2 1/65537 '' 1/99999999999; do
    bad sweep --suite ci --out "$csv" --shard "$v"
done
bad verify --shard 2/1
bad run --kernel fused --shard 1/2
for v in '' x 1,1 64 -1 0, ,0 0,all; do bad sweep --suite ci --out "$csv" --devices "$v"; done
bad run --kernel fused --devices 0
bad run --kernel fused --dry-run
bad sweep --suite ci --dry-run --resume
bad merge
bad merge "$tmp/only.csv"
bad merge "$tmp/out.csv" "$tmp/missing.csv"
bad merge "$tmp/out.csv" tests/fixtures/compare_base.csv --threshold 1
bad merge "$tmp/out.csv" "" tests/fixtures/compare_base.csv

# ragged batches (--ctx-dist): malformed specs, unreadable or malformed files, a file of
# another number of lengths than --batch, a --ctx list, a kernel that takes no ragged batch
printf '1024\n12x\n' >"$tmp/bad.txt"
: >"$tmp/empty.txt"
printf '1024\n0\n' >"$tmp/zero.txt"
printf '1024\n2048\n4k\n' >"$tmp/three.txt"
for v in '' fixed: uniform uniform:1k uniform:0:8 uniform:8:4 uniform:1x:2k uniform:1k:2k:-1 \
         uniform:1k:2k:x normal:1:2 file: "file:$tmp/missing.txt" "file:$tmp/bad.txt" "file:$tmp/empty.txt" \
         "file:$tmp/zero.txt"; do
    bad run --kernel fused --ctx-dist "$v"
done
bad run --kernel fused --batch 2 --ctx-dist "file:$tmp/three.txt"
bad run --kernel fused --batch 4 --ctx-dist "file:$tmp/three.txt"
bad sweep --kernels fused --out "$csv" --batch 2,3 --ctx-dist "file:$tmp/three.txt"
bad sweep --kernels fused --out "$csv" --ctx 1k,2k --ctx-dist uniform:1k:4k
bad run --kernel cublas-bifurcated --batch 4 --beam 2 --ctx-dist uniform:1k:4k
bad run --kernel cublas --batch 4 --ctx-dist uniform:1k:4k
bad table --in tests/fixtures/compare_base.csv --ctx-dist uniform:1k:4k
# Share-Attention maps (--share-map, read with cJSON) and the approximation's options
map="$tmp/map.json"
printf '%s\n' '{"layers": [{"essential_heads": [0, 2], "share_to": {"1": 0, "3": 2}}]}' >"$map"
badmap() { # JSON text: the map must be refused
    printf '%s\n' "$1" >"$tmp/bad.json"
    bad sweep --dry-run --kernels share --heads 4 --kv-heads 2 --share-map "$tmp/bad.json"
    bad run --kernel share --heads 4 --kv-heads 2 --share-map "$tmp/bad.json"
}
badmap '{"layers": [{"essential_heads": [0, 2], "share_to": {"1": 0, "3": 2}}'
badmap ''
badmap '[]'
badmap '42'
badmap '{"layers": [{"share_to": {"1": 0}}]}'
badmap '{"layers": [{"essential_heads": [], "share_to": {"0": 1}}]}'
badmap '{"layers": [{"essential_heads": [0, 2], "share_to": [0, 0]}]}'
badmap '{"layers": [{"essential_heads": [0, 0], "share_to": {"1": 0}}]}'
badmap '{"layers": [{"essential_heads": [0, 2.5], "share_to": {"1": 0, "3": 0}}]}'
badmap '{"layers": [{"essential_heads": [0, 2], "share_to": {"1": 0, "3": 1}}]}'
badmap '{"layers": [{"essential_heads": [0, 2], "share_to": {"1": 0, "9": 2}}]}'
badmap '{"layers": [{"essential_heads": [0, 2], "share_to": {"2": 0, "1": 0}}]}'
badmap '{"layers": [{"essential_heads": [0, 1], "share_to": {"x": 0}}]}'
badmap '{"layers": [{"essential_heads": [0, 1, 2, 3], "share_to": {}}, {"essential_heads": [0], "share_to": {"1": 0}}]}'
badmap '{"0": {"essential_heads": [0, 1, 2, 3], "share_to": {}}, "0": {"essential_heads": [0, 1, 2, 3], "share_to": {}}}'
bad sweep --dry-run --kernels share --heads 4 --kv-heads 2 --share-map "$tmp/missing.json"
bad sweep --dry-run --kernels share --heads 8 --kv-heads 2 --share-map "$map"
bad sweep --dry-run --kernels share --heads 4 --kv-heads 2 --share-map "$map" --share-layer 1
bad sweep --dry-run --kernels share --heads 4 --kv-heads 2 --share-layer 1
bad sweep --dry-run --kernels share --share-map ''
for v in 1 1.5 -0.1 x ''; do bad run --kernel share --share-fraction "$v"; done
bad run --kernel share --heads 4 --kv-heads 4 --share-fraction 0.9
for v in sharp '' 1; do bad run --kernel share --scores "$v"; done
bad run --kernel share --scores peaked --sink-logit 99
bad run --kernel share --scores peaked --heavy-logit -1
bad run --kernel share --scores peaked --head-dim 8 --recent-logit 20

# CSV input of table and compare
bad table --in "$tmp/missing.csv"
bad compare "$tmp/missing-a.csv" "$tmp/missing-b.csv"

for c in run sweep verify list peak table compare merge; do check_help "$c"; done

echo "bad input: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
