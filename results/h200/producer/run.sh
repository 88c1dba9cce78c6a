#!/bin/bash
cd "$(dirname "$0")/.."
for b in base new; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
mkdir -p $OUT/r; R=$OUT/r
/tmp/new --version > $R/version.txt
/tmp/new peak > $R/peak.log 2>&1
/tmp/new verify --suite full > $R/verify-full.log 2>&1; echo "verify rc=$?" >> $R/verify-full.log
tail -n 3 $R/verify-full.log
for pass in 1 2; do
  for b in new base; do
    /tmp/$b sweep --suite probe/ab2.suite --min-time 0.05 --out $R/ab-$b-$pass.csv > $R/ab-$b-$pass.log 2>&1
  done
done
cd $OUT && tar czf all.tgz r && rm -rf r
