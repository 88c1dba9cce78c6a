#!/bin/sh
# Runs the commands of README.md and results/README.md that need no GPU, and checks
# that the files and tables they show are the repository's.
#
# A command is a line of a ```sh code block (a line ending in \ goes on on the next).
# The rule for which ones run:
#   build/attnbench ...   runs with the binary under test, from the repository root,
#                         except `run`, `sweep`, `verify` and `peak` without --help or
#                         --dry-run: those need a GPU and are skipped;
#   bench/slurm-sweep.sh  needs a Slurm cluster: skipped (tests/test_slurm.sh runs it);
#   make plots            runs its recipe, plots/render.sh on each results/<gpu>/, into a
#                         temporary directory (the committed figures stay as they are);
#   make ...              any other target is skipped: it builds, needs a GPU, or runs
#                         these tests;
#   anything else         fails the test: a command it cannot classify.
# A command must exit 0, or N where the line ends with "# exit N". A code block holding
# one `table` command must be followed by exactly that command's output (the lines after
# the block that are blank, table rows or a paper table's caption). Every path under a
# source or results directory that the files name must exist.
# usage: tests/test_readme.sh [ATTNBENCH]      check (default build/attnbench)
#        tests/test_readme.sh --update [ATTNBENCH]   rewrite those tables from the CSVs
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
bin=${1:-build/attnbench}
case $bin in /*) ;; *) bin=$root/$bin ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Splits a markdown file into $tmp/cmds: block number, tab, command, one line each.
extract() {
    awk '
        /^```/ {
            if (inblock) inblock = 0
            else if ($0 == "```sh") { inblock = 1; n++; pending = "" }
            next
        }
        inblock {
            line = pending $0
            if (line ~ /\\$/) { pending = substr(line, 1, length(line) - 1); next }
            pending = ""
            printf "%d\t%s\n", n, line
        }
    ' "$1" > "$tmp/cmds"
}

# The markdown file with the output after each block of one `table` command run anew
# (the old output: the blank lines, table rows, paper captions, --vs-peers' caption and
# the flags' legend after the block).
tables_updated() {
    awk -v bin="$bin" '
        skipping {
            if ($0 == "" || $0 ~ /^\|/ || $0 ~ /^\*\*Table [0-9]+ analogue\*\*/ || $0 ~ /^`\*` noisy/ || $0 ~ /^attnbench.s kernels: /) next
            skipping = 0
            print ""
        }
        inblock && /^```/ {
            inblock = 0
            print
            if (n == 1 && cmd ~ /^build\/attnbench table /) {
                c = "\"" bin "\"" substr(cmd, length("build/attnbench") + 1)
                print ""
                while ((c | getline l) > 0) print l
                if (close(c) != 0) failed = 1
                skipping = 1
            }
            next
        }
        inblock { n++; cmd = $0; print; next }
        /^```sh$/ { inblock = 1; n = 0 }
        { print }
        END { exit failed }
    ' "$1"
}

run_plots() { # renders every results/<gpu>/ as make plots does, into $tmp
    for d in results/*/; do
        gpu=$(basename "$d")
        case $gpu in baseline | profiles | *-x2) continue ;; esac
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
                case $cmd in *--help* | *--dry-run*) ;; *) skipped=$((skipped + 1)); continue ;; esac ;;
            esac
            eval "\"\$bin\" ${cmd#build/attnbench}" >"$tmp/out" 2>"$tmp/err" </dev/null
            got=$?
            if [ "$got" != "$want" ]; then
                fail "$file: '$cmd' exited $got, want $want: $(head -n 1 "$tmp/err")"
                continue
            fi
            pass
            ;;
        "make plots")
            if command -v gnuplot >/dev/null 2>&1; then
                if run_plots; then pass; else fail "$file: make plots: $(tail -n 1 "$tmp/out")"; fi
            else
                skipped=$((skipped + 1))
            fi
            ;;
        make | "make "* | "bench/slurm-sweep.sh "*) skipped=$((skipped + 1)) ;;
        *) fail "$file: '$cmd': not a command this test can classify" ;;
        esac
    done < "$tmp/cmds"

    if tables_updated "$file" > "$tmp/updated" && cmp -s "$file" "$tmp/updated"; then
        pass
    else
        fail "$file: a table is not the output of the command above it:"
        diff "$file" "$tmp/updated" | head -n 6
    fi

    # Paths the file names under the repository's directories (not templates such as
    # results/<gpu>/, not build outputs) must exist.
    for p in $(grep -oE '(bench|harness|kernels|reference|problem|results|plots|tests|docs)/[A-Za-z0-9_.<>{}*-][A-Za-z0-9_./<>{}*-]*' "$file" | sort -u); do
        case $p in *'<'* | *'{'* | *'*'*) continue ;; esac
        p=$(printf '%s\n' "$p" | sed 's/[.]*$//')
        if [ -e "$p" ]; then pass; else fail "$file names $p, which does not exist"; fi
    done
}

[ -x "$bin" ] || { echo "readme: $bin is not built"; exit 1; }
if [ "$update" -eq 1 ]; then
    for f in README.md results/README.md; do
        tables_updated "$f" > "$tmp/updated" || { echo "readme: a table command of $f failed"; exit 1; }
        cp "$tmp/updated" "$f"
    done
    exit 0
fi
check_file README.md
check_file results/README.md
[ "$(wc -l < README.md)" -le 300 ] && pass || fail "README.md is $(wc -l < README.md) lines, more than 300"
echo "readme: $passed passed, $failed failed, $skipped GPU or build commands skipped"
[ "$failed" -eq 0 ]
