#!/bin/sh
# The layers point one way: bench/ (commands, options, help) uses harness/ and report/;
# the harness (running rows) uses kernels/, reference/ and report/'s row type; problem/
# (the problem, model presets, KV layouts, logical data, split plan, device info) lies
# below them all. Fails, naming each offending line, when a file includes from a layer
# it must not see:
#   problem/    nothing from bench/, harness/, kernels/, reference/, report/
#   report/     nothing from bench/, harness/, kernels/, reference/
#   reference/  nothing from bench/, harness/, kernels/, report/
#   kernels/    nothing from bench/, harness/, reference/, report/
#   harness/    nothing from bench/
# Usage: tests/check_layers.sh [ROOT]   (ROOT: the source tree, . by default)
root=${1:-.}
bad=0
check() { # layer, forbidden layers (a|b|c)
    [ -d "$root/$1" ] || return 0
    hits=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]([.][.]/)*($2)/" "$root/$1")
    if [ -n "$hits" ]; then
        printf '%s\n' "$hits" | sed "s|^$root/||; s|\$|   ($1/ must not include $(echo "$2" | sed 's/|/, /g'))|" >&2
        bad=1
    fi
}
check problem 'bench|harness|kernels|reference|report'
check report 'bench|harness|kernels|reference'
check reference 'bench|harness|kernels|report'
check kernels 'bench|harness|reference|report'
check harness 'bench'
[ "$bad" -eq 0 ] && echo "layers: no include points up"
exit "$bad"
