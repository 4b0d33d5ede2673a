#!/bin/sh
# docker-compose.yml's PostgreSQL runs this once, when its data volume is new: the role sleuth's serving stages
# connect as. It may log in and nothing else; `sleuth setup` (the compose `init` service, as the schema's owner)
# migrates the graph schema and grants this role SELECT on it.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -v password="$POSTGRES_READER_PASSWORD" <<'SQL'
CREATE ROLE sleuth_reader LOGIN PASSWORD :'password';
SQL
