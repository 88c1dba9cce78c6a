#!/bin/sh
# Renders every figure that IN_DIR's results CSVs have data for into OUT_DIR:
#   fig6_<attn>_h<h>_g<g>_d<d>_<dtype>_L<layers>.png  latency vs context per W (Figure 6)
#   fig7_ctx<N>.png                         MHA vs GQA vs MQA vs W (paper Figure 7)
#   bandwidth.png                           achieved fraction of peak bandwidth per kernel
# Figures 6 and 7 draw the peers' rows (flashinfer, xqa, ...) as lines of their own
# beside bifurcated and fused: a dash pattern per peer, the kernel's name in the legend.
#   multiblock_gain.png                     speed-up of multi-block on/auto over off
# usage: plots/render.sh IN_DIR OUT_DIR   (ATTNBENCH=path overrides build/attnbench;
#        RENDER_KEEP=DIR keeps each figure's data and gnuplot variables there as
#        <figure>.dat and <figure>.vars)
# Exit status: 0 when every figure with data was written, 1 otherwise, 2 bad usage.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 IN_DIR OUT_DIR" >&2
    exit 2
fi
in_dir=$1
out_dir=$2
plot_dir=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$plot_dir")
ab=${ATTNBENCH:-$root/build/attnbench}

if [ ! -x "$ab" ]; then
    echo "render.sh: $ab is not built (make, or set ATTNBENCH)" >&2
    exit 2
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "render.sh: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2
    exit 2
fi
set -- "$in_dir"/*.csv
if [ ! -e "$1" ]; then
    echo "render.sh: no CSV files in $in_dir" >&2
    exit 2
fi
mkdir -p "$out_dir" || exit 2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# One table of every readable file with the first such file's columns; files that
# do not read, or have other columns, are left out with a note.
all=$tmp/all.csv
for f in "$@"; do
    if ! "$ab" table --in "$f" --rows gpu --cols kernel --format csv >/dev/null; then
        echo "render.sh: $f left out" >&2
    elif [ ! -s "$all" ]; then
        cat "$f" > "$all"
    elif [ "$(head -n 1 "$f")" = "$(head -n 1 "$all")" ]; then
        tail -n +2 "$f" >> "$all"
    else
        echo "render.sh: $f: columns differ from the first file's, left out" >&2
    fi
done
if [ ! -s "$all" ]; then
    echo "render.sh: no readable results CSV in $in_dir" >&2
    exit 1
fi

failed=0
written=0

# The peer kernels, from `attnbench list` (a "peer:" line under each peer's name),
# else the registry's at the time of writing.
peers=$("$ab" list 2>/dev/null | awk '/^[^ ]/ { name = $1 } /^ +peer: / { printf "%s%s", (n++ ? "," : ""), name }')
[ -n "$peers" ] || peers=flashinfer,xqa,flashinfer-cascade,cudnn

# gnuplot with the shared -e variables; checks the PNG is there and not empty. $dat
# is the figure's data file.
draw() {   # draw SCRIPT PNG VARS
    script=$1 png=$2 vars=$3
    rm -f "$png"
    if [ -n "${RENDER_KEEP:-}" ]; then
        mkdir -p "$RENDER_KEEP" && cp "$dat" "$RENDER_KEEP/$(basename "$png" .png).dat" &&
            printf '%s\n' "$vars" > "$RENDER_KEEP/$(basename "$png" .png).vars"
    fi
    if gnuplot -e "plotdir='$plot_dir'; out='$png'; $vars" "$plot_dir/$script" 2>"$tmp/gp.err" &&
       [ -s "$png" ]; then
        echo "wrote $png"
        written=$((written + 1))
    else
        echo "render.sh: $png not written:" >&2
        cat "$tmp/gp.err" >&2
        failed=$((failed + 1))
    fi
}

# The data lines of a pivot (header aside); empty when the pivot failed.
has_data() { [ "$(wc -l < "$1")" -gt 1 ]; }
ncols() { head -n 1 "$1" | awk -F, '{ print NF }'; }

# Per data column of a pivot whose headers are "kernel W" or "attn kernel": dash 1
# for bifurcated, 2 for fused, 3 on for each peer (in $peers' order); colour by the
# word that is not the kernel.
styles() {   # styles FILE -> sets dashes, colors
    dashes=$(head -n 1 "$1" | awk -F, -v peers="$peers" '
        BEGIN { np = split(peers, p, ","); for (j = 1; j <= np; j++) dash[p[j]] = 2 + j }
        { for (i = 2; i <= NF; i++) {
            n = split($i, w, " "); d = 2
            for (j = 1; j <= n; j++) if (w[j] == "bifurcated") d = 1; else if (w[j] in dash) d = dash[w[j]]
            printf "%s ", d } }')
    colors=$(head -n 1 "$1" | awk -F, -v peers="$peers" '
        BEGIN { np = split(peers, p, ","); for (j = 1; j <= np; j++) kern[p[j]] = 1
                kern["bifurcated"] = 1; kern["fused"] = 1 }
        { for (i = 2; i <= NF; i++) {
            n = split($i, w, " "); key = (w[1] in kern) ? w[n] : w[1]
            if (!(key in c)) c[key] = ++k
            printf "%d ", c[key]
        } }')
}

# ---- Figure 6: one per attention shape with bifurcated rows of one request ----
"$ab" table --in "$all" --rows heads,kv_heads,head_dim,dtype,attn,layers --cols kernel --value iters \
    --where batch=1 --where kernel=bifurcated --format csv > "$tmp/shapes.csv" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
tail -n +2 "$tmp/shapes.csv" | cut -d, -f1 | while read -r h g d dt at L; do
    dat=$tmp/fig6_$h-$g-$d-$dt-$L.csv
    "$ab" table --in "$all" --rows ctx --cols kernel,beam --value ms_per_token \
        --where batch=1 --where kernel=bifurcated,fused,"$peers" --where cache=contiguous \
        --where heads="$h" --where kv_heads="$g" --where head_dim="$d" --where dtype="$dt" \
        --where layers="$L" --format csv > "$dat" || continue
    has_data "$dat" || continue
    styles "$dat"
    # legend "kernel W=N"; the W of each column picks its colour, so bifurcated and
    # fused of one W match
    awk -F, 'NR == 1 { for (i = 2; i <= NF; i++) { n = split($i, w, " "); $i = w[1] " W=" w[n] } }
             { print }' OFS=, "$dat" > "$dat.tmp" && mv "$dat.tmp" "$dat"
    colors=$(head -n 1 "$dat" | awk -F, '{ for (i = 2; i <= NF; i++) { split($i, w, " "); if (!(w[2] in c)) c[w[2]] = ++k; printf "%d ", c[w[2]] } }')
    draw fig6_latency_vs_context.gp "$out_dir/fig6_${at}_h${h}_g${g}_d${d}_${dt}_L${L}.png" \
        "datafile='$dat'; ncols=$(ncols "$dat"); dashes='$dashes'; colors='$colors'; what='$at h=$h g=$g d=$d $dt, $L layers'"
    echo "$written $failed" > "$tmp/count"
done
[ -f "$tmp/count" ] && read -r written failed < "$tmp/count"

# ---- Figure 7: attention types against W, at the context length most rows have ----
ctx=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "ctx") c = i; if ($i == "batch") b = i }; next }
               $b == 1 { n[$c]++ } END { for (k in n) if (n[k] > best) { best = n[k]; m = k }; print m }' "$all")
models=""
if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "model") m = i; next }
            m && $m ~ /^1b-m[hgq]$/ { found = 1 } END { exit !found }' "$all"; then
    # the paper's Figure 7 compares the 1B family of Table 4
    models="--where model=1b-mh,1b-mg,1b-mq"
fi
# one layer count per figure, the commonest at that context: per-layer sweeps and
# whole-model tables do not mix (the 1B family keeps each model's own count)
layers=""
if [ -z "$models" ]; then
    layers=$(awk -F, -v ctx="$ctx" 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "ctx") c = i; if ($i == "batch") b = i; if ($i == "layers") l = i }; next }
                      $b == 1 && $c == ctx { n[$l]++ } END { for (k in n) if (n[k] > best) { best = n[k]; m = k }; print m }' "$all")
fi
if [ -n "$ctx" ]; then
    dat=$tmp/fig7.csv
    # shellcheck disable=SC2086
    if "$ab" table --in "$all" --rows beam --cols attn,kernel --value ms_per_token \
           --where batch=1 --where kernel=bifurcated,fused,"$peers" --where cache=contiguous \
           --where ctx="$ctx" ${layers:+--where layers="$layers"} $models --format csv > "$dat" && has_data "$dat"; then
        styles "$dat"
        draw fig7_attention_types.gp "$out_dir/fig7_ctx$ctx.png" \
            "datafile='$dat'; ncols=$(ncols "$dat"); dashes='$dashes'; colors='$colors'; what='context $ctx${layers:+, $layers layer(s)}${models:+, models 1b-mh/mg/mq}'"
    fi
fi

# ---- achieved bandwidth ----
dat=$tmp/bandwidth.csv
if "$ab" table --in "$all" --rows bytes --cols kernel --value pct_peak_bw --where status=ok \
       --format csv > "$dat" && has_data "$dat"; then
    draw bandwidth.gp "$out_dir/bandwidth.png" "datafile='$dat'; ncols=$(ncols "$dat")"
fi

# ---- multi-block gain of fused ----
piv=$tmp/multiblock.csv
dat=$tmp/multiblock.dat
if "$ab" table --in "$all" --rows ctx,heads,kv_heads,head_dim,dtype,cache,batch,beam \
       --cols multi_block --value median_us --where kernel=fused --format csv > "$piv" &&
   has_data "$piv"; then
    # series "ctx<N>/h<h>/g<g>", x = B*W; only rows with off and on or auto measured
    awk -F, 'NR == 1 { for (i = 2; i <= NF; i++) col[$i] = i; next }
             { split($1, k, " "); off = $(col["off"]) + 0
               on = ("on" in col) ? $(col["on"]) : "-"; au = ("auto" in col) ? $(col["auto"]) : "-"
               if (!("off" in col) || $(col["off"]) !~ /^[0-9.]+$/ || off <= 0) next
               s_on = (on ~ /^[0-9.]+$/ && on > 0) ? off / on : "-"
               s_au = (au ~ /^[0-9.]+$/ && au > 0) ? off / au : "-"
               if (s_on == "-" && s_au == "-") next
               printf "ctx%s/h%s/g%s/%s/%s %d %s %s\n", k[1], k[2], k[3], k[5], k[6], k[7] * k[8], s_on, s_au }' \
        "$piv" | sort -k1,1 -k2,2n > "$tmp/mb.long"
    if [ -s "$tmp/mb.long" ]; then
        awk '$1 != prev { if (NR > 1) printf "\n\n"; prev = $1 } { print $2, $3, $4 }' "$tmp/mb.long" > "$dat"
        titles=$(awk '{ print $1 }' "$tmp/mb.long" | uniq | tr '\n' ' ')
        nseries=$(echo "$titles" | wc -w)
        draw multiblock_gain.gp "$out_dir/multiblock_gain.png" \
            "datafile='$dat'; nseries=$nseries; titles='$titles'"
    fi
fi

echo "render.sh: $written figures written, $failed failed"
[ "$failed" -eq 0 ]
