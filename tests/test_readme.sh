#!/bin/sh
# Runs the commands of README.md and results/README.md that need no GPU, and checks
# that the files and tables they show are the repository's.
#
# A command is a line of a ```sh code block (a line ending in \ goes on on the next).
# The rule for which ones run:
#   build/attnbench ...   runs with the binary under test, from the repository root,
#                         except `run`, `sweep`, `verify` and `peak` without --help:
#                         those need a GPU and are skipped;
#   make plots            runs its recipe, plots/render.sh on each results/<gpu>/, into a
#                         temporary directory (the committed figures stay as they are);
#   make ...              any other target is skipped: it builds, needs a GPU, or runs
#                         these tests;
#   anything else         fails the test: a command it cannot classify.
# A command must exit 0, or N where the line ends with "# exit N". A code block holding
# one `table` command must be followed by exactly that command's output. Every path
# under a source or results directory that the files name must exist.
# usage: tests/test_readme.sh [ATTNBENCH]   (default build/attnbench)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
bin=${1:-build/attnbench}
case $bin in /*) ;; *) bin=$root/$bin ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Splits a markdown file into $tmp/cmds (block number, tab, command per line) and
# $tmp/after.N (the non-blank lines after block N's closing fence, up to the next
# fence or heading).
extract() {
    rm -f "$tmp"/after.*
    awk -v dir="$tmp" '
        /^```/ {
            if (inblock) { inblock = 0; after = 1; next }
            after = 0
            if ($0 == "```sh") { inblock = 1; n++; pending = "" }
            next
        }
        inblock {
            line = pending $0
            if (line ~ /\\$/) { pending = substr(line, 1, length(line) - 1); next }
            pending = ""
            printf "%d\t%s\n", n, line
            next
        }
        /^#/ { after = 0 }
        after && NF { print > (dir "/after." n) }
    ' "$1" > "$tmp/cmds"
}

run_plots() { # renders every results/<gpu>/ as make plots does, into $tmp
    for d in results/*/; do
        gpu=$(basename "$d")
        case $gpu in baseline | profiles) continue ;; esac
        ls "$d"*.csv >/dev/null 2>&1 || continue
        ATTNBENCH=$bin plots/render.sh "$d" "$tmp/plots/$gpu" >"$tmp/out" 2>&1 </dev/null || return 1
    done
}

check_file() {
    file=$1
    extract "$file"
    tab=$(printf '\t')
    while IFS="$tab" read -r block line; do
        cmd=$(printf '%s\n' "$line" | sed 's/[[:space:]][[:space:]]*#.*$//')
        want=$(printf '%s\n' "$line" | sed -n 's/.*#[[:space:]]*exit \([0-9][0-9]*\).*/\1/p')
        want=${want:-0}
        case $cmd in
        "build/attnbench "* | build/attnbench)
            sub=$(printf '%s\n' "$cmd" | awk '{print $2}')
            case "$sub $cmd" in
            run\ * | sweep\ * | verify\ * | peak\ *)
                case $cmd in *--help*) ;; *) skipped=$((skipped + 1)); continue ;; esac ;;
            esac
            eval "\"\$bin\" ${cmd#build/attnbench}" >"$tmp/out" 2>"$tmp/err" </dev/null
            got=$?
            if [ "$got" != "$want" ]; then
                fail "$file: '$cmd' exited $got, want $want: $(head -n 1 "$tmp/err")"
                continue
            fi
            pass
            ones=$(awk -F '\t' -v b="$block" '$1 == b' "$tmp/cmds" | wc -l)
            if [ "$sub" = table ] && [ "$ones" -eq 1 ]; then
                grep -v '^$' "$tmp/out" > "$tmp/table"
                lines=$(wc -l < "$tmp/table")
                if [ -f "$tmp/after.$block" ] && head -n "$lines" "$tmp/after.$block" | cmp -s - "$tmp/table"; then
                    pass
                else
                    fail "$file: the table after '$cmd' is not its output"
                fi
            fi
            ;;
        "make plots")
            if command -v gnuplot >/dev/null 2>&1; then
                if run_plots; then pass; else fail "$file: make plots: $(tail -n 1 "$tmp/out")"; fi
            else
                skipped=$((skipped + 1))
            fi
            ;;
        make | "make "*) skipped=$((skipped + 1)) ;;
        *) fail "$file: '$cmd': not a command this test can classify" ;;
        esac
    done < "$tmp/cmds"

    # Paths the file names under the repository's directories (not templates such as
    # results/<gpu>/, not build outputs) must exist.
    for p in $(grep -oE '(bench|harness|kernels|reference|problem|results|plots|tests|docs)/[A-Za-z0-9_.<>{}*-][A-Za-z0-9_./<>{}*-]*' "$file" | sort -u); do
        case $p in *'<'* | *'{'* | *'*'*) continue ;; esac
        p=$(printf '%s\n' "$p" | sed 's/[.]*$//')
        if [ -e "$p" ]; then pass; else fail "$file names $p, which does not exist"; fi
    done
}

[ -x "$bin" ] || { echo "readme: $bin is not built"; exit 1; }
check_file README.md
check_file results/README.md
[ "$(wc -l < README.md)" -le 300 ] && pass || fail "README.md is $(wc -l < README.md) lines, more than 300"
echo "readme: $passed passed, $failed failed, $skipped GPU or build commands skipped"
[ "$failed" -eq 0 ]
