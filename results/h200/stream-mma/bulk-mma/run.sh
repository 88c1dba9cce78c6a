#!/bin/bash
# device run 3: the bulk-copy streaming body: verify, then probe rates and the split
set -u
mkdir -p $OUT/csv
for b in new probe pB; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.txt
log() { local s=$(date +%s); "$@" > $OUT/last.out 2>&1; local rc=$?; echo "rc=$rc $(( $(date +%s)-s ))s :: $*" >> $OUT/probe.log; tail -1 $OUT/last.out >> $OUT/probe.log; }
S="--suite probe/configs.suite --min-time 0.05"
log /tmp/new run --kernel bifurcated --kv-heads 32 --beam 512 --ctx 16k --verify
log /tmp/new sweep $S --out $OUT/csv/new.csv
for v in probe pB; do
  for n in 8 16 32 132; do log env PROBE_PART=2 PROBE_CTX_SMS=1 PROBE_DEC_CTAS=$n /tmp/$v sweep $S --out $OUT/csv/$v-dec$n.csv; done
  for sp in 4 8; do for n in 116 100 84; do log env PROBE_CTX_SPLITS=$sp PROBE_CTX_SMS=$n /tmp/$v sweep $S --out $OUT/csv/$v-s$sp-n$n.csv; done; done
done
for sp in 4 8; do for n in 116 100 84; do log env PROBE_PART=1 PROBE_CTX_SPLITS=$sp PROBE_CTX_SMS=$n /tmp/probe sweep $S --out $OUT/csv/ctx-s$sp-n$n.csv; done; done
log /tmp/new sweep $S --out $OUT/csv/new2.csv
tar czf $OUT/csv.tgz -C $OUT csv && rm -rf $OUT/csv
s=$(date +%s); /tmp/new verify --suite full > $OUT/verify-full.log 2>&1; echo "rc=$? $(( $(date +%s)-s ))s :: verify full" >> $OUT/probe.log
tail -1 $OUT/verify-full.log >> $OUT/probe.log
grep -E " (fail|FAIL|error)" $OUT/verify-full.log | head -20 >> $OUT/probe.log
