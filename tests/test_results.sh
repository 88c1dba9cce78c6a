#!/bin/sh
# make results' driver (bench/results.sh) with a stand-in attnbench and
# compute-sanitizer (no GPU needed): every step runs once, a second call skips them,
# a sweep resumes, a directory of another revision is refused, a part runs alone,
# a closed window stops the call with exit 3 and the next call goes on, RESULTS_ARGS
# reaches every verify and sweep, the ci suite runs twice and is compared both ways,
# and another GPU's folder is refused.
passed=0
failed=0
check() { # name, condition...
    name=$1
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
cat > "$tmp/bin/attnbench" <<'STUB'
#!/bin/sh
echo "$*" >> "$STUB_CALLS"
case $1 in
peak) echo "gpu              Fake GPU (fake)" ;;
list) [ -n "${STUB_STUBS:-}" ] && echo "                   peer: FlashInfer 0.7.2 (not built)" ;;
verify) [ -n "${STUB_SLEEP:-}" ] && sleep "$STUB_SLEEP"; [ -n "${STUB_MISMATCH:-}" ] && exit 1; echo verified ;;
sweep) shift; while [ $# -gt 0 ]; do [ "$1" = --out ] && echo row >> "$2"; shift; done ;;
table) echo "| table |" ;;
compare) if [ -n "${STUB_REGRESS:-}" ]; then exit 1; fi ;;
esac
STUB
cat > "$tmp/bin/compute-sanitizer" <<'STUB'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in --*) shift 2 ;; *) break ;; esac; done   # --option value
exec "$@"
STUB
chmod +x "$tmp/bin/attnbench" "$tmp/bin/compute-sanitizer"
export PATH="$tmp/bin:$PATH" ATTNBENCH="$tmp/bin/attnbench" STUB_CALLS="$tmp/calls"
export RESULTS_DIR="$tmp/out" RESULTS_SUITES="paper6 ci" REVISION=abc123
run() { sh bench/results.sh "$@" > "$tmp/log" 2>&1; echo $? > "$tmp/rc"; }
rc() { [ "$(cat "$tmp/rc")" = "$1" ]; }
has() { grep -q -- "$1" "$2"; }
lacks() { ! grep -q -- "$1" "$2"; }

run
check "first call completes" has "results: complete (revision abc123)" "$tmp/log"
check "first call exits 0" rc 0
check "commands.txt names the revision" has "^# revision abc123$" "$tmp/out/commands.txt"
check "a sweep per suite" has "sweep --suite paper6 --out $tmp/out/paper6.csv --resume" "$tmp/calls"
check "the reference's budget 0.2 s by default" has "sweep --suite ci .*--resume --verify-time 0.2$" "$tmp/calls"
check "the paper table" has "| table |" "$tmp/out/paper6.md"
check "sanitizers run verify" has "compute-sanitizer .*racecheck" "$tmp/out/commands.txt"
check "the 8-bit and share verification suites" has "verify --suite verify-kvq .*# > verify-kvq.log" "$tmp/out/commands.txt"
check "verify-share too" has "verify --suite verify-share .*# > verify-share.log" "$tmp/out/commands.txt"
check "no peers' verification without their suites" lacks "verify-peers" "$tmp/out/commands.txt"
check "the ci suite twice" has "sweep --suite ci --out $tmp/out/ci-again.csv --resume" "$tmp/calls"
check "compared both ways" has "compare $tmp/out/ci-again.csv $tmp/out/ci.csv --threshold 0.03" "$tmp/calls"
check "reproduce recorded" has "^build/attnbench compare .*/ci.csv .*/ci-again.csv --threshold 0.03" "$tmp/out/commands.txt"
lines=$(grep -cv '^[[:space:]]*\(#\|$\)' bench/suites/verify-quick.suite)
check "verify-quick line by line" [ "$(grep -c '^# line [0-9]*: exit 0' "$tmp/out/verify-quick.log")" -eq "$lines" ]

: > "$tmp/calls"
run
check "second call runs nothing again" [ "$(grep -cv '^peak' "$tmp/calls")" -eq 0 ]
check "second call complete" has "results: complete" "$tmp/log"
check "commands recorded once" [ "$(grep -c 'sweep --suite ci --out [^ ]*/ci.csv' "$tmp/out/commands.txt")" -eq 1 ]

REVISION=def456 run
check "another revision refused" rc 2
check "another revision named" has "holds '# revision abc123'" "$tmp/log"

rm -rf "$tmp/out"
: > "$tmp/calls"
run 2
check "PART=2 runs verify-quick alone" [ "$(grep -c '^verify' "$tmp/calls")" -eq "$lines" ]
check "PART=2 leaves the rest" has "still to run: peak memcheck" "$tmp/log"
run nonsense
check "an unknown part is refused" rc 2

rm -rf "$tmp/out"
STUB_SLEEP=2 RESULTS_SECONDS=1 run
check "a closed window exits 3" rc 3
check "a closed window says so" has "window closed during verify-quick" "$tmp/log"
run
check "the next call goes on to the end" has "results: complete" "$tmp/log"

rm -rf "$tmp/out"
STUB_REGRESS=1 run
check "a row that does not reproduce fails the call" has "results: failed: reproduce" "$tmp/log"

rm -rf "$tmp/out"
STUB_MISMATCH=1 run verify-quick
check "a mismatch fails the call" rc 1
check "a mismatch names the step" has "results: failed: verify-quick" "$tmp/log"

rm -rf "$tmp/out"
RESULTS_ARGS="--verify-time 0.2" run
check "RESULTS_ARGS reaches the sweeps" has "sweep --suite ci --out $tmp/out/ci.csv --resume --verify-time 0.2" "$tmp/calls"
check "RESULTS_ARGS reaches verify" has "^verify --suite .* --verify-time 0.2" "$tmp/calls"
check "RESULTS_ARGS recorded" has "sweep --suite ci .*--verify-time 0.2" "$tmp/out/commands.txt"
check "commands name build/attnbench" has "^build/attnbench sweep --suite ci" "$tmp/out/commands.txt"
check "not the path of this run's binary" lacks "$tmp/bin/attnbench" "$tmp/out/commands.txt"

STUB_STUBS=1 RESULTS_SUITES="ci peers" run
check "peers suite without the peers refused" rc 2
check "says how to build them" has "make peers" "$tmp/log"
STUB_STUBS=1 run
check "suites without peers run with stubs" rc 0
STUB_STUBS=1 RESULTS_SUITES="ci kvq-peers" run
check "the e4m3 peers' suite refused without the peers too" rc 2
RESULTS_DIR="$tmp/peers" RESULTS_SUITES="ci peers" run
check "with the peers' suite, their verification" has "verify --suite verify-peers .*# > verify-peers.log" "$tmp/peers/commands.txt"

rm -rf "$tmp/out"
: > "$tmp/calls"
RESULTS_ARGS= run
check "RESULTS_ARGS empty adds nothing" has "sweep --suite ci --out $tmp/out/ci.csv --resume$" "$tmp/calls"

sed -i 2s/fake/h100/ "$tmp/out/commands.txt"
run
check "another GPU's folder refused" rc 2
check "another GPU's folder named" has "holds another GPU's results" "$tmp/log"
RESULTS_DIR="$tmp/h200" run
check "a folder named for another GPU refused" rc 2
check "says so" has "named for another GPU" "$tmp/log"

echo "results driver: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
