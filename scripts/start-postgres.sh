#!/usr/bin/env bash
# Starts a throwaway local PostgreSQL cluster for the results-store tests (and for trying
# `ixbench ingest --db postgresql://...`), and prints the line that points the tests at it:
#   export IXBENCH_TEST_POSTGRES_URL='postgresql://postgres@/ixbench_test?host=DIR&port=PORT'
# Usage: eval "$(scripts/start-postgres.sh)"      (scripts/test.sh does this before ctest)
#        scripts/start-postgres.sh --stop          (stops the cluster; its files stay in DIR)
# Installs nothing: it needs Debian's `postgresql` package (scripts/bootstrap.sh installs it).
# Idempotent: a cluster already running in DIR is reused. It listens on a Unix socket in DIR
# only (no TCP). As root the server runs as the `postgres` user (PostgreSQL refuses root).
# Environment: IXBENCH_PG_DIR (default /tmp/ixbench-postgres), IXBENCH_PG_PORT (default 54329).
set -euo pipefail

dir=${IXBENCH_PG_DIR:-/tmp/ixbench-postgres}
port=${IXBENCH_PG_PORT:-54329}
database=ixbench_test
say() { echo "start-postgres: $*" >&2; }

bin=""
for candidate in /usr/lib/postgresql/*/bin; do
  [[ -x $candidate/initdb ]] && bin=$candidate
done
if [[ -z $bin ]]; then
  say "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb): run scripts/bootstrap.sh, or apt-get install postgresql"
  exit 1
fi

as_owner=()
if [[ $(id -u) -eq 0 ]]; then as_owner=(runuser -u postgres --); fi
run() { "${as_owner[@]}" "$@"; }

if [[ ${1:-} == --stop ]]; then
  if [[ -f $dir/data/postmaster.pid ]]; then run "$bin/pg_ctl" -D "$dir/data" -m fast stop >&2; fi
  exit 0
fi

if [[ ! -f $dir/data/PG_VERSION ]]; then
  mkdir -p "$dir"
  if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; fi
  run "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
    { say "initdb failed, see $dir/initdb.log"; exit 1; }
fi

if ! run "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
  run "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -p $port -c listen_addresses='' -c fsync=off -c max_connections=200" start >/dev/null ||
    { say "the server did not start, see $dir/server.log"; exit 1; }
fi

psql=("$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -tAq)
if [[ $("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = '$database'") != 1 ]]; then
  "${psql[@]}" -c "CREATE DATABASE $database" >&2
fi
say "PostgreSQL running in $dir (socket $dir/.s.PGSQL.$port)"
echo "export IXBENCH_TEST_POSTGRES_URL='postgresql://postgres@/$database?host=$dir&port=$port'"
