#!/usr/bin/env bash
# Sends the activity events in the dead-letter queue back to the index function, then deletes
# each one sent. Usage: bash infra/replay-dlq.sh <queue-url> <function-name>
# Needs the AWS CLI and python3. A message is either an event EventBridge could not deliver
# (the body is the event) or Lambda's on-failure record (the event is `requestPayload`).
# Events are invoked asynchronously, so one that fails again returns to the queue.
set -euo pipefail
queue="${1:?usage: replay-dlq.sh <queue-url> <function-name>}"
function="${2:?usage: replay-dlq.sh <queue-url> <function-name>}"
sent=0
while :; do
  batch="$(aws sqs receive-message --queue-url "$queue" --max-number-of-messages 10 \
    --wait-time-seconds 1 --output json)"
  count="$(printf '%s' "$batch" | python3 -c 'import json,sys; print(len((json.loads(sys.stdin.read() or "{}")).get("Messages", [])))')"
  [ "$count" -eq 0 ] && break
  for i in $(seq 0 $((count - 1))); do
    pair="$(printf '%s' "$batch" | python3 -c '
import json, sys
m = json.load(sys.stdin)["Messages"][int(sys.argv[1])]
body = json.loads(m["Body"])
event = body.get("requestPayload", body)
print(m["ReceiptHandle"]); print(json.dumps(event))' "$i")"
    handle="$(printf '%s\n' "$pair" | sed -n 1p)"
    event="$(printf '%s\n' "$pair" | sed -n 2p)"
    aws lambda invoke --function-name "$function" --invocation-type Event \
      --cli-binary-format raw-in-base64-out --payload "$event" /dev/null > /dev/null
    aws sqs delete-message --queue-url "$queue" --receipt-handle "$handle"
    sent=$((sent + 1))
  done
done
echo "sent $sent events back to $function"
