#!/bin/bash
# One before/after pair of the model-zoo and load benchmarks in one run (issue 40: before = 3a32122, after = main).
# Usage: BEFORE=<checkout of the old revision, with .venv> AFTER=<the new one> OUT=<folder> bench/compare_revisions_short.sh
OUT=${OUT:-/tmp/ab40}; BEFORE=${BEFORE:-/work/before}; AFTER=${AFTER:-$(pwd)}; mkdir -p $OUT; cd $OUT
for rev in before main; do
  echo "== modelzoo $rev $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $([ "$rev" = before ] && echo $BEFORE || echo $AFTER) && DATA_DIR=${DATA_DIR:-$AFTER/../shared/data} timeout 900 .venv/bin/python bench/bench_modelzoo.py --n 40 --seconds 6 --clients 16 --train-rows 400 --recipe cached-top --out $OUT/mz_${rev}.md) > $OUT/mz_${rev}.log 2>&1
done
for rev in before main; do
  echo "== load $rev $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $([ "$rev" = before ] && echo $BEFORE || echo $AFTER) && DATA_DIR=${DATA_DIR:-$AFTER/../shared/data} timeout 900 .venv/bin/python bench/bench_load.py --annotators 20 --validators 4 --seconds 45 --think 0 --writers-alone off --web-threads 8 --worker-concurrency 4 --out $OUT/load_${rev}.md) > $OUT/load_${rev}.log 2>&1
done
echo "== done $(date +%T)"
