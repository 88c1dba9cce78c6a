#!/bin/sh
# Renders every figure from the fixture CSVs into a temporary directory and checks
# that each PNG was written, is not empty and is a PNG. Prints "N passed, N failed";
# exit status 1 on any failure.
# usage: tests/test_plots.sh [ATTNBENCH]  (else $ATTNBENCH, else build/attnbench;
# without any it builds a small driver of the table command from the sources, so it
# runs before the whole tool links)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

ab=${1:-${ATTNBENCH:-$root/build/attnbench}}
if [ ! -x "$ab" ]; then
    cat > "$tmp/driver.c" <<'C'
int cmd_table(int argc, char **argv);
int main(int argc, char **argv)
{
    return argc > 1 ? cmd_table(argc - 1, argv + 1) : 2;
}
C
    ab=$tmp/attnbench
    ${CC:-gcc} -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -o "$ab" "$tmp/driver.c" \
        "$root/bench/cmd_table.c" "$root/report/csv.c" "$root/report/table.c" \
        "$root/problem/presets.c" -lm || { echo "0 passed, 1 failed (driver did not build)"; exit 1; }
fi

mkdir -p "$tmp/in"
for f in paper_h100.csv models_h100.csv multiblock_h100.csv; do
    cp "$root/tests/fixtures/$f" "$tmp/in/" || exit 1
done
# an unreadable file beside them is left out, not fatal
cp "$root/tests/fixtures/malformed_ragged.csv" "$tmp/in/"

passed=0
failed=0
check() {   # check NAME CONDITION...
    name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
    else
        echo "FAIL: $name"
        failed=$((failed + 1))
    fi
}

ATTNBENCH=$ab "$root/plots/render.sh" "$tmp/in" "$tmp/out" > "$tmp/log" 2>&1
rc=$?
check "render.sh exits 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/log"

is_png() {
    [ -s "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = "PNG" ]
}
for png in \
    fig6_mha_h32_g32_d128_fp16_L32.png fig6_gqa_h32_g8_d128_fp16_L32.png \
    fig6_mha_h20_g20_d128_fp16_L12.png fig6_gqa_h20_g4_d128_fp16_L15.png \
    fig6_mqa_h20_g1_d128_fp16_L16.png fig7_ctx8192.png bandwidth.png multiblock_gain.png; do
    check "$png written" is_png "$tmp/out/$png"
done
# nothing else, and nothing empty
n=$(find "$tmp/out" -name '*.png' 2>/dev/null | wc -l)
check "8 figures, no more" [ "$n" -eq 8 ]

# peers (tests/fixtures/peers_h100.csv, columns of today's files): lines of their own
# in Figures 6 and 7, named by kernel, in a dash pattern each
mkdir -p "$tmp/peers"
cp "$root/tests/fixtures/peers_h100.csv" "$tmp/peers/" || exit 1
RENDER_KEEP=$tmp/keep ATTNBENCH=$ab "$root/plots/render.sh" "$tmp/peers" "$tmp/out3" > "$tmp/log3" 2>&1
rc=$?
check "render.sh exits 0 on peers' rows" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || cat "$tmp/log3"
fig6=fig6_gqa_h32_g8_d128_fp16_L1
check "$fig6.png written" is_png "$tmp/out3/$fig6.png"
check "fig7_ctx2048.png written" is_png "$tmp/out3/fig7_ctx2048.png"
has_line() {   # has_line FIGURE TITLE: a column of the figure's kept data is titled so
    head -n 1 "$tmp/keep/$1.dat" 2>/dev/null | tr , '\n' | grep -qx "$2"
}
for line in "bifurcated W=1" "fused W=4" "flashinfer W=1" "xqa W=1" "cudnn W=4" "flashinfer-cascade W=4"; do
    check "$fig6 has the line $line" has_line "$fig6" "$line"
done
# bifurcated, fused and the four peers: six dash patterns
ndash=$(sed -n "s/.*dashes='\([^']*\)'.*/\1/p" "$tmp/keep/$fig6.vars" 2>/dev/null | tr ' ' '\n' | grep . | sort -u | wc -l)
check "$fig6: a dash pattern per kernel ($ndash)" [ "$ndash" -eq 6 ]
for line in "gqa flashinfer" "gqa xqa" "gqa bifurcated"; do
    check "fig7 has the line $line" has_line fig7_ctx2048 "$line"
done

# usage errors
ATTNBENCH=$ab "$root/plots/render.sh" "$tmp/in" > /dev/null 2>&1
check "render.sh without OUT_DIR exits 2" [ $? -eq 2 ]
mkdir -p "$tmp/empty"
ATTNBENCH=$ab "$root/plots/render.sh" "$tmp/empty" "$tmp/out2" > /dev/null 2>&1
check "render.sh on a directory without CSVs fails" [ $? -ne 0 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
