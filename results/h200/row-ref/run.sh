#!/bin/bash
cd "$(dirname "$0")/.."
for b in head new; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
/tmp/new --version > $OUT/version.txt
/tmp/new peak > $OUT/peak.log 2>&1
/tmp/new verify --suite full > $OUT/verify-full.log 2>&1; echo "verify rc=$?" >> $OUT/verify-full.log
for pass in 1 2; do
  for b in new head; do
    /tmp/$b sweep --suite probe/ab.suite --min-time 0.05 --out $OUT/ab-$b-$pass.csv > $OUT/ab-$b-$pass.log 2>&1
  done
done
