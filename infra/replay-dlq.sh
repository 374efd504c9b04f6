#!/usr/bin/env bash
# Sends the activity events in the dead-letter queue back to the index function, then deletes
# each one sent. Usage: bash infra/replay-dlq.sh <queue-url> <function-name> [--include-refused]
# Needs the AWS CLI and python3. A message is either an event EventBridge could not deliver
# (the body is the event) or Lambda's on-failure record (the event is `requestPayload`, the
# reason `responsePayload.errorMessage`). Events the function refused (HTTP 4xx: malformed,
# unsupported) would be refused again: they stay in the queue unless --include-refused. Events
# are invoked asynchronously, so one that fails again returns to the queue; the run ends when a
# batch sends nothing.
set -euo pipefail
queue="${1:?usage: replay-dlq.sh <queue-url> <function-name> [--include-refused]}"
function="${2:?usage: replay-dlq.sh <queue-url> <function-name> [--include-refused]}"
include_refused="${3:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sent=0
skipped=0
while :; do
  aws sqs receive-message --queue-url "$queue" --max-number-of-messages 10 \
    --wait-time-seconds 1 --output json > "$work/batch.json"
  # One line per message: receipt handle, then what to do (send | refused | unreadable); the
  # event itself goes to its own file, never through the shell.
  python3 - "$work" "$include_refused" > "$work/plan" <<'PY'
import json, sys
work, include_refused = sys.argv[1], sys.argv[2] == "--include-refused"
text = open(f"{work}/batch.json").read().strip()
for i, m in enumerate(json.loads(text or "{}").get("Messages", [])):
    try:
        body = json.loads(m["Body"])
        event = body["requestPayload"] if "requestPayload" in body else body
        if not isinstance(event, dict):
            raise ValueError("not an object")
    except (ValueError, KeyError, TypeError):
        print(m["ReceiptHandle"], "unreadable", i)
        continue
    reason = str((body.get("responsePayload") or {}).get("errorMessage", ""))
    if "refused (HTTP 4" in reason and not include_refused:
        print(m["ReceiptHandle"], "refused", i)
        continue
    with open(f"{work}/event-{i}.json", "w") as f:
        json.dump(event, f)
    print(m["ReceiptHandle"], "send", i)
PY
  [ -s "$work/plan" ] || break
  batch_sent=0
  while read -r handle action i; do
    if [ "$action" != send ]; then
      skipped=$((skipped + 1))
      continue
    fi
    aws lambda invoke --function-name "$function" --invocation-type Event \
      --payload "fileb://$work/event-$i.json" "$work/out.json" > /dev/null
    aws sqs delete-message --queue-url "$queue" --receipt-handle "$handle"
    sent=$((sent + 1))
    batch_sent=$((batch_sent + 1))
  done < "$work/plan"
  [ "$batch_sent" -gt 0 ] || break
done
echo "sent $sent events back to $function; left $skipped in the queue (refused or unreadable)"
