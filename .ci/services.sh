#!/usr/bin/env bash
# Starts the local services Belfry's tests use, when they are not already running, and installs
# librdkafka-dev (the Kafka tests' mock cluster) and chromium (the dashboard's browser test) when missing.
# Each command is the machine's documented one; each start is followed by a bounded wait.
set -u

wait_port() { # host port seconds
  local deadline=$((SECONDS + $3))
  until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then echo "service on $1:$2 did not come up within $3 s" >&2; return 1; fi
    sleep 0.5
  done
}

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# librdkafka's mock cluster: the Kafka channel's tests compile a launcher against it (gcc -lrdkafka).
if [ ! -f /usr/include/librdkafka/rdkafka_mock.h ] || ! command -v gcc >/dev/null; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librdkafka-dev gcc || echo "could not install librdkafka-dev: the Kafka tests will fail" >&2
fi

# Debian's Chromium: test/browser/ drives it with playwright-core (which downloads no browser).
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || echo "could not install chromium: the dashboard's browser test will be skipped" >&2
fi

# The README's commands, which test/e2e/readme.test.ts runs as written, use curl, jq and git.
if ! command -v jq >/dev/null || ! command -v curl >/dev/null || ! command -v git >/dev/null; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq curl git || echo "could not install jq, curl or git: the README test will fail" >&2
fi

# Citus, into the system's PostgreSQL, for the tests that start a throw-away Citus cluster
# (test/support/citus.ts): the shared scripts' install.sh, from $BELFRY_CITUS_SCRIPTS, else
# ../shared/citus beside the repository, else /work/shared/citus. It does nothing when Citus is
# installed already; its output goes to a log.
root=$(cd "$(dirname "$0")/.." && pwd)
for citus_dir in "${BELFRY_CITUS_SCRIPTS:-}" "$root/../shared/citus" /work/shared/citus; do
  if [ -n "$citus_dir" ] && [ -f "$citus_dir/install.sh" ]; then
    citus_log="${TMPDIR:-/tmp}/belfry-citus-install.log"
    if bash "$citus_dir/install.sh" >"$citus_log" 2>&1; then
      tail -n1 "$citus_log"
    else
      echo "could not install Citus with $citus_dir/install.sh (log: $citus_log): the Citus tests will be skipped (they fail with BELFRY_REQUIRE_CITUS=1)" >&2
      tail -n5 "$citus_log" >&2
    fi
    break
  fi
done

if ! up 5432 && command -v pg_ctlcluster >/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  wait_port 127.0.0.1 5432 60 || true
fi
if ! up 6379 && command -v redis-server >/dev/null; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  wait_port 127.0.0.1 6379 30 || true
fi
if ! up 5672 && command -v rabbitmq-server >/dev/null; then
  rabbitmq-server -detached || true
  wait_port 127.0.0.1 5672 120 || true
fi
if ! up 4222 && [ -x /usr/sbin/nats-server ]; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server || true
  wait_port 127.0.0.1 4222 30 || true
fi
exit 0
