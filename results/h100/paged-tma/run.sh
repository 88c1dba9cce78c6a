#!/bin/bash
# new (c566fa9: paged block lookups ahead of the GEMMs) against prev (40c3ad2) and base (597f884),
# alternated twice; verify-full and the paged sweep with new.
set -u
exec > >(tee "$OUT/run.log") 2>&1
for b in new prev base; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; /tmp/$b --version; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
T0=$(date +%s)
mkdir -p $OUT/csv
/tmp/new peak > $OUT/csv/peak.log 2>&1; cat $OUT/csv/peak.log
timeout 60 /tmp/new verify --suite results/h100/paged-tma/verify-paged.suite > $OUT/csv/verify-paged.log 2>&1; echo "verify-paged rc $?"; tail -n 1 $OUT/csv/verify-paged.log
for i in 1 2; do for b in new prev base; do
  timeout 80 /tmp/$b sweep --suite results/h100/paged-tma/ab.suite --out $OUT/csv/ab-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 200 /tmp/new sweep --suite bifurcated-paged --verify --out $OUT/csv/bifurcated-paged.csv > $OUT/csv/bifurcated-paged.log 2>&1; echo "paged rc $?"
echo "paged done $(( $(date +%s) - T0 )) s"
timeout 220 /tmp/new verify --suite full > $OUT/csv/verify-full.log 2>&1; echo "verify rc $?"; tail -n 1 $OUT/csv/verify-full.log
echo "verify done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
