#!/bin/bash
# Retraining from the pretrained encoder vs continuing from the live ensemble (issue 40, item 5), side by side:
# one round-1 database (the sentiment demo's ensemble trained on its 60 items), copied once per arm; each arm runs
# the same simulate_rounds (same writers, seeds and held-out rows) with retraining.start_from set to the arm; then
# bench/compare_start_from.py pairs the arms' held-out errors example by example.
# Usage: DATA_DIR=../shared/data WORK=/tmp/retrain bench/retraining_start.sh [R1_WRITERS] [R2_WRITERS] [HELD]
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd); cd "$ROOT"
WORK=${WORK:-/tmp/retrain}; R1=${1:-1200}; R2=${2:-720}; HELD=${3:-1200}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data}; export DATA_DIR
PY="nice -n 10 $ROOT/.venv/bin/python"
if [ ! -f "$WORK/base.sqlite3" ]; then
  mkdir -p "$WORK"
  export DATABASE_URL=sqlite:///$WORK/base.sqlite3 MODEL_STORE=$WORK/models
  $PY manage.py migrate --noinput > "$WORK/setup.log"
  $PY manage.py load_demo >> "$WORK/setup.log"
  $PY manage.py demo_models --tasks sentiment --members 2 --opponent-rows 0 --no-progress >> "$WORK/setup.log" 2>&1
fi
for arm in pretrained live; do
  rm -rf "$WORK/$arm" && mkdir -p "$WORK/$arm"
  cp "$WORK/base.sqlite3" "$WORK/$arm/db.sqlite3" && cp -r "$WORK/models" "$WORK/$arm/models"
  export DATABASE_URL=sqlite:///$WORK/$arm/db.sqlite3 MODEL_STORE=$WORK/$arm/models
  start=$(date +%s)
  $PY -m research.simulate_rounds sentiment --start-from $arm --seeds 0,1,2 \
    --writers dynasent/r1_dev.jsonl:$R1@dynasent dynasent/r2_dev.jsonl:$R2@dynasent \
    --held-out dynasent/r1_test.jsonl:$HELD@dynasent dynasent/r2_test.jsonl:$HELD@dynasent \
    --out "$WORK/$arm/report.md" --json "$WORK/$arm/report.json" > "$WORK/$arm/run.log" 2>&1
  echo "$arm: $(( $(date +%s) - start )) s"
done
$ROOT/.venv/bin/python bench/compare_start_from.py "$WORK/pretrained/report.json" "$WORK/live/report.json"
