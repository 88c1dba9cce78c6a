#!/bin/sh
# A sweep as a Slurm job array: one array task per shard (attnbench sweep --shard I/N
# into DIR/shard-I.csv, with --resume, so that a task run again goes on where it
# stopped), then a job that waits for every task to succeed (--dependency=afterok) and
# joins the shards' CSVs with attnbench merge into DIR/sweep.csv.
#
# usage: bench/slurm-sweep.sh -n SHARDS -o DIR [-a TASKS] [-b ATTNBENCH] [-g GRES]
#                             [-s "SBATCH OPTIONS"] [--dry-run] -- SWEEP OPTIONS
#   -n SHARDS   array tasks (sbatch --array=0-(SHARDS-1)); task T runs shard T+1 of SHARDS
#   -a TASKS    queue only these tasks (sbatch --array syntax: 3,5-6), e.g. to run again
#               those that failed: each resumes its shard's CSV
#   -o DIR      the shards' CSVs shard-I.csv, the logs slurm-JOB_TASK.log, the merged
#               sweep.csv (made if missing; merge refuses an existing sweep.csv)
#   -b FILE     the attnbench binary                     [build/attnbench]
#   -g GRES     what each task asks of a node's GPUs (sbatch --gres)   [gpu:1]
#   -s OPTS     more sbatch options for both jobs (partition, account, time)
#   --dry-run   tasks list their rows (sweep --dry-run) into shard-I.txt instead, on no
#               GPU, and the last job joins the lists into sweep.txt
# SWEEP OPTIONS are attnbench sweep's (a grid or --suite, --kernels, timing), without
# --out, --shard or --resume, which this script sets. Prints the two job ids. A task
# whose sweep exits non-zero (a row errored or mismatched, or no GPU) leaves the merge
# job pending: look at its log, cancel the merge job, then queue the task again with the
# same arguments and -a T (its rows already in shard-I.csv are kept, its error rows
# run again).
#
# Inside the jobs the script runs itself: --task and --merge (not for direct use).
set -eu

die() { echo "slurm-sweep: $*" >&2; exit 2; }

# The shard's number padded to the width of N, so that the shell's glob lists them in order.
shard_name() { printf "%s/shard-%0${#2}d" "$3" "$1"; }

if [ "${1:-}" = --task ]; then
    # --task N DIR BIN DRY -- SWEEP OPTIONS
    n=$2 dir=$3 bin=$4 dry=$5
    shift 6
    i=$((SLURM_ARRAY_TASK_ID + 1))
    out=$(shard_name "$i" "$n" "$dir")
    if [ "$dry" = 1 ]; then
        exec "$bin" sweep "$@" --shard "$i/$n" --dry-run > "$out.txt"
    fi
    exec "$bin" sweep "$@" --shard "$i/$n" --out "$out.csv" --resume
fi
if [ "${1:-}" = --merge ]; then
    # --merge DIR BIN DRY
    dir=$2 bin=$3 dry=$4
    if [ "$dry" = 1 ]; then
        cat "$dir"/shard-*.txt | grep -v '^#' > "$dir/sweep.txt" || true
        echo "# $(wc -l < "$dir/sweep.txt") rows from $(ls "$dir"/shard-*.txt | wc -l) shards in $dir/sweep.txt"
        exit 0
    fi
    # a shard with no rows writes no CSV: merge the ones there are
    exec "$bin" merge "$dir/sweep.csv" "$dir"/shard-*.csv
fi

shards="" dir="" bin=build/attnbench gres=gpu:1 extra="" dry=0 tasks=""
while [ $# -gt 0 ]; do
    case $1 in
    -n) shards=${2:-}; shift 2 ;;
    -o) dir=${2:-}; shift 2 ;;
    -a) tasks=${2:-}; shift 2 ;;
    -b) bin=${2:-}; shift 2 ;;
    -g) gres=${2:-}; shift 2 ;;
    -s) extra=${2:-}; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --) shift; break ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help; sweep options go after --)" ;;
    esac
done
case $shards in '' | *[!0-9]* | 0*) die "-n: '$shards' is not a number of shards from 1" ;; esac
[ -n "$dir" ] || die "-o DIR is required: where the shards' CSVs go"
case $tasks in *[!0-9,-]*) die "-a: '$tasks' is not a list of task numbers such as 3,5-6" ;; esac
tasks=${tasks:-0-$((shards - 1))}
for a in "$@"; do
    case $a in --out | --out=* | -o | --shard | --shard=* | --resume | --force | --dry-run)
        die "$a: the script sets --out, --shard and --resume itself (and --dry-run is its own option)" ;;
    esac
done
command -v sbatch >/dev/null 2>&1 || die "sbatch is not on PATH: run this on a Slurm login node"
[ -x "$bin" ] || die "-b: $bin is not an executable (make builds build/attnbench)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# the rows are checked before anything is queued: bad options fail here, not in N tasks
"$bin" sweep "$@" --shard "1/$shards" --dry-run > /dev/null || die "attnbench refused the sweep options (above)"

gpus=""
[ "$dry" = 1 ] || [ -z "$gres" ] || gpus="--gres=$gres"
# shellcheck disable=SC2086 # $extra and $gpus are lists of sbatch options
array=$(sbatch --parsable --job-name=attnbench-sweep --array="$tasks" $gpus $extra \
        --output="$dir/slurm-%A_%a.log" "$self" --task "$shards" "$dir" "$bin" "$dry" -- "$@")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable --job-name=attnbench-merge --dependency="afterok:$array" $extra \
        --output="$dir/slurm-%j-merge.log" "$self" --merge "$dir" "$bin" "$dry")
merge=${merge%%;*}
echo "array job $array: tasks $tasks of $shards shards into $dir/shard-*.$([ "$dry" = 1 ] && echo txt || echo csv)"
echo "merge job $merge: $dir/sweep.$([ "$dry" = 1 ] && echo txt || echo csv) once every shard succeeded"
