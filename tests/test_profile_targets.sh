#!/bin/sh
# The profiling targets build the command lines the README promises: ncu restricted to
# the timed launches with the clocks left alone, nsys on the cudaProfilerApi range.
# Checked with make -n (no profiler or GPU needed).
passed=0
failed=0
check() { # name, command line, pattern that must appear
    if printf '%s\n' "$2" | grep -q -e "$3"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $1: '$3' not in: $2"; fi
}
args='run --kernel fused --beam 16 --ctx 8k'
ncu=$(make -s -n ncu ARGS="$args" 2>&1)
check "ncu clocks" "$ncu" "--clock-control none"
check "ncu range" "$ncu" "--profile-from-start off"
check "ncu runs the configuration with --profile" "$ncu" "attnbench $args --profile"
check "ncu report under results/profiles" "$ncu" "-o results/profiles/run_kernel_fused_beam_16_ctx_8k"
check "ncu metrics csv" "$ncu" "--csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum"
nsys=$(make -s -n nsys ARGS="$args" 2>&1)
check "nsys range" "$nsys" "--capture-range=cudaProfilerApi"
check "nsys runs the configuration with --profile" "$nsys" "attnbench $args --profile"
check "nsys report under results/profiles" "$nsys" "-o results/profiles/run_kernel_fused_beam_16_ctx_8k"
none=$(make -s ncu 2>&1)
check "ncu without ARGS explains itself" "$none" "set ARGS"
echo "profile targets: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
