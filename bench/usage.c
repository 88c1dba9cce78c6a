#include "usage.h"

#include <string.h>
#include "../problem/presets.h"
#include "../kernels/registry.h"

static const char top_text[] =
    "attnbench: how fast is the decode step of LLM attention on this GPU, per kernel\n"
    "strategy, and why. One query token per stream against a KV cache (MHA, GQA, MQA;\n"
    "contiguous, paged or bifurcated cache; beam search), every kernel checked against\n"
    "a CPU reference, results as CSV latency tables.\n"
    "\n"
    "usage: attnbench <command> [options]\n"
    "\n"
    "commands:\n"
    "  list      kernels and what each supports\n"
    "  peak      measured read/copy bandwidth, L2 read rate and tensor-core rate of this GPU\n"
    "  run       one configuration with one kernel: one row\n"
    "  sweep     a grid or suite of configurations with several kernels, into a CSV\n"
    "  verify    every kernel against the CPU reference; exit 1 on a mismatch\n"
    "  table     a sweep CSV as a table (axes of your choice, or a paper table)\n"
    "  compare   two sweep CSVs, row by row; exit 1 on a regression\n"
    "  merge     the CSVs of a sweep's shards (--shard I/N) into one\n"
    "\n"
    "  attnbench <command> --help   that command's options (also: attnbench help CMD)\n"
    "  attnbench --version          the source revision this binary was built from\n"
    "\n"
    "Exit status: 0 ok; 1 a row errored, mismatched or regressed; 2 bad input.\n"
    "More: README.md (set-up, columns of the CSV, results) and bench/suites/.\n";

static const char problem_text[] =
    "problem (the bifurcated-attention paper's notation; [default]):\n"
    "  -b, --batch B          independent requests (distinct contexts)         [1]\n"
    "  -w, --beam W           streams per request sharing its context:\n"
    "                         beams or parallel samples                        [1]\n"
    "                         B x W at most 2^31-1, and B x W x h too\n"
    "  -H, --heads h          query heads                                      [32]\n"
    "  -g, --kv-heads g       key/value heads, must divide h:\n"
    "                         g = h is MHA, g = 1 MQA, otherwise GQA           [32]\n"
    "  -d, --head-dim d       head dimension, a multiple of 8 up to 256        [128]\n"
    "  -c, --ctx m_c          context (prompt) length                          [8k]\n"
    "      --gen m_d          tokens decoded per stream, the current one included [128]\n"
    "                         m_c + m_d below 2^30\n"
    "      --ctx-dist D       each request's context length: fixed (all --ctx),\n"
    "                         uniform:LO:HI[:SEED] (drawn, inclusive, seed 1) or\n"
    "                         file:PATH (one a line, --batch lines); --ctx is then\n"
    "                         the longest, one value or none           [fixed]\n"
    "      --q-len n          speculative decoding: n query tokens per stream, 1 to\n"
    "                         16, its last n decoded ones (n <= m_d), causal among\n"
    "                         them; fused, bifurcated and auto run n > 1       [1]\n"
    "  -t, --dtype T          fp16, bf16 or fp32: queries and output           [fp16]\n"
    "      --kv-dtype T       the KV cache's storage: fp8 (e4m3) or int8 codes,\n"
    "                         which the kernel dequantises (softmax and sums in\n"
    "                         fp32), or the --dtype itself (fp16, bf16, fp32 must\n"
    "                         equal it)                                     [--dtype]\n"
    "      --kv-scale S       an 8-bit cache's scales, set from the data's range:\n"
    "                         tensor (one for K, one for V) or head (one per kv\n"
    "                         head each)                                   [tensor]\n"
    "      --cache C          contiguous or paged                     [contiguous]\n"
    "  -S, --block-size S     paged block size, a power of two from 8 to 128   [64]\n"
    "      --indirection      beam search: decoded K/V read through a random\n"
    "                         cache_indirection history                        [off]\n"
    "      --multi-block M    split-KV mode: off, on or auto                   [auto]\n"
    "      --splits N         force N splits, 1 to 1024 (not with --multi-block off);\n"
    "                         without it the kernel's planner decides\n"
    "      --q-scaling X      scale = 1 / (X * sqrt(d)), X > 0; one value      [1]\n"
    "  -m, --model NAME       h, g, d and layers of a model preset; --heads,\n"
    "                         --kv-heads, --head-dim, --layers given explicitly\n"
    "                         win, in any order. Presets:\n"
    "                         %s\n"
    "      --layers N         layers the memory check counts, 1 to 2^31-1;\n"
    "                         one value                                        [1]\n"
    "      --tp N             tensor parallelism: the heads split over N GPUs (1 to\n"
    "                         8; N divides --heads and --kv-heads), each running\n"
    "                         its h/N, g/N share at once; median_us is the slowest\n"
    "                         GPU's, tp_us each GPU's. Uses the first N --devices\n"
    "                         (else GPUs 0..N-1); no all-reduce is timed       [1]\n"
    "      --step S           attend: attention over the cache as filled; append:\n"
    "                         the whole generation step, RoPE on the current\n"
    "                         token's packed QKV, k and v quantised (8-bit cache)\n"
    "                         and written to the cache, then attention; fused,\n"
    "                         bifurcated and auto (docs/APPEND.md)          [attend]\n"
    "      --rope R           --step append's RoPE pairing: neox (x, x + d/2) or\n"
    "                         gptj (2i, 2i + 1)                              [neox]\n"
    "      --rope-base X      RoPE frequencies X^(-2i/d), X > 1; one value  [10000]\n"
    "      --rope-scale X     linear position scaling: positions / X, X > 0    [1]\n"
    "      --scores S         the inputs' attention: flat (random q, K) or peaked:\n"
    "                         attention sinks (first 4 keys), heavy hitters (1 in\n"
    "                         256 context keys) and a recent window (last 64), as\n"
    "                         a trained model's (docs/SHARE-SELECT.md)       [flat]\n"
    "      --sink-logit X, --heavy-logit X, --recent-logit X\n"
    "                         peaked: each class's logit boost, 0 to\n"
    "                         3.75 sqrt(d) / q-scaling              [10, 8, 6]\n"
    "      --share-fraction F share: the fraction of heads that reuse an essential\n"
    "                         head's weights (an even synthetic map), 0 <= F < 1 [0.3]\n"
    "      --share-map FILE   share: the paper's JSON map (essential_heads and\n"
    "                         share_to per layer) instead; --share-layer N picks\n"
    "                         its layer                                        [0]\n"
    "      --top-p P          select-filter, select-attend, select-recompute: each\n"
    "                         stream keeps the keys whose head-averaged weights\n"
    "                         reach P of the total, 0 < P <= 1              [0.95]\n"
    "Every count above is a whole number from 1 to 2^31-1 unless it says otherwise.\n"
    "Values: lists 1,2,4; ranges of powers of two 1:1024 (both ends powers of two);\n"
    "suffixes k = 1024 and m = 1048576: --ctx 8k,16k:64k. run takes one value each;\n"
    "sweep takes the product of all lists.\n";

static const char timing_text[] =
    "timing:\n"
    "  -n, --iters N          timed launches, 0 to 1000000; 0 = until the relative\n"
    "                         standard error of the mean is under --max-noise (at\n"
    "                         least 20 launches, at most --max-time)           [0]\n"
    "      --max-noise PCT    relative standard error to time down to; PCT > 0 [0.5]\n"
    "      --max-time S       seconds of kernel time that cap the timed launches;\n"
    "                         S > 0; a row stopped there above --max-noise is\n"
    "                         flagged noisy                                    [1]\n"
    "      --warmup N         untimed launches first, 0 to 1000000, then more\n"
    "                         until the warm-up has run --min-time (0 with\n"
    "                         --iters: none)                                   [3]\n"
    "      --min-time S       seconds of kernel time of the warm-up; S > 0     [0.1]\n"
    "      --hot              keep L2 warm (no flush before each timed launch)\n"
    "      --graph            time the launch sequence captured in a CUDA graph\n"
    "      --seed N           seed of the random inputs, 0 to 2^64-1;\n"
    "                         0 = from the clock                               [0]\n";

static const char list_text[] =
    "usage: attnbench list\n"
    "\n"
    "Prints every kernel the binary has, one paragraph each: what it is and which\n"
    "layouts, dtypes and features (paged cache, indirection, multi-block) it supports.\n"
    "The names are the values of --kernel and --kernels.\n";

static const char peak_text[] =
    "usage: attnbench peak\n"
    "\n"
    "Measures what this GPU can do: device-memory read and copy bandwidth, the read rate\n"
    "of data L2 holds, and the fp16 tensor-core GEMM rate. run and sweep measure the same\n"
    "at start and report each row's pct_peak_bw and roofline_us against it; auto's cost\n"
    "model takes its rates from them. The read rate is sustained: for each of 24 launch\n"
    "shapes, the time of a three-pass read less that of a one-pass read (each after an\n"
    "L2 flush by reading, no dirty lines), the best kept and its shape printed\n"
    "(read_shape); a launch's fixed costs cancel in it. Also prints the\n"
    "card's theoretical bandwidth from NVML (memory clock x bus width), which rows'\n"
    "pct_spec_bw is against, and its maximum SM clock.\n";

static const char run_text[] =
    "usage: attnbench run [problem options] --kernel K [--no-verify] [--profile]\n"
    "                     [timing options] [--out FILE.csv [--force]]\n"
    "\n"
    "Runs one configuration with one kernel and prints one row (median, p10, p90,\n"
    "noise, bytes, GB/s, %% of peak bandwidth, roofline). Each problem option holds\n"
    "one value; a kernel that cannot run the configuration is an error (exit 2).\n"
    "\n"
    "  -k, --kernel K         the kernel; required. One of\n"
    "                         %s\n"
    "  -o, --out FILE.csv     append the row to FILE.csv, a results CSV (checked\n"
    "                         whole first), or make it, header first; any other\n"
    "                         existing file is refused. /dev/stdout: the CSV there\n"
    "      --force            replace FILE.csv instead of appending to it\n"
    "      --no-verify        skip checking the output against the CPU reference\n"
    "                         (checked by default: status mismatch, exit 1)\n"
    "      --verify-time S    a row's CPU reference may take S seconds: more output\n"
    "                         rows are checked while it lasts (4096, or all, always)\n"
    "                                                                          [1]\n"
    "      --profile          cudaProfilerStart/Stop around the timed launches only,\n"
    "                         for ncu --profile-from-start off and\n"
    "                         nsys profile --capture-range=cudaProfilerApi\n"
    "\n";

static const char run_examples[] =
    "\n"
    "examples:\n"
    "  attnbench run --beam 16 --kv-heads 8 --ctx 32k --kernel fused --verify\n"
    "  nsys profile --capture-range=cudaProfilerApi \\\n"
    "      attnbench run --model 7b --beam 64 --kernel bifurcated --profile\n";

static const char sweep_text[] =
    "usage: attnbench sweep [problem options] [--suite NAME|PATH] --out FILE.csv\n"
    "                       [--kernels K1,K2] [--resume|--force] [--no-verify]\n"
    "                       [--shard I/N] [--devices all|0,1,..] [--dry-run]\n"
    "                       [timing options]\n"
    "\n"
    "Runs every configuration of the grid (the product of the problem options'\n"
    "lists) with every kernel: one CSV row per (configuration, kernel), written as\n"
    "it completes. A configuration a kernel cannot run gets status unsupported, one\n"
    "that does not fit in device memory oom; the sweep goes on. Order, outermost\n"
    "first: dtype, kv dtype, kv scale, cache, block size, h, g, d, multi-block, splits,\n"
    "ctx, gen, batch, beam, q-len. Exit 1 if a row errored or failed verification.\n"
    "\n"
    "  -k, --kernels K1,K2    kernels to run; `peers` names every peer  [attnbench's own]\n"
    "                         (share, an approximation, runs only when named)\n"
    "                         of %s\n"
    "  -o, --out FILE.csv     the CSV; required. Nothing is written to it before\n"
    "                         every option, the suite and the GPU are checked and\n"
    "                         the first row is measured; then one row at a time.\n"
    "                         An existing file is refused unless it is a results\n"
    "                         CSV and --resume or --force is given; FIFOs,\n"
    "                         directories and devices are refused (/dev/stdout\n"
    "                         excepted)\n"
    "  -s, --suite NAME|PATH  the grids of a suite file, one sub-grid per line\n"
    "                         (NAME: bench/suites/NAME.suite, e.g. quick, ci, core,\n"
    "                         paper6, paper7, paper8, kvq, kvq-peers). Problem options\n"
    "                         and --kernels given here replace those of every\n"
    "                         suite line\n"
    "      --resume           keep the rows FILE.csv holds, run only the others:\n"
    "                         the file is checked whole first, a row cut off by a\n"
    "                         kill is dropped, rows with status error run again\n"
    "                         (oom and unsupported are final); a row counts as\n"
    "                         held when its configuration (--kv-dtype and\n"
    "                         --kv-scale too), --q-scaling, --hot and --graph match\n"
    "      --force            replace an existing results CSV\n"
    "%s"
    "      --no-verify        skip checking every row against the CPU reference\n"
    "      --verify-time S    a row's CPU reference may take S seconds: more output\n"
    "                         rows are checked while it lasts (4096, or all, always)\n"
    "                                                                          [1]\n"
    "\n";

/* sweep's and verify's options that slice and deal the rows, and list them */
static const char shard_text[] =
    "      --shard I/N        run only the I-th of N slices of the rows (1 <= I <= N,\n"
    "                         counted from 1), for cluster job arrays: the rows, the\n"
    "                         dearest first by their bytes and FLOPs, are dealt to the\n"
    "                         slices in turn, the same on every machine; each row is\n"
    "                         in one slice. attnbench merge joins their CSVs\n"
    "      --devices all|0,1  one worker process per GPU (CUDA device indices, as\n"
    "                         CUDA_VISIBLE_DEVICES numbers them), each row handed\n"
    "                         to the first free, the dearest first; sweep's CSV\n"
    "                         says which ran it in its device column. GPUs of\n"
    "                         different kinds are refused        [the default GPU]\n"
    "      --dry-run          list the rows instead of running them, one line each\n"
    "                         (`attnbench run LINE` reruns it), those the kernel\n"
    "                         cannot run marked unsupported, those sweep --resume\n"
    "                         finds in --out left out; then their count. No GPU is\n"
    "                         used; sweep's --out is then optional\n";

static const char sweep_examples[] =
    "\n"
    "examples:\n"
    "  attnbench sweep --beam 1:256 --kv-heads 32,8,1 --ctx 8k,16k,32k \\\n"
    "      --kernels fused,cublas --out fused.csv\n"
    "  attnbench sweep --suite paper6 --out paper6.csv --resume\n"
    "  attnbench sweep --suite paper6 --shard 2/8 --out paper6-2.csv --resume\n"
    "  attnbench sweep --suite core --devices all --out core.csv\n"
    "  attnbench sweep --suite paper7 --dry-run | tail -n 1\n";

static const char verify_text[] =
    "usage: attnbench verify [--suite quick|full|kvq|peers|PATH] [--kernels K1,K2] [--seed N]\n"
    "                        [--shard I/N] [--devices all|0,1,..] [--dry-run]\n"
    "\n"
    "Runs every kernel on every configuration of a verification suite with fresh\n"
    "random inputs and an output poisoned with NaN, twice (the second launch\n"
    "after the first, on a poisoned output again), and compares each output row\n"
    "with the double-precision CPU reference: the worst row's relative L2 error\n"
    "(fp32 1e-5, fp16 2e-3, bf16 1.6e-2), the largest absolute error (the same\n"
    "figure times the largest |V|), and no NaN/Inf anywhere in the output. At\n"
    "least 4096 rows (or all) are checked: first and last request, stream, query\n"
    "token (--q-len) and head, then random ones. Configurations a kernel does not\n"
    "support are listed as unsupported. Exit 1 on any mismatch or error.\n"
    "\n"
    "  -s, --suite S          quick (bench/suites/verify-quick.suite), full\n"
    "                         (verify-full.suite), kvq (verify-kvq.suite: the\n"
    "                         8-bit caches), peers (verify-peers.suite: shapes\n"
    "                         the peers run), share (verify-share.suite: the\n"
    "                         share kernel) or a suite file's path        [quick]\n"
    "  -k, --kernels K1,K2    kernels to check; `peers` names every peer [attnbench's own]\n"
    "                         (share, an approximation, runs only when named)\n"
    "                         of %s\n"
    "      --seed N           seed of the random inputs, 0 to 2^64-1;\n"
    "                         0 = from the clock                               [0]\n"
    "      --verify-time S    a row's CPU reference may take S seconds: more output\n"
    "                         rows are checked while it lasts (4096, or all, always)\n"
    "                                                                          [1]\n"
    "%s"
    "\n"
    "examples:\n"
    "  attnbench verify\n"
    "  attnbench verify --suite full --kernels fused,bifurcated\n";

static const char table_text[] =
    "usage: attnbench table --in FILE.csv [--in MORE.csv ...]\n"
    "                       [--rows COLS --cols COLS [--value COL] [--agg min|max|last]]\n"
    "                       [--paper 6|7|8] [--where COL=VAL[,VAL...] ...] [--layers N]\n"
    "                       [--vs-peers] [--ratio A/B] [--select-total [--filter-layer N]]\n"
    "                       [--format md|csv]\n"
    "\n"
    "Pivots a results CSV; needs no GPU. A file that is not a results CSV, or an ok\n"
    "row whose times are not finite positive numbers, is refused naming FILE:LINE.\n"
    "  --in FILE        results CSV (repeat, at most 32, to join files with the same\n"
    "                   columns)\n"
    "  --rows, --cols   the axes: a column name, or several joined by ',' (ctx,beam),\n"
    "                   at most 8\n"
    "  --value COL      what the cells show (default median_us); ms_per_token is\n"
    "                   median_us x layers / 1000, attention of the whole model\n"
    "  --agg            several rows in one cell: smallest (default), largest, last\n"
    "  --where COL=VAL  keep rows whose COL is one of the values (8k = 8192);\n"
    "                   repeatable, at most 16\n"
    "  --paper 6|7|8    the bifurcated-attention paper's Table 6 (7b, MHA), Table 7\n"
    "                   (7b-gqa, g=8) or Table 8 (mistral-7b at --tp 2): ms per\n"
    "                   token by W (samples of one context, B = 1) and context\n"
    "                   length, one column per kernel\n"
    "  --layers N       layer count for ms per token instead of the CSV's layers\n"
    "                   column, 1 to 2^31-1\n"
    "  --vs-peers       attnbench against the peers (flashinfer, xqa, ...): each cell\n"
    "                   of attnbench's kernels is its value / the best (smallest) ok\n"
    "                   value of the peers on the same configuration (every --rows\n"
    "                   and --cols column but kernel; under 1: attnbench is faster,\n"
    "                   '-': no peer); the peers' rows give a 'best peer' column\n"
    "                   (its name) and 'peer VALUE' (its value) instead of their\n"
    "                   own; kernel goes in --cols, not --rows\n"
    "  --ratio A/B      one more column: each row's value in column A / its value in\n"
    "                   column B, A and B as the header labels them (append/attend\n"
    "                   with --cols step, 4/1 with --cols q_len, share/fused with\n"
    "                   --cols kernel); '-' where either has no ok value\n"
    "  --select-total   Select-Attention per token: for each configuration with ok\n"
    "                   rows of fused, select-filter and select-attend at one\n"
    "                   --top-p, the full model's attention (layers x fused) and\n"
    "                   Select-Attention's: the layers before --filter-layer N\n"
    "                   (default 15) at fused, select-filter at it, select-attend\n"
    "                   after it; in ms, with the fraction of keys kept; and with\n"
    "                   select-recompute after it where it ran (recompute_ms)\n"
    "  --format md|csv  Markdown (default) or CSV\n"
    "Cells: OOM where memory ran out, another status where the run failed, '-' where\n"
    "no row exists (and, in --paper tables, beyond the first OOM).\n"
    "Example, each kernel's ratio to the best peer per shape:\n"
    "  attnbench table --in peers.csv --rows kv_heads,batch,beam,ctx --cols kernel\n"
    "                  --vs-peers\n";

static const char compare_text[] =
    "usage: attnbench compare BASE.csv NEW.csv [--threshold 0.05] [--changes]\n"
    "\n"
    "Joins the rows of two results CSVs on gpu, kernel, configuration, --q-scaling,\n"
    "--hot and --graph, and gives each a verdict: same, faster, slower, missing (only\n"
    "in BASE), new (only in NEW), broken (ok became error/mismatch/oom/unsupported,\n"
    "or verified yes became no), fixed (a failed row now ok).\n"
    "A row is slower (or faster) only when its median changed by more than\n"
    "max(threshold, 2 x sqrt(noise_base^2 + noise_new^2)), noise being each row's\n"
    "relative standard deviation: bigger than the threshold and than chance.\n"
    "An ok row whose times are not finite positive numbers is malformed input.\n"
    "  --threshold X  smallest relative change that counts, X >= 0 (default 0.05)\n"
    "  --changes      list only rows whose verdict is not same\n"
    "Exit status: 0 pass, 1 any slower, broken or missing row, 2 bad input.\n";

static const char merge_text[] =
    "usage: attnbench merge OUT.csv IN.csv [IN.csv ...] [--force]\n"
    "\n"
    "Joins results CSVs, the shards of one sweep (sweep --shard I/N), into OUT.csv:\n"
    "the rows of each input in turn, as they are. Needs no GPU. Refused (exit 2, one\n"
    "line naming FILE:LINE) unless every input is a results CSV with the same columns,\n"
    "every row of every input has the same version (one build ran every shard), and\n"
    "no configuration is in two inputs, or twice in one input other than as error\n"
    "rows (which sweep --resume ran again): a row matches as for --resume, on gpu,\n"
    "kernel, configuration, --q-scaling, --hot and --graph.\n"
    "  --force   replace OUT.csv where it is a results CSV already; any other\n"
    "            existing file is refused, as are FIFOs, directories and devices\n"
    "            (/dev/stdout excepted); OUT.csv may not be one of the inputs\n"
    "\n"
    "example:\n"
    "  attnbench merge paper6.csv paper6-*.csv\n";

static void kernel_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; attn_kernels[i]; ++i)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", attn_kernels[i]->name);
}

static void model_names(char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < model_preset_count; ++i)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", model_presets[i].name);
}

static void print_problem(FILE *f)
{
    char models[256];
    model_names(models, sizeof models);
    fprintf(f, problem_text, models);
}

void usage_print(FILE *f, const char *command)
{
    char kernels[256];
    kernel_names(kernels, sizeof kernels);
    const char *c = command ? command : "";
    if (!strcmp(c, "list")) {
        fputs(list_text, f);
    } else if (!strcmp(c, "peak")) {
        fputs(peak_text, f);
    } else if (!strcmp(c, "run")) {
        fprintf(f, run_text, kernels);
        print_problem(f);
        fputs("\n", f);
        fputs(timing_text, f);
        fputs(run_examples, f);
    } else if (!strcmp(c, "sweep")) {
        fprintf(f, sweep_text, kernels, shard_text);
        print_problem(f);
        fputs("\n", f);
        fputs(timing_text, f);
        fputs(sweep_examples, f);
    } else if (!strcmp(c, "verify")) {
        fprintf(f, verify_text, kernels, shard_text);
    } else if (!strcmp(c, "table")) {
        fputs(table_text, f);
    } else if (!strcmp(c, "compare")) {
        fputs(compare_text, f);
    } else if (!strcmp(c, "merge")) {
        fputs(merge_text, f);
    } else {
        fputs(top_text, f);
    }
}
