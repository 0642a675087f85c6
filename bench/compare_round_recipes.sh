#!/bin/bash
# Usage: DATA_DIR=../shared/data OUT=/tmp/recipes bench/compare_round_recipes.sh [WRITERS] [HELD_OUT...]
#
# Issue 23's "old recipe vs new" on the ANLI case, in one run (docs/benchmarks/rounds.md). Two scratch databases,
# the same simulated round on each, one after the other:
#   old  the retraining before issue 23: the NLI demo as it was (round 1 trained on the demo's 60 pairs: `load_demo`
#        without --base-data), retraining on those and the round's train split, every row counted once
#        (retraining.new_round_weight 1); no held-out slice of base data exists, so the gate sees only the demo's
#        30-pair base test and the round's test split;
#   new  today's: round 1 trained on SNLI dev (`load_demo --base-data`), retraining on it plus every round's train
#        split with the closing round x2 (the default), the base held-out slice in the gate.
# Both replay the same writers (default anli/r1_dev.jsonl:600) through `simulate_rounds` without word maps, and
# score every round's ensemble on the same held-out files (default ANLI R1 test 500, SNLI test 1,000).
# Prints a summary table (bench/round_recipes_table.py) and leaves each run's report under $OUT/<recipe>/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/round-recipes}
export DATA_DIR=${DATA_DIR:-$ROOT/../shared/data}
WRITERS=${1:-anli/r1_dev.jsonl:600}
shift || true
HELD=("$@")
[ ${#HELD[@]} -gt 0 ] || HELD=(anli/r1_test.jsonl:500 snli/test.jsonl:1000)
for f in snli/dev.jsonl snli/test.jsonl anli/r1_dev.jsonl anli/r1_test.jsonl; do
  [ -f "$DATA_DIR/$f" ] || { echo "compare_round_recipes: $DATA_DIR/$f not found (set DATA_DIR): cannot run" >&2; exit 1; }
done
JEMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null || true)
PY="$ROOT/.venv/bin/python"
cd "$ROOT"
for recipe in old new; do
  dir="$OUT/$recipe"; rm -rf "$dir"; mkdir -p "$dir"
  export DATABASE_URL="sqlite:///$dir/db.sqlite3" MODEL_STORE="$dir/models"
  start=$(date +%s)
  echo "== $recipe: demo $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$PY" manage.py migrate -v0
  if [ "$recipe" = old ]; then
    "$PY" manage.py load_demo > "$dir/load_demo.log"
    "$PY" manage.py shell -c "
from tasks.models import Task
t = Task.objects.get(slug='nli'); t.config.setdefault('retraining', {})['new_round_weight'] = 1; t.save()
print('new_round_weight', t.typed_config.retraining.new_round_weight)"
  else
    "$PY" manage.py load_demo --base-data > "$dir/load_demo.log"
  fi
  LD_PRELOAD=$JEMALLOC "$PY" manage.py demo_models --tasks nli --no-progress > "$dir/demo_models.log" 2>&1
  demo=$(( $(date +%s) - start ))
  echo "== $recipe: simulate $(date +%T) (demo models ${demo}s)"
  LD_PRELOAD=$JEMALLOC "$PY" -m research.simulate_rounds nli --writers "$WRITERS" --held-out "${HELD[@]}" \
    --out "$dir/report.md" --json "$dir/report.json" > /dev/null 2> "$dir/simulate.log"
  echo "{\"demo_s\": $demo, \"total_s\": $(( $(date +%s) - start ))}" > "$dir/wall.json"
done
echo "== done $(date +%T)"
"$PY" bench/round_recipes_table.py "$OUT/old" "$OUT/new"
