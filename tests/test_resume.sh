#!/bin/sh
# --out, --resume, --force and the CSV readers never damage a file: every refused
# command exits 2 with one line on stderr and leaves the file byte for byte as it
# was. Without a GPU, a command that passes every check still changes nothing, since
# the file is touched only once the first row is measured.
# Usage: sh tests/test_resume.sh build/attnbench
bin=${1:-build/attnbench}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnbench_resume.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
limit=""
command -v timeout >/dev/null 2>&1 && limit="timeout 20"
base=tests/fixtures/compare_base.csv

fail() { failed=$((failed + 1)); echo "FAIL: $*" >&2; sed 's/^/    stderr: /' "$tmp/stderr" | head -3 >&2; }

# refused FILE STATUS ARGS...: exit STATUS (2 unless said), one line on stderr, FILE
# byte-identical afterwards (or still absent).
refused() {
    file=$1 want=$2
    shift 2
    if [ -e "$file" ] && [ -f "$file" ]; then cp "$file" "$tmp/before"; else rm -f "$tmp/before"; fi
    $limit "$bin" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    lines=$(wc -l <"$tmp/stderr" | tr -d ' ')
    if [ "$rc" -ne "$want" ]; then fail "attnbench $*: exit $rc, not $want"; return; fi
    if [ "$lines" -ne 1 ]; then fail "attnbench $*: $lines lines on stderr, not 1"; return; fi
    if [ -f "$tmp/before" ] && ! cmp -s "$tmp/before" "$file"; then fail "attnbench $*: $file changed"; return; fi
    if [ ! -f "$tmp/before" ] && [ -f "$file" ]; then fail "attnbench $*: $file was made"; return; fi
    passed=$((passed + 1))
}

# says NEEDLE: the last command's stderr holds NEEDLE.
says() {
    if grep -q -- "$1" "$tmp/stderr"; then passed=$((passed + 1)); else fail "stderr lacks '$1'"; fi
}

csv="$tmp/core.csv"
cp "$base" "$csv"

# an existing results CSV without --resume or --force
refused "$csv" 2 sweep --beam 1 --out "$csv"
says "--force replaces it"
# files that are not results CSVs: refused with --force and --resume too
printf '# Title\n\nSome prose, with a comma.\n' > "$tmp/README.md"
for flag in "" --force --resume; do refused "$tmp/README.md" 2 sweep --beam 1 --out "$tmp/README.md" $flag; done
refused "$tmp/README.md" 2 run --kernel fused --out "$tmp/README.md"
printf '{"rows": [1, 2, 3], "note": "a JSON file without a final newline"}' > "$tmp/data.json"
refused "$tmp/data.json" 2 sweep --beam 1 --out "$tmp/data.json" --resume
printf 'line one\nline two\nline three\n' > "$tmp/notes.txt"
refused "$tmp/notes.txt" 2 sweep --beam 1 --out "$tmp/notes.txt" --resume
# a CSV whose header is not a results CSV's: its last row stays
{ printf 'gpu,attn,kernel'; head -n 1 "$base" | cut -d, -f4- | sed 's/^/,/'; tail -n +2 "$base"; } > "$tmp/foreign.csv"
refused "$tmp/foreign.csv" 2 sweep --beam 1 --out "$tmp/foreign.csv" --resume
# a results CSV malformed in the middle: refused whole, its torn tail kept as it is
{ head -n 3 "$base"; echo 'h100,fused,gqa,1'; tail -n +4 "$base"; printf 'h100,fused,gqa,1,16'; } > "$tmp/broken.csv"
refused "$tmp/broken.csv" 2 sweep --beam 1 --out "$tmp/broken.csv" --resume
says "broken.csv:4:"
# special files
mkfifo "$tmp/fifo"
refused "$tmp/fifo" 2 sweep --beam 1 --out "$tmp/fifo"
says "not a regular file"
refused "$tmp/fifo" 2 table --in "$tmp/fifo" --rows ctx --cols beam
refused "$tmp/fifo" 2 compare "$tmp/fifo" "$base"
mkdir "$tmp/dir"
refused "$tmp/dir" 2 sweep --beam 1 --out "$tmp/dir"
refused /dev/null 2 sweep --beam 1 --out /dev/null
refused "$tmp/nodir/x.csv" 2 sweep --beam 1 --out "$tmp/nodir/x.csv"
# contradictions and later checks, all before the file
refused "$csv" 2 sweep --beam 1 --out "$csv" --resume --force
refused "$csv" 2 sweep --beam 1 --out "$csv" --force --iters 2000000
refused "$csv" 2 sweep --suite no-such-suite --out "$csv" --force
refused "$csv" 2 sweep --beam 1 --kv-heads 3 --out "$csv" --force
refused "$csv" 2 run --kernel cublas --cache paged --out "$csv" --force

# Without a GPU the checks pass and the first row never comes: nothing changes.
if "$bin" peak >/dev/null 2>&1; then
    echo "resume: a GPU is usable here, the no-GPU cases are skipped"
else
    refused "$csv" 1 sweep --beam 1 --out "$csv" --force
    refused "$tmp/new.csv" 1 sweep --beam 1 --out "$tmp/new.csv"
    cp "$base" "$tmp/torn.csv"
    printf 'h100,fused,gqa,1,16,32,8,128,81' >> "$tmp/torn.csv"
    refused "$tmp/torn.csv" 1 sweep --beam 1 --out "$tmp/torn.csv" --resume
    head -c -1 "$base" > "$tmp/nonl.csv"
    refused "$tmp/nonl.csv" 1 sweep --beam 1 --out "$tmp/nonl.csv" --resume
    refused "$csv" 1 run --kernel fused --out "$csv"
fi

echo "resume: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
