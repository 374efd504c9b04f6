#!/usr/bin/env bash
# Starts the Qdrant server binary $1 on free loopback ports (HTTP and gRPC) with storage in a
# fresh temporary directory, waits until it is ready, and prints `export` lines for QDRANT_URL
# (its gRPC URL, what qdrant-client speaks) and QDRANT_PID; `eval "$(infra/qdrant-server.sh BIN)"`.
set -euo pipefail
bin="$1"
dir="$(mktemp -d)"
read -r http grpc < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
QDRANT__STORAGE__STORAGE_PATH="$dir/storage" QDRANT__STORAGE__SNAPSHOTS_PATH="$dir/snapshots" \
QDRANT__SERVICE__HTTP_PORT="$http" QDRANT__SERVICE__GRPC_PORT="$grpc" \
QDRANT__TELEMETRY_DISABLED=true QDRANT__SERVICE__HOST=127.0.0.1 \
  "$bin" >"$dir/qdrant.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  if python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$http/readyz', timeout=1)" 2>/dev/null; then
    echo "export QDRANT_URL=http://127.0.0.1:$grpc QDRANT_PID=$pid"
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || { echo "Qdrant exited; log:" >&2; cat "$dir/qdrant.log" >&2; exit 1; }
  sleep 0.2
done
echo "Qdrant did not become ready on port $http in 30 s; log:" >&2; cat "$dir/qdrant.log" >&2
kill "$pid" 2>/dev/null; exit 1
