#!/usr/bin/env bash
# Starts the Qdrant server binary $1 on free loopback ports (HTTP and gRPC) with storage in a
# fresh temporary directory, waits until it is ready, and prints `export` lines for QDRANT_URL
# (its gRPC URL, what qdrant-client speaks) and QDRANT_PID; `eval "$(infra/qdrant-server.sh BIN)"`.
set -euo pipefail
source "$(dirname "$0")/service.sh"
bin="$1"
dir="$(mktemp -d)"
read -r http grpc < <(free_ports 2)
QDRANT__STORAGE__STORAGE_PATH="$dir/storage" QDRANT__STORAGE__SNAPSHOTS_PATH="$dir/snapshots" \
QDRANT__SERVICE__HTTP_PORT="$http" QDRANT__SERVICE__GRPC_PORT="$grpc" \
QDRANT__TELEMETRY_DISABLED=true QDRANT__SERVICE__HOST=127.0.0.1 \
  "$bin" >"$dir/qdrant.log" 2>&1 &
pid=$!
await_service Qdrant "$pid" "$dir/qdrant.log" 30 \
  python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$http/readyz', timeout=1)"
echo "export QDRANT_URL=http://127.0.0.1:$grpc QDRANT_PID=$pid"
