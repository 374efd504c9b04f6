# Helpers for starting a test service on loopback; sourced by infra/dynamodb-local.sh and
# infra/qdrant-server.sh.

# free_ports N: N free loopback TCP ports, space-separated.
free_ports() {
  python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' "$1"
}

# await_service NAME PID LOG SECONDS CHECK...: runs CHECK every 0.2 s until it succeeds. If the
# service (PID) exits, or SECONDS pass, prints its LOG to stderr, stops it and fails.
await_service() {
  local name="$1" pid="$2" log="$3" seconds="$4"
  shift 4
  for _ in $(seq 1 $((seconds * 5))); do
    "$@" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$name exited; log:" >&2; cat "$log" >&2; return 1; }
    sleep 0.2
  done
  echo "$name was not ready in $seconds s; log:" >&2; cat "$log" >&2
  kill "$pid" 2>/dev/null
  return 1
}
