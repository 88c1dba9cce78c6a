#!/bin/sh
# Measures what results/<gpu>/ holds, on the GPU this runs on:
#   bench/collect.sh OUT_DIR STEP...
# Steps: peak verify-quick verify-full sanitize SUITE (any bench/suites/SUITE.suite,
# swept with --verify into OUT_DIR/SUITE.csv). Every command is echoed into
# OUT_DIR/commands.txt before it runs and its output kept in OUT_DIR/<step>.log, so each
# file in results/ carries the command that made it.
set -u
out=$1
shift
bin=${ATTNBENCH:-build/attnbench}
mkdir -p "$out"
status=0
step() { # name, command...
    name=$1
    shift
    echo "$*" >> "$out/commands.txt"
    echo "== $name: $*"
    start=$(date +%s)
    "$@" > "$out/$name.log" 2>&1
    rc=$?
    echo "== $name: exit $rc after $(( $(date +%s) - start )) s"
    tail -n 4 "$out/$name.log"
    [ $rc -eq 0 ] || status=1
}
for s in "$@"; do
    case $s in
    peak) step peak "$bin" peak ;;
    verify-quick) step verify-quick "$bin" verify --suite quick ;;
    verify-full) step verify-full "$bin" verify --suite full ;;
    sanitize)
        step memcheck compute-sanitizer --target-processes all --tool memcheck --error-exitcode 1 "$bin" verify --suite quick
        step racecheck compute-sanitizer --target-processes all --tool racecheck --error-exitcode 1 "$bin" verify --suite quick ;;
    *) step "$s" "$bin" sweep --suite "$s" --verify --out "$out/$s.csv" --force ;;
    esac
done
exit $status
