#!/bin/sh
# On a GPU: a sweep killed with SIGKILL half-way, then resumed with --resume, loses
# no finished row and runs none twice.
#   sh tests/gpu_kill_resume.sh BUILD_DIR OUT_DIR
# Sweeps 30 rows (fused and bifurcated, W 1-16, ctx 8k-32k, GQA g = 8; --min-time
# makes it last about a minute), kills the sweep (SIGKILL, its GPU process too) once a
# third of the rows are in, appends half a row as a write cut off by the kill would
# leave, resumes, and checks:
#   - the file's bytes up to the kill (its finished rows) are unchanged;
#   - the half row is gone;
#   - every (kernel, W, ctx) of the grid is there exactly once, none is an error;
#   - the resumed sweep reports as already done exactly the rows finished before.
# Writes OUT_DIR/kill_resume.log and OUT_DIR/kill_resume.csv; exit 0 when all hold.
# ATTNBENCH overrides BUILD_DIR/attnbench.
set -u
build=${1:?usage: gpu_kill_resume.sh BUILD_DIR OUT_DIR}
out=${2:?usage: gpu_kill_resume.sh BUILD_DIR OUT_DIR}
bin=${ATTNBENCH:-$build/attnbench}
mkdir -p "$out" || exit 1
csv="$out/kill_resume.csv"
log="$out/kill_resume.log"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_kill.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
rm -f "$csv"
: > "$log"

kernels="fused bifurcated"
beams="1 2 4 8 16"
ctxs="8192 16384 32768"
total=30
kill_at=10
grid="--kernels fused,bifurcated --kv-heads 8 --beam 1,2,4,8,16 --ctx 8k,16k,32k --min-time ${MIN_TIME:-0.5}"

say() { echo "$*" | tee -a "$log"; }
bad=0
check() { # what, got, want
    if [ "$2" = "$3" ]; then say "ok:   $1"; else say "FAIL: $1: got '$2', want '$3'"; bad=1; fi
}
rows_in() { # data rows (complete lines after the header) of the CSV, 0 when none
    if [ -f "$csv" ]; then n=$(wc -l < "$csv"); echo $(( n > 0 ? n - 1 : 0 )); else echo 0; fi
}

say "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $("$bin" --version)"
"$bin" peak >> "$log" 2>&1 || { say "FAIL: no usable GPU (attnbench peak)"; exit 1; }

# 1. the sweep, killed once kill_at rows are in
say "\$ attnbench sweep $grid --out $csv   (killed after $kill_at rows)"
# shellcheck disable=SC2086
"$bin" sweep $grid --out "$csv" > "$tmp/first.out" 2>&1 &
pid=$!
waited=0
while [ "$(rows_in)" -lt "$kill_at" ] && kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 6000 ]; do
    sleep 0.1
    waited=$((waited + 1))
done
children=$(ps -o pid= --ppid "$pid" 2>/dev/null)
kill -9 "$pid" 2>/dev/null
killed=$?
for c in $children; do kill -9 "$c" 2>/dev/null; done
wait "$pid" 2>/dev/null
for c in $children; do while kill -0 "$c" 2>/dev/null; do sleep 0.1; done; done
cat "$tmp/first.out" >> "$log"
before=$(rows_in)
say "killed: $( [ "$killed" -eq 0 ] && echo yes || echo 'no, it had ended') with $before rows in"
if [ "$killed" -ne 0 ] || [ "$before" -ge "$total" ] || [ "$before" -lt 1 ]; then
    say "FAIL: the sweep was not killed half-way ($before of $total rows); set MIN_TIME higher"
    exit 1
fi

# 2. the finished part, and a row cut off mid-write
last=$(tail -c 1 "$csv" | od -An -c | tr -d ' ')
check "the killed sweep's file ends with a whole row" "$last" '\n'
cp "$csv" "$tmp/finished.csv"
printf '%s' "$(sed -n 2p "$csv" | cut -c1-40)" >> "$csv"

# 3. resume
say "\$ attnbench sweep $grid --out $csv --resume"
# shellcheck disable=SC2086
"$bin" sweep $grid --out "$csv" --resume > "$tmp/resume.out" 2>&1
rc=$?
cat "$tmp/resume.out" >> "$log"
check "resume exit status" "$rc" 0

# 4. the checks
size=$(wc -c < "$tmp/finished.csv")
head -c "$size" "$csv" > "$tmp/prefix.csv"
check "finished rows unchanged, byte for byte" "$(cmp -s "$tmp/prefix.csv" "$tmp/finished.csv" && echo same || echo changed)" same
check "the file ends with a whole row" "$(tail -c 1 "$csv" | od -An -c | tr -d ' ')" '\n'
check "rows in the file" "$(rows_in)" "$total"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         { print $col["kernel"], $col["beam"], $col["ctx"] }' "$csv" | sort > "$tmp/have"
for k in $kernels; do for w in $beams; do for c in $ctxs; do echo "$k $w $c"; done; done; done | sort > "$tmp/want"
check "rows run twice" "$(uniq -d "$tmp/have" | tr '\n' ';')" ""
check "grid rows lost or foreign" "$(sort -u "$tmp/have" | comm -3 - "$tmp/want" | tr '\n\t' '; ')" ""
check "error rows" "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") s = i; next } $s == "error"' "$csv" | wc -l | tr -d ' ')" 0
skipped=$(sed -n 's/.*, \([0-9]*\) already in .*/\1/p' "$tmp/resume.out")
check "rows the resumed sweep found done" "${skipped:-0}" "$before"
check "rows the resumed sweep ran" "$(sed -n 's/^# \([0-9][0-9]*\) rows.*/\1/p' "$tmp/resume.out")" "$((total - before))"

cp "$csv" "$tmp/final.csv"
say "# $( [ "$bad" -eq 0 ] && echo PASS || echo FAIL ): killed after $before of $total rows, resumed"
exit "$bad"
