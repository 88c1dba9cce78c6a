#!/bin/sh
# Runs every CPU test: the cmocka binaries in BUILD/tests, then the shell tests of
# the command line (each gets the attnbench binary as its argument). Ends with one
# summary line CI can read, and fails if any test failed.
build=${1:-build}
passed=0
failed=0
failures=""
for t in "$build"/tests/test_*; do
    case $t in *.o|*.d) continue ;; esac
    [ -x "$t" ] || continue
    if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures="$failures $(basename "$t")"; fi
done
for t in tests/test_*.sh; do
    [ -f "$t" ] || continue
    if sh "$t" "$build/attnbench"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures="$failures $(basename "$t")"; fi
done
echo "cpu tests: $passed suites passed, $failed failed${failures:+ ($failures )}"
[ "$failed" -eq 0 ]
