#!/bin/bash
# 0ba2613 ("new": four warps per row of many partials in the merge launch) against 27c47b4 ("base"),
# alternated three times on one H200 after verify-full with "new" (that log is results/h200/verify-full.log);
# then the bifurcated sweep with "new" (not kept: the committed bifurcated.csv is a later revision's).
set -u
exec > >(tee "$OUT/run.log") 2>&1
gunzip -c .bin/attnbench-final.gz > /tmp/new; gunzip -c .bin/attnbench-base.gz > /tmp/base; chmod +x /tmp/new /tmp/base
/tmp/new --version; /tmp/base --version
T0=$(date +%s)
mkdir -p $OUT/csv
timeout 200 /tmp/new verify --suite full > $OUT/csv/verify-full.log 2>&1; echo "verify rc $?"; tail -n 1 $OUT/csv/verify-full.log
echo "verify done $(( $(date +%s) - T0 )) s"
for i in 1 2 3; do for b in new base; do
  timeout 100 /tmp/$b sweep --suite results/h200/merge-warps/configs.suite --out $OUT/csv/merge-$b-$i.csv > /dev/null 2>&1 || echo "fail $b $i"
done; done
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 200 /tmp/new sweep --suite bifurcated --verify --out $OUT/csv/bifurcated.csv > $OUT/csv/bifurcated.log 2>&1; echo "bif rc $?"
echo "bif done $(( $(date +%s) - T0 )) s"
tar czf $OUT/csv.tgz -C $OUT csv
