#!/bin/sh
# Writes the secrets docker-compose.yml requires, each random, as a .env file on stdout:
#   sh deploy/compose-env.sh > .env
# Run it once; running it again with a cluster's volumes still there gives Postgres a password its data dir
# does not have (`docker compose down -v` first, or keep the old .env).
set -eu
secret() { od -An -N18 -tx1 /dev/urandom | tr -d ' \n'; }
for user in ADMIN CLIENT GATEWAY INTAKE PLANNER RETRIEVE GRAPH GRADER SYNTHESIZER SLEUTH SYS ALPHA BETA; do
  echo "SLEUTH_${user}_PASSWORD=$(secret)"
done
echo "POSTGRES_PASSWORD=$(secret)"
echo "POSTGRES_READER_PASSWORD=$(secret)"
echo "QDRANT_API_KEY=$(secret)"
