#!/bin/bash
# Usage: BEFORE=<checkout of the old revision, with .venv> AFTER=<checkout of the new one> OUT=<folder> bench/compare_revisions.sh
# Model-zoo and load benchmarks, before (d2e1063, the last commit before the library split) and after (main), in one run.
set -x
OUT=${OUT:-/tmp/ab}; BEFORE=${BEFORE:-/work/before}; AFTER=${AFTER:-/work/main}; mkdir -p "$OUT"; cd "$OUT"
for i in 1 2; do
  for rev in before main; do
    echo "== modelzoo $rev $i $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd $([ "$rev" = before ] && echo $BEFORE || echo $AFTER) && time .venv/bin/python bench/bench_modelzoo.py --n 40 --seconds 6 --clients 16 --train-rows 400 --recipe cached-top --out $OUT/mz_${rev}_$i.md) > $OUT/mz_${rev}_$i.log 2>&1
  done
done
for rev in before main; do
  echo "== load $rev $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  (cd $([ "$rev" = before ] && echo $BEFORE || echo $AFTER) && time .venv/bin/python bench/bench_load.py --annotators 20 --validators 4 --seconds 45 --think 0 --web-threads 8 --worker-concurrency 4 --out $OUT/load_${rev}.md) > $OUT/load_${rev}.log 2>&1
done
echo "== done $(date +%T)"
