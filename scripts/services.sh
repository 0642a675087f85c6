#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer; start them when they don't.
# This machine kind starts both before a session and before CI; elsewhere this starts them.
set -uo pipefail
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
if ! pg_up && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! redis_up && command -v redis-server >/dev/null; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir /tmp >/dev/null || true
fi
for _ in $(seq 1 30); do pg_up && redis_up && exit 0; sleep 1; done
pg_up || echo "PostgreSQL is not answering on 127.0.0.1:5432" >&2
redis_up || echo "Redis is not answering on 127.0.0.1:6379" >&2
exit 1
