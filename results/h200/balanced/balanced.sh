#!/bin/bash
# One device call: build, verify fused's balanced decomposition, probe what it should
# change, and sweep the multi-block suite. Everything lands in $OUT.
#   bash probe/balanced.sh            (run from the repository root on the GPU machine)
set -u
exec > >(tee "$OUT/run.log") 2>&1
V=${VERSION:-$(git rev-parse --short=12 HEAD)}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
which nsys ncu
timeout 400 make -j16 VERSION="$V" > "$OUT/build.log" 2>&1 || { echo build failed; tail -20 "$OUT/build.log"; exit 1; }
B=build/attnbench
timeout 60 $B peak

echo "== verify: the balanced cases of verify-full"
tail -n 3 bench/suites/verify-full.suite > "$OUT/balanced.suite"
echo "--heads 32 --kv-heads 32,8 --head-dim 128 --dtype fp16 --batch 1 --beam 1,4 --ctx 8192,32768 --gen 128" >> "$OUT/balanced.suite"
timeout 240 $B verify --suite "$OUT/balanced.suite" --kernels fused,auto > "$OUT/verify-balanced.log" 2>&1
echo "rc $?"; tail -n 3 "$OUT/verify-balanced.log"

echo "== probes"
R="timeout 60 $B run --kernel fused --min-time 0.2 --out $OUT/probe.csv"
# does a 132nd..136th CTA add time? uniform grids of 128, 132 and 136 CTAs
for h in 32 33 34; do $R --heads $h --kv-heads $h --ctx 8k --splits 4; done
# the same step: balanced (auto), uniform 4 and 8 splits, off
$R --heads 32 --kv-heads 32 --ctx 8k
$R --heads 32 --kv-heads 32 --ctx 8k --splits 8
$R --heads 32 --kv-heads 8 --beam 4 --ctx 8k
$R --heads 32 --kv-heads 8 --beam 4 --ctx 8k --splits 4
$R --heads 32 --kv-heads 8 --ctx 32k
$R --heads 32 --kv-heads 8 --ctx 32k --splits 16
$R --heads 32 --kv-heads 32 --ctx 32k
$R --heads 32 --kv-heads 32 --ctx 32k --splits 4
$R --heads 32 --kv-heads 32 --ctx 32k --splits 16
# fixed cost of a step: small contexts, cold and hot, and a graph
for c in 64 1k 2k 4k 16k; do $R --heads 32 --kv-heads 32 --ctx $c; done
for c in 64 8k; do $R --heads 32 --kv-heads 32 --ctx $c --hot; done
$R --heads 32 --kv-heads 32 --ctx 8k --graph
if which nsys > /dev/null 2>&1; then
    timeout 120 nsys profile -o "$OUT/n1" --force-overwrite true $B run --kernel fused --ctx 8k --iters 200 > /dev/null 2>&1
    timeout 120 nsys stats --report cuda_gpu_trace --format csv "$OUT/n1.nsys-rep" > "$OUT/nsys-trace.csv" 2>&1
    rm -f "$OUT/n1.nsys-rep" "$OUT/n1.sqlite"
fi
python3 - "$OUT" <<'PY'
import csv, sys, statistics
out = sys.argv[1]
for r in csv.DictReader(open(out + '/probe.csv')):
    print(r['heads'], r['kv_heads'], 'W' + r['beam'], r['ctx'], r['multi_block'], 's' + r['splits'], r['median_us'],
          r['pct_peak_bw'], r['noise'], r['args'][-40:])
try:
    lines = open(out + '/nsys-trace.csv').read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"Start') or l.startswith('Start'))
    rows = list(csv.DictReader(lines[start:]))
    k = [r for r in rows if 'attn_tc' in r.get('Name', '')]
    f = [r for r in rows if 'flush' in r.get('Name', '')]
    dur = [float(r['Duration (ns)']) for r in k]
    gaps = []
    for r in k:
        s = float(r['Start (ns)'])
        prev = [float(x['Start (ns)']) + float(x['Duration (ns)']) for x in f if float(x['Start (ns)']) < s]
        if prev: gaps.append(s - max(prev))
    print('nsys: attn kernel median ns', statistics.median(dur), 'n', len(dur),
          'gap after flush median ns', statistics.median(gaps) if gaps else None)
except Exception as e:
    print('nsys summary failed:', e)
PY

echo "== sweep multiblock"
timeout 300 $B sweep --suite multiblock --verify --out "$OUT/multiblock.csv" > "$OUT/multiblock.log" 2>&1
echo "rc $?"; tail -n 2 "$OUT/multiblock.log"
python3 - "$OUT/multiblock.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['kernel'] == 'fused' and r['status'] == 'ok']
g = collections.defaultdict(list)
for r in rows: g[(r['kv_heads'], r['beam'], r['ctx'])].append(r)
for k, rs in sorted(g.items(), key=lambda x: (int(x[0][0]), int(x[0][2]), int(x[0][1]))):
    a = [r for r in rs if r['multi_block'] == 'auto'][0]
    best = min(rs, key=lambda r: float(r['median_us']))
    mib = float(a['bytes']) / 2**20
    slow = float(a['median_us']) / float(best['median_us']) - 1
    flag = 'MISS' if mib >= 128 and (float(a['pct_peak_bw']) < 75 or slow > 0.03) else ''
    print(f"g{k[0]} W{k[1]} ctx{k[2]} {mib:6.0f}MiB auto s={a['splits']} {a['median_us']} {a['pct_peak_bw']}% "
          f"best {best['multi_block']} s={best['splits']} {best['median_us']} slow={slow*100:.1f}% {flag}")
PY

echo "== verify full"
timeout 240 $B verify --suite full > "$OUT/verify-full.log" 2>&1
echo "rc $?"; tail -n 2 "$OUT/verify-full.log"
