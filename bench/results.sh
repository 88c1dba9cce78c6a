#!/bin/sh
# Regenerates the official results of the GPU this runs on into results/<gpu>/, all
# from one revision (SPEC §8):
#   bench/results.sh [STEP|N ...]        (make results [PART=STEP|N])
# Steps, in order (N counts from 1): peak, verify-quick, memcheck, racecheck,
# synccheck, verify-full, verify-kvq, verify-share (and verify-peers where the suites
# hold the peers'), one sweep per suite of RESULTS_SUITES, reproduce (where ci is one:
# the ci suite swept again and compared with the first both ways), tables. Without
# arguments every step not yet done runs.
#
# Resumable and cut to fit a window: a call starts no step after RESULTS_SECONDS
# (default 540) and cuts a running one there (timeout); run it again until it prints
# "results: complete". A sweep resumes its CSV (--resume: finished rows are kept);
# the verification steps run their suite line by line and skip the lines their log
# already records as run. A step's log ends "# done: exit N" once it has run to the end;
# only exit 0 counts as done, so a later call runs a failed step again (a sweep's error
# rows, a verification suite's failed lines).
# Every command goes once into commands.txt, whose first line names the revision;
# a directory of another revision is refused (move it away first).
#
# Environment: ATTNBENCH (binary, default build/attnbench), REVISION (default
# git describe), RESULTS_DIR (default results/<gpu>), RESULTS_SUITES, RESULTS_SECONDS,
# RESULTS_ARGS (options added to every verify and sweep; default --verify-time 0.2:
# each row checks its 4,096 stratified output rows, or all of them, and more only
# where they fit in 0.2 s; the 1 s of an interactive verify would make the CPU
# reference most of a 2,000-row set's hour).
set -u
bin=${ATTNBENCH:-build/attnbench}
suites=${RESULTS_SUITES:-core multiblock beam paged bifurcated bifurcated-paged paper6 paper7 ci peers kvq kvq-peers qlen ragged append share}
budget=${RESULTS_SECONDS:-540}
extra=${RESULTS_ARGS---verify-time 0.2}
revision=${REVISION:-$(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)}
start=$(date +%s)

# the peers' suites (and then their verification step) need the peers, not their stubs
peers_verify=""
case " $suites " in *" peers "*|*" kvq-peers "*)
    peers_verify=verify-peers
    if "$bin" list 2>/dev/null | grep -q '(not built)'; then
        echo "results: the peers are not built (make peers, then make): their suite would be all unsupported rows" >&2
        exit 2
    fi ;;
esac

peak_out=$("$bin" peak 2>&1) || { echo "results: $bin peak failed: $peak_out" >&2; exit 1; }
gpu=$(printf '%s\n' "$peak_out" | awk '/^gpu/ {gsub(/[()]/, "", $NF); print $NF}')
name=$(printf '%s\n' "$peak_out" | sed -n 's/^gpu *//p')
out=${RESULTS_DIR:-results/$gpu}
mkdir -p "$out"
cmds=$out/commands.txt
head="# revision $revision"
case $(basename "$out") in
h[0-9]*|a[0-9]*|l[0-9]*|b[0-9]*)
    # a folder named for a GPU takes only that GPU's rows
    [ "$(basename "$out")" = "$gpu" ] || {
        echo "results: $out is named for another GPU than this one ($gpu)" >&2
        exit 2
    } ;;
esac
if [ -f "$cmds" ]; then
    first=$(head -n 1 "$cmds")
    if [ "$first" != "$head" ]; then
        echo "results: $out holds '$first', this binary is revision $revision: move it away to start anew" >&2
        exit 2
    fi
    sed -n 2p "$cmds" | grep -qF "($gpu)" || {
        echo "results: $out holds another GPU's results ($(sed -n 2p "$cmds")), this is $gpu" >&2
        exit 2
    }
else
    printf '%s\n# on %s; build/attnbench built with make at that revision, run from the repository root\n' \
        "$head" "$name" > "$cmds"
fi

left() { echo $((budget - ($(date +%s) - start))); }
# commands.txt names the binary as its header says (build/attnbench at that revision)
# and the folder as results/<gpu> when it is that one, wherever they lay for this run
shown_out=$out
if [ -d "results/$gpu" ] && [ "$(cd "$out" && pwd -P)" = "$(cd "results/$gpu" && pwd -P)" ]; then
    shown_out=results/$gpu
fi
record() {
    line=$(printf '%s\n' "$*" | sed -e "s|$bin|build/attnbench|g" -e "s|$out|$shown_out|g")
    grep -qxF -- "$line" "$cmds" || echo "$line" >> "$cmds"
}
done_step() { [ -f "$out/$1.log" ] && tail -n 1 "$out/$1.log" | grep -q '^# done: exit 0$'; }
finish() { # log, exit status
    echo "# done: exit $2" >> "$out/$1.log"
    echo "== $1: exit $2"
    [ "$2" -eq 0 ] || failed="$failed $1"
}

# A command for the rest of the window; 124 when the window closed on it.
bounded() {
    t=$(left)
    [ "$t" -gt 0 ] || return 124
    timeout "$t" "$@"
}

# name, suite, command prefix...: `verify --suite` one suite line at a time.
verify_step() {
    vname=$1 vsuite=$2
    shift 2
    log=$out/$vname.log
    record "${*:+$* }$bin verify --suite $vsuite${extra:+ $extra}   # > $vname.log"
    rc=0 line=0 tmp=$(mktemp -d)
    grep -v '^[[:space:]]*\(#\|$\)' "bench/suites/$vsuite.suite" > "$tmp/lines"
    while IFS= read -r text; do
        line=$((line + 1))
        grep -q "^# line $line: exit 0\( \|\$\)" "$log" 2>/dev/null && continue
        printf '%s\n' "$text" > "$tmp/line.suite"
        echo "# line $line: $text" >> "$log"
        began=$(date +%s)
        bounded "$@" "$bin" verify --suite "$tmp/line.suite" $extra < /dev/null >> "$log" 2>&1
        r=$?
        [ $r -eq 124 ] && { rm -rf "$tmp"; return 124; }
        echo "# line $line: exit $r in $(($(date +%s) - began)) s" >> "$log"
        [ $r -eq 0 ] || rc=1
    done < "$tmp/lines"
    rm -rf "$tmp"
    grep -q '^# line [0-9]*: exit [1-9]' "$log" && rc=1
    finish "$vname" $rc
}

sweep_step() { # suite
    record "$bin sweep --suite $1 --out $out/$1.csv --resume${extra:+ $extra}   # > $1.log"
    bounded "$bin" sweep --suite "$1" --out "$out/$1.csv" --resume $extra < /dev/null >> "$out/$1.log" 2>&1
    r=$?
    [ $r -eq 124 ] && return 124
    finish "$1" $r
}

# Issue 41's reproducibility check: the ci suite again in this call, and each run
# compared with the other both ways; every row must agree within its noise or 3%.
reproduce_step() {
    record "$bin sweep --suite ci --out $out/ci-again.csv --resume${extra:+ $extra}   # > reproduce.log"
    bounded "$bin" sweep --suite ci --out "$out/ci-again.csv" --resume $extra < /dev/null >> "$out/reproduce.log" 2>&1
    r=$?
    [ $r -eq 124 ] && return 124
    for pair in "ci.csv ci-again.csv" "ci-again.csv ci.csv"; do
        set -- $pair
        record "$bin compare $out/$1 $out/$2 --threshold 0.03   # >> reproduce.log"
        echo "# compare $1 $2 --threshold 0.03" >> "$out/reproduce.log"
        "$bin" compare "$out/$1" "$out/$2" --threshold 0.03 >> "$out/reproduce.log" 2>&1 || r=1
    done
    finish reproduce $r
}

tables_step() {
    rc=0
    for n in 6 7; do
        [ -f "$out/paper$n.csv" ] || continue
        record "$bin table --in $out/paper$n.csv --paper $n --format md > $out/paper$n.md"
        "$bin" table --in "$out/paper$n.csv" --paper $n --format md > "$out/paper$n.md" || rc=1
    done
    if [ -f "$out/share.csv" ]; then
        record "$bin table --in $out/share.csv --select-total --format md > $out/select-total.md"
        "$bin" table --in "$out/share.csv" --select-total --format md > "$out/select-total.md" || rc=1
    fi
    record "make plots   # plots/$gpu/*.png from $out/*.csv (gnuplot; no GPU needed)"
    echo "# tables written" > "$out/tables.log"
    finish tables $rc
}

run_step() {
    done_step "$1" && { echo "== $1: done before"; return 0; }
    echo "== $1: $(left) s left"
    case $1 in
    peak)
        record "$bin peak   # > peak.log"
        printf '%s\n' "$peak_out" > "$out/peak.log"
        finish peak 0 ;;
    verify-quick) verify_step verify-quick verify-quick ;;
    memcheck) verify_step memcheck verify-quick compute-sanitizer --target-processes all --tool memcheck --error-exitcode 1 ;;
    racecheck) verify_step racecheck verify-quick compute-sanitizer --target-processes all --tool racecheck --error-exitcode 1 ;;
    synccheck) verify_step synccheck verify-quick compute-sanitizer --target-processes all --tool synccheck --error-exitcode 1 ;;
    verify-full|verify-kvq|verify-peers|verify-share) verify_step "$1" "$1" ;;
    reproduce) reproduce_step ;;
    tables) tables_step ;;
    *) sweep_step "$1" ;;
    esac
}

reproduce=""
case " $suites " in *" ci "*) reproduce=reproduce ;; esac
all="peak verify-quick memcheck racecheck synccheck verify-full verify-kvq verify-share $peers_verify $suites $reproduce tables"
if [ $# -eq 0 ]; then set -- $all; fi
failed=""
for want in "$@"; do
    case $want in
    *[!0-9]*) step=$want ;;
    *) step=$(echo $all | cut -d' ' -f"$want") ;;
    esac
    case " $all " in *" $step "*) ;; *)
        echo "results: unknown part '$want' (one of: $all, or 1..$(echo $all | wc -w))" >&2
        exit 2 ;;
    esac
    run_step "$step"
    if [ $? -eq 124 ]; then
        echo "results: the window closed during $step; run again to go on"
        exit 3
    fi
done
pending=""
for s in $all; do done_step "$s" || pending="$pending $s"; done
if [ -n "$failed" ]; then echo "results: failed:$failed"; fi
if [ -z "$pending" ]; then echo "results: complete (revision $revision)"; else echo "results: still to run:$pending"; fi
[ -z "$failed" ]
