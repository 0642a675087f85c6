#!/usr/bin/env bash
# The production path on this machine, without Docker: the processes of docker-compose.yml (and the Procfile)
# started locally: Redis (our own, on its own port), migrations, TorchServe (under `flock /tmp/torchserve.lock`),
# eager model registration, gunicorn, a Celery worker and Celery beat, on this machine's PostgreSQL.
#
#   scripts/serve_prod.sh start              # everything; prints the address (make serve-prod)
#   scripts/serve_prod.sh stop               # everything (make stop-prod)
#   scripts/serve_prod.sh status             # which processes run, and /healthz
#   scripts/serve_prod.sh start worker       # one part: redis | torchserve | register | web | worker | explainer | beat
#   scripts/serve_prod.sh stop torchserve    # one part (the fault tests stop and start parts)
#
# Everything lives in PROD_DIR (default var/prod): env (the chosen ports and URLs, reused by later calls),
# logs/<part>.log, pids/<part>.pid, torchserve/ (config, model store), static/. Each part runs in its own
# process group, so stopping it stops its children (gunicorn's and Celery's pool processes, TorchServe's Java).
#
# Variables (defaults): DATABASE_URL (postgres://postgres@127.0.0.1:5432/dynabench_prod, created when missing),
# PORT (8000; 0 = a free one), REDIS_PORT (a free one; never the shared 6379), WEB_WORKERS (3), WEB_THREADS (8),
# WORKER_CONCURRENCY (2), SECRET_KEY (generated once into PROD_DIR), ALLOWED_HOSTS (127.0.0.1,localhost),
# MODEL_STORE (PROD_DIR/models), DEMO=1 (load the demo tasks; demo models come from `manage.py demo_models`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PY:-$ROOT/.venv/bin/python}
BIN=$(dirname "$PY")
PROD_DIR=$(mkdir -p "${PROD_DIR:-$ROOT/var/prod}" && cd "${PROD_DIR:-$ROOT/var/prod}" && pwd)
ENV_FILE=$PROD_DIR/env
mkdir -p "$PROD_DIR/logs" "$PROD_DIR/pids"

free_port() { "$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }

# --- configuration: chosen once, written to PROD_DIR/env, reused by every later call -----------------------
if [[ ! -f $ENV_FILE ]]; then
  web_port=${PORT:-8000}; [[ $web_port == 0 ]] && web_port=$(free_port)
  redis_port=${REDIS_PORT:-$(free_port)}
  [[ $redis_port == 6379 ]] && { echo "serve_prod: REDIS_PORT 6379 is the shared Redis; choose another" >&2; exit 2; }
  read -r ts_inf ts_mgmt ts_metrics ts_grpc ts_grpc_mgmt < <("$PY" -c "
import socket
ss = [socket.socket() for _ in range(5)]
[s.bind(('127.0.0.1', 0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])")
  secret=${SECRET_KEY:-$("$PY" -c 'import secrets; print(secrets.token_urlsafe(50))')}
  umask 077
  cat > "$ENV_FILE" <<EOF
export DEBUG=false
export SECRET_KEY='$secret'
export ALLOWED_HOSTS='${ALLOWED_HOSTS:-127.0.0.1,localhost}'
export DATABASE_URL='${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/dynabench_prod}'
export DB_CONN_MAX_AGE=60
export REDIS_PORT=$redis_port
export CELERY_BROKER_URL=redis://127.0.0.1:$redis_port/0
export CELERY_RESULT_BACKEND=redis://127.0.0.1:$redis_port/0
export CACHE_URL=redis://127.0.0.1:$redis_port/1
export CELERY_QUEUE='${CELERY_QUEUE:-dynabench}'
export MODEL_BACKEND=torchserve
export TORCHSERVE_URL=http://127.0.0.1:$ts_inf
export TORCHSERVE_MANAGEMENT_URL=http://127.0.0.1:$ts_mgmt
export TS_METRICS_PORT=$ts_metrics TS_GRPC_PORT=$ts_grpc TS_GRPC_MANAGEMENT_PORT=$ts_grpc_mgmt
export MODEL_STORE='${MODEL_STORE:-$PROD_DIR/models}'
export VAR_DIR='$PROD_DIR/var'
export STATIC_ROOT='$PROD_DIR/static'
export WEB_PORT=$web_port
export WEB_WORKERS=${WEB_WORKERS:-3}
export WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-2}
export DATA_DIR='${DATA_DIR:-$(cd "$ROOT/.." && pwd)/shared/data}'
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 C_FORCE_ROOT=1
EOF
  # Anything else the caller set for the stack (e.g. SCORING_* in the fault tests) is kept too.
  for name in $(compgen -e | grep -E '^(SCORING_|CELERY_VISIBILITY_TIMEOUT|WORKER_HEARTBEAT_SECONDS|VERDICT_WAIT_MS|TORCHSERVE_|LOG_LEVEL|.*_RATE$)' || true); do
    case $name in TORCHSERVE_URL|TORCHSERVE_MANAGEMENT_URL) continue;; esac
    printf "export %s=%q\n" "$name" "${!name}" >> "$ENV_FILE"
  done
fi
# shellcheck disable=SC1090
source "$ENV_FILE"
export DJANGO_SETTINGS_MODULE=dynabench_site.settings
mkdir -p "$VAR_DIR" "$MODEL_STORE" "$PROD_DIR/torchserve"

pidfile() { echo "$PROD_DIR/pids/$1.pid"; }
running() { local f; f=$(pidfile "$1"); [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null; }

# Start `$@` as part $name in a process group of its own, output to logs/$name.log.
launch() {
  local name=$1; shift
  if running "$name"; then echo "  $name already runs (pid $(cat "$(pidfile "$name")"))"; return; fi
  setsid "$@" >> "$PROD_DIR/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  echo "  $name started (pid $!, log $PROD_DIR/logs/$name.log)"
}

stop_part() {
  local name=$1 f pid
  f=$(pidfile "$name")
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    echo "  $name stopped"
  fi
  rm -f "$f"
}

wait_until() {  # wait_until <seconds> <what> <command...>
  local limit=$1 what=$2; shift 2
  for _ in $(seq 1 $((limit * 2))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "serve_prod: $what did not come up within $limit s" >&2
  return 1
}

redis_up() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping | grep -q PONG; }
ts_up() { "$PY" -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('$TORCHSERVE_URL/ping', timeout=2).status != 200)"; }
web_up() { "$PY" -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$WEB_PORT/healthz/live', timeout=2).status != 200)"; }

start_redis() {
  launch redis redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly yes \
    --dir "$PROD_DIR" --appendfilename "redis-$REDIS_PORT.aof"
  wait_until 20 "Redis on $REDIS_PORT" redis_up
}

prepare_database() {
  "$PY" - <<'EOF'
import os
from urllib.parse import urlparse

url = urlparse(os.environ["DATABASE_URL"])
if url.scheme.startswith("postgres"):
    import psycopg2

    name = url.path.lstrip("/")
    conn = psycopg2.connect(host=url.hostname, port=url.port or 5432, user=url.username, password=url.password,
                            dbname="postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cur.fetchone() is None:
            cur.execute(f'CREATE DATABASE "{name}"')
            print(f"  database {name} created")
EOF
  "$PY" manage.py migrate --noinput -v 0
  if [[ ${DEMO:-1} == 1 ]]; then "$PY" manage.py load_demo > "$PROD_DIR/logs/load_demo.log"; fi
  echo "  database migrated (${DATABASE_URL%%@*}@…)"
}

start_torchserve() {
  local ts=$PROD_DIR/torchserve
  mkdir -p "$ts/tmp" "$ts/logs" "$MODEL_STORE/torchserve"
  "$PY" - "$ts/config.properties" <<'EOF'
import os, re, sys
from pathlib import Path

text = Path("torchserve/config.properties").read_text()
values = {"inference_address": os.environ["TORCHSERVE_URL"], "management_address": os.environ["TORCHSERVE_MANAGEMENT_URL"],
          "metrics_address": f"http://127.0.0.1:{os.environ['TS_METRICS_PORT']}",
          "grpc_inference_port": os.environ["TS_GRPC_PORT"], "grpc_management_port": os.environ["TS_GRPC_MANAGEMENT_PORT"],
          "model_store": f"{os.environ['MODEL_STORE']}/torchserve"}
for key, value in values.items():
    text, found = re.subn(rf"^{re.escape(key)}=.*$", f"{key}={value}", text, flags=re.M)
    if not found:
        text += f"{key}={value}\n"
Path(sys.argv[1]).write_text(text)
EOF
  # One TorchServe per machine at a time (its worker sockets collide): the lock is held while it runs.
  # Every listener is on 127.0.0.1, so the management API is reachable from this machine only; token auth is
  # off here (docker-compose.yml keeps it on, behind an internal network).
  launch torchserve env TMPDIR="$ts/tmp" LOG_LOCATION="$ts/logs" METRICS_LOCATION="$ts/logs" \
    flock -w "${TORCHSERVE_LOCK_WAIT:-900}" /tmp/torchserve.lock \
    "$BIN/torchserve" --start --foreground --ncs --disable-token-auth \
    --model-store "$MODEL_STORE/torchserve" --ts-config "$ts/config.properties"
  # The wait covers the lock: another TorchServe on this machine may hold it for a while.
  wait_until "${TORCHSERVE_START_WAIT:-$(( ${TORCHSERVE_LOCK_WAIT:-900} + 120 ))}" "TorchServe at $TORCHSERVE_URL" ts_up
}

register_models() {
  # Eager, idempotent registration of every open round's ensemble (a 409 "already registered" is success);
  # --prune unregisters ensemble models that no open round uses any more.
  "$PY" manage.py torchserve_register --prune
}

start_web() {
  # Threads: a submission waits up to VERDICT_WAIT_MS for its verdict; during an outage others must not queue.
  launch web "$BIN/gunicorn" dynabench_site.wsgi -b "127.0.0.1:$WEB_PORT" -w "$WEB_WORKERS" --threads "${WEB_THREADS:-8}" --timeout 60 \
    --graceful-timeout 20 --access-logfile - --capture-output
  wait_until 60 "gunicorn on $WEB_PORT" web_up
}

start_worker() {
  # jemalloc when the system has it: retraining fragments glibc's heap (a QA ensemble reached 9 GB resident)
  local jemalloc
  jemalloc=$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2 2>/dev/null | head -n 1 || true)
  launch worker env ${jemalloc:+LD_PRELOAD=$jemalloc} "$BIN/celery" -A dynabench_site worker --loglevel=info --concurrency "$WORKER_CONCURRENCY" \
    -Q "$CELERY_QUEUE" -n "prod-$WEB_PORT@%h" --without-gossip --without-mingle
}

# Word maps on their own queue: one process at a lower CPU priority, models loaded in its own process, so a map
# never holds TorchServe or the CPU that verdicts need.
start_explainer() {
  launch explainer env MODEL_BACKEND=inprocess nice -n 10 "$BIN/celery" -A dynabench_site worker --loglevel=info \
    --concurrency 1 -Q "$CELERY_QUEUE-maps" -n "prod-maps-$WEB_PORT@%h" --without-gossip --without-mingle
}

start_beat() {
  launch beat "$BIN/celery" -A dynabench_site beat --loglevel=info --schedule "$PROD_DIR/celerybeat-schedule"
}

start() {
  case ${1:-all} in
    all)
      echo "serve_prod: starting in $PROD_DIR"
      start_redis
      prepare_database
      "$PY" manage.py collectstatic --noinput -v 0
      start_torchserve
      register_models
      start_web; start_worker; start_explainer; start_beat
      echo "serve_prod: http://127.0.0.1:$WEB_PORT/  (health: /healthz; stop: scripts/serve_prod.sh stop)";;
    redis) start_redis;;
    database) prepare_database;;
    torchserve) start_torchserve;;
    register) register_models;;
    web) start_web;;
    worker) start_worker;;
    explainer) start_explainer;;
    beat) start_beat;;
    *) echo "serve_prod: unknown part $1" >&2; exit 2;;
  esac
}

stop() {
  case ${1:-all} in
    all) for part in beat explainer worker web torchserve redis; do stop_part "$part"; done
         rm -f "$ENV_FILE";;
    *) stop_part "$1";;
  esac
}

status() {
  for part in redis torchserve web worker explainer beat; do
    if running "$part"; then echo "  $part: running (pid $(cat "$(pidfile "$part")"))"; else echo "  $part: stopped"; fi
  done
  "$PY" -c "
import json, urllib.request, urllib.error
try:
    body = urllib.request.urlopen('http://127.0.0.1:$WEB_PORT/healthz', timeout=10).read()
except urllib.error.HTTPError as e:
    body = e.read()
except OSError as e:
    body = json.dumps({'status': 'unreachable', 'error': str(e)}).encode()
print(json.dumps(json.loads(body), indent=1)[:4000])"
}

case ${1:-start} in
  start) start "${2:-all}";;
  stop) stop "${2:-all}";;
  status) status;;
  env) cat "$ENV_FILE";;
  *) echo "usage: $0 start|stop|status|env [part]" >&2; exit 2;;
esac
