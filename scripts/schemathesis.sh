#!/usr/bin/env bash
# Schemathesis over the OpenAPI schema (/api/schema/) against a live server (gunicorn, DEBUG=false) on a free
# port, as anonymous, annotator and owner (tokens from POST /api/auth/token/): not one 5xx may come back, and
# every answer must match the schema it documents (response_schema_conformance).
#
# The server runs on a freshly migrated PostgreSQL database with the demo loaded (no models: scoring stays
# pending, 202). Jobs go to an in-process broker that no worker reads (CELERY_BROKER_URL=memory://), so a round
# pipeline or an upload evaluation that the fuzzer starts is queued and never trains. Rate limits are raised so
# the run explores the API instead of meeting them (the limits themselves are tested in the suite).
# Schemathesis speaks OpenAPI (and GraphQL) only: the pages' form POSTs are not in the schema, and are fuzzed by
# tests/site/test_form_fuzz.py (hypothesis, every form route of the permission matrix, in the normal suite).
#
#   bash scripts/schemathesis.sh                 # what CI runs (a few minutes)
#   ST_MAX_EXAMPLES=50 bash scripts/schemathesis.sh
#   SCHEMATHESIS_DATABASE_URL=postgres://postgres@127.0.0.1:5432/mine bash scripts/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
ST=${ST:-.venv/bin/st}
GUNICORN=${GUNICORN:-.venv/bin/gunicorn}
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-8}
CHECKS=${ST_CHECKS:-not_a_server_error,response_schema_conformance}
WORK=$(mktemp -d -t schemathesis-XXXXXX)
started=$(date +%s)

export DATABASE_URL=${SCHEMATHESIS_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/schemathesis}
export VAR_DIR=$WORK/var DJANGO_SETTINGS_MODULE=dynabench_site.settings
export DEBUG=false ALLOWED_HOSTS=127.0.0.1,localhost
export CELERY_BROKER_URL=memory://localhost/ CELERY_RESULT_BACKEND=cache+memory:// VERDICT_WAIT_MS=0
export LOGIN_RATE=100000/min LOGIN_ACCOUNT_RATE=100000/min TOKEN_RATE=100000/hour VOTE_RATE=100000/min SIGNUP_RATE=100000/hour
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1

server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== schemathesis: a fresh database ($DATABASE_URL), migrations, the demo"
"$PY" - <<'EOF'
import os
from urllib.parse import urlparse

import psycopg2

url = urlparse(os.environ["DATABASE_URL"])
name = url.path.lstrip("/")
conn = psycopg2.connect(host=url.hostname, port=url.port or 5432, user=url.username, password=url.password,
                        dbname="postgres")
conn.autocommit = True
with conn.cursor() as cur:
    cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    cur.execute(f'CREATE DATABASE "{name}"')
EOF
"$PY" manage.py migrate --noinput -v 0
"$PY" manage.py load_demo > "$WORK/demo.log"

port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
base="http://127.0.0.1:$port"
"$GUNICORN" dynabench_site.wsgi -w 2 -b "127.0.0.1:$port" --timeout 120 --error-logfile "$WORK/server.log" \
  --capture-output > /dev/null 2>&1 &
server_pid=$!
# The schema, once the server answers (a minute at most); then a token per persona.
"$PY" - "$base" "$WORK/schema.json" <<'EOF'
import sys, time, urllib.request

base, out = sys.argv[1], sys.argv[2]
for _ in range(60):
    try:
        with urllib.request.urlopen(f"{base}/api/schema/?format=json", timeout=10) as answer, open(out, "wb") as f:
            f.write(answer.read())
        break
    except OSError:
        time.sleep(1)
else:
    sys.exit("the server did not answer within a minute")
EOF

token() {
  "$PY" - "$base" "$1" <<'EOF'
import json, sys, urllib.request

base, username = sys.argv[1], sys.argv[2]
body = json.dumps({"username": username, "password": "dynabench-demo", "name": "schemathesis"}).encode()
request = urllib.request.Request(f"{base}/api/auth/token/", body, {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request, timeout=30))["key"])
EOF
}
annotator=$(token annotator)
owner=$(token owner)

status=0
for who in anonymous annotator owner; do
  echo "== schemathesis as $who"
  auth=()
  [[ $who == annotator ]] && auth=(-H "Authorization: Token $annotator")
  [[ $who == owner ]] && auth=(-H "Authorization: Token $owner")
  # The token endpoints are left out for token holders: revoking their own token would end the run's identity.
  skip=()
  [[ $who != anonymous ]] && skip=(--exclude-path-regex '^/api/tokens/')
  "$ST" --config-file scripts/schemathesis.toml run "$WORK/schema.json" --url "$base" "${auth[@]}" "${skip[@]}" \
    --checks "$CHECKS" --phases examples,coverage,fuzzing,stateful --max-examples "$MAX_EXAMPLES" \
    --request-timeout 60 --workers 2 --seed 14 --no-color --suppress-health-check all --generation-database none \
    --report junit --report-dir "$WORK/report-$who" || status=$?
  if [[ $status -ne 0 ]]; then break; fi
done

if grep -q "Internal Server Error\|Traceback" "$WORK/server.log"; then
  echo "== the server logged errors:"
  grep -B2 -A30 "Traceback" "$WORK/server.log" | head -200
  status=1
fi
echo "== schemathesis: $(( $(date +%s) - started )) s, exit $status"
exit $status
