#!/bin/bash
# device run 1: verify the streaming body, then probe the split
set -u
mkdir -p $OUT/csv
for b in new probe probe64 base; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > $OUT/gpu.txt
log() { local s=$(date +%s); "$@" > $OUT/last.out 2>&1; local rc=$?; echo "rc=$rc $(( $(date +%s)-s ))s :: $*" >> $OUT/probe.log; tail -3 $OUT/last.out >> $OUT/probe.log; }
S="--suite probe/configs.suite --min-time 0.05"
log /tmp/base sweep $S --out $OUT/csv/base.csv
log /tmp/new sweep $S --out $OUT/csv/new.csv
for n in 132 124 116 108 100 92 84 76; do log env PROBE_CTX_SMS=$n /tmp/probe sweep $S --out $OUT/csv/n$n.csv; done
for n in 8 16 32 64 132; do log env PROBE_PART=2 PROBE_CTX_SMS=1 PROBE_DEC_CTAS=$n /tmp/probe sweep $S --out $OUT/csv/dec$n.csv; done
for n in 132 116 100 84; do log env PROBE_PART=1 PROBE_CTX_SMS=$n /tmp/probe sweep $S --out $OUT/csv/ctx$n.csv; done
for n in 116 100 84; do log env PROBE_CTX_SMS=$n /tmp/probe64 sweep $S --out $OUT/csv/w6n$n.csv; done
for n in 16 32 132; do log env PROBE_PART=2 PROBE_CTX_SMS=1 PROBE_DEC_CTAS=$n /tmp/probe64 sweep $S --out $OUT/csv/w6dec$n.csv; done
log /tmp/base sweep $S --out $OUT/csv/base2.csv
log /tmp/new sweep $S --out $OUT/csv/new2.csv
s=$(date +%s); /tmp/new verify --suite full > $OUT/verify-full.log 2>&1; echo "rc=$? $(( $(date +%s)-s ))s :: verify full" >> $OUT/probe.log
tail -5 $OUT/verify-full.log >> $OUT/probe.log
