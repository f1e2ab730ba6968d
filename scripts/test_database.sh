#!/usr/bin/env bash
# What the Postgres tests need, made if missing (idempotent): a `postgres` role that may log in over
# 127.0.0.1 without a password and create databases, and a `test` database (the tests create and drop
# their own databases from it). Run by `make test` and `.ci/run`. Without a Postgres on 127.0.0.1:5432
# it says so and changes nothing (the Postgres tests then fail, naming what to start).
set -uo pipefail
HOST=127.0.0.1
if ! pg_isready -h "$HOST" -p 5432 -q 2>/dev/null; then
  echo "test database: no Postgres on $HOST:5432; start it (Debian: pg_ctlcluster 15 main start)" >&2
  exit 0
fi
as_superuser() {  # the local superuser over the Unix socket (peer authentication), when we may become it
  if [ "$(id -un)" = postgres ]; then psql -qAt "$@"; else runuser -u postgres -- psql -qAt "$@"; fi
}
if ! psql -h "$HOST" -U postgres -d postgres -qAtc 'SELECT 1' >/dev/null 2>&1; then
  as_superuser -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'postgres') THEN CREATE ROLE postgres LOGIN SUPERUSER; END IF; END \$\$;" \
    || { echo "test database: cannot create the postgres role (run as root or postgres)" >&2; exit 1; }
  hba=$(as_superuser -c 'SHOW hba_file')
  if ! grep -qE "^host\s+all\s+postgres\s+127.0.0.1/32\s+trust" "$hba"; then
    sed -i "1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust" "$hba"
    as_superuser -c 'SELECT pg_reload_conf()' >/dev/null
  fi
fi
if [ "$(psql -h "$HOST" -U postgres -d postgres -qAtc "SELECT 1 FROM pg_database WHERE datname = 'test'")" != 1 ]; then
  createdb -h "$HOST" -U postgres test
fi
psql -h "$HOST" -U postgres -d test -qAtc 'SELECT 1' >/dev/null && echo "test database: postgres@$HOST/test ready"
