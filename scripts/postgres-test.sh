#!/usr/bin/env bash
# Starts the local PostgreSQL cluster on loopback and makes the role the tests use
# (securotp, password securotp-test, may create databases: each test gets a fresh one).
# Idempotent. Tests read the URL from SECUROTP_TEST_POSTGRES (default below).
# Usage: scripts/postgres-test.sh
set -euo pipefail
url_default="postgres://securotp:securotp-test@127.0.0.1:5432/postgres"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
version=$(ls /usr/lib/postgresql/ 2>/dev/null | sort -n | tail -n 1)
if [ -z "$version" ]; then
  echo "postgres-test: PostgreSQL is not installed (scripts/install-deps.sh test installs it)" >&2
  exit 69
fi
if ! pg_lsclusters -h 2>/dev/null | awk '{print $4}' | grep -q online; then
  cluster=$(pg_lsclusters -h | awk 'NR==1 {print $2}')
  if [ -z "$cluster" ]; then
    $sudo pg_createcluster "$version" main >/dev/null
    cluster=main
  fi
  $sudo pg_ctlcluster "$version" "$cluster" start
fi
as_postgres() { $sudo runuser -u postgres -- "$@"; }
for _ in $(seq 1 30); do as_postgres psql -qAtc "SELECT 1" >/dev/null 2>&1 && break; sleep 1; done
# The unit tests run suites in parallel, each PostgreSQL one with its own pools (verification,
# push, LISTEN): 100 connections, Debian's default, ran out once push tests were added.
wanted_connections=400
if [ "$(as_postgres psql -qAtc "SHOW max_connections")" -lt "$wanted_connections" ]; then
  as_postgres psql -qc "ALTER SYSTEM SET max_connections = $wanted_connections" >/dev/null
  cluster=$(pg_lsclusters -h | awk '$4 == "online" {print $2; exit}')
  $sudo pg_ctlcluster "$version" "$cluster" restart
  for _ in $(seq 1 30); do as_postgres psql -qAtc "SELECT 1" >/dev/null 2>&1 && break; sleep 1; done
fi
as_postgres psql -qAtc "SELECT 1 FROM pg_roles WHERE rolname = 'securotp'" | grep -q 1 \
  || as_postgres psql -qc "CREATE ROLE securotp LOGIN CREATEDB PASSWORD 'securotp-test'"
as_postgres psql -qc "ALTER ROLE securotp CREATEDB PASSWORD 'securotp-test'" >/dev/null
echo "PostgreSQL for tests: ${SECUROTP_TEST_POSTGRES:-$url_default}"
