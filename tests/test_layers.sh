#!/bin/sh
# tests/check_layers.sh (part of make lint) on small made-up trees: it passes a tree
# whose includes point down and fails each include that points up, naming the line.
passed=0
failed=0
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # name, expected exit status, tree
    out=$("$here/check_layers.sh" "$3" 2>&1)
    rc=$?
    if [ "$rc" -eq "$2" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $1: exit $rc, not $2: $out"; fi
}
tree() { # name: a tree whose includes all point down
    d="$tmp/$1"
    mkdir -p "$d/problem" "$d/kernels" "$d/reference" "$d/report" "$d/harness" "$d/bench"
    echo '#include "hd.h"' > "$d/problem/problem.h"
    echo '#include "../problem/problem.h"' > "$d/kernels/registry.h"
    echo '#include "../problem/kv_fill.h"' > "$d/reference/reference.c"
    echo '#include "../problem/presets.h"' > "$d/report/table.c"
    printf '#include "../kernels/registry.h"\n#include "../reference/reference.h"\n' > "$d/harness/runner.c"
    printf '#include "../report/csv.h"\n#include "../kernels/registry.h"\n' > "$d/harness/runner.h"
    printf '#include "../harness/runner.h"\n#include "../report/table.h"\n' > "$d/bench/cmd_run.c"
    echo "$d"
}
check "includes pointing down" 0 "$(tree down)"
d=$(tree ref); echo '#include "../kernels/kv_fill.h"' >> "$d/reference/reference.h"
check "reference including kernels" 1 "$d"
d=$(tree harness); echo '#  include "../bench/usage.h"' >> "$d/harness/options.c"
check "harness including bench" 1 "$d"
d=$(tree kern); echo '#include "../harness/problem.h"' >> "$d/kernels/registry.h"
check "kernels including harness" 1 "$d"
d=$(tree rep); echo '#include "../harness/runner.h"' >> "$d/report/csv.c"
check "report including harness" 1 "$d"
d=$(tree prob); echo '#include <kernels/registry.h>' >> "$d/problem/split_plan.h"
check "problem including kernels" 1 "$d"
d=$(tree named); echo '#include "../kernels/kv_fill.h"' >> "$d/reference/reference.c"
out=$("$here/check_layers.sh" "$d" 2>&1)
case $out in *"reference/reference.c:2:"*) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)); echo "FAIL: offending line not named: $out" ;; esac
echo "layers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
