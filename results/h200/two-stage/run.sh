#!/bin/bash
cd "$(dirname "$0")/.."
for b in new two; do gunzip -c .bin/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
mkdir -p $OUT/r; R=$OUT/r
/tmp/two verify --suite results/h100/racecheck/producer.suite --kernels bifurcated > $R/verify-two.log 2>&1
/tmp/two verify --suite quick --kernels bifurcated >> $R/verify-two.log 2>&1; echo "rc=$?" >> $R/verify-two.log
for pass in 1 2; do
  for b in two new; do
    /tmp/$b sweep --suite probe/ab3.suite --min-time 0.05 --out $R/ab-$b-$pass.csv > $R/ab-$b-$pass.log 2>&1
  done
done
cd $OUT && tar czf all.tgz r && rm -rf r
