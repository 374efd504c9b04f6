#!/usr/bin/env bash
# Changes stack parameters on the deployed template (no build, no checkout); every other
# parameter keeps its value. Values may hold commas (Budgets, JwtAudience, AllowedOrigins,
# SearchProviders): the parameters reach the AWS CLI as JSON, not its comma-split shorthand.
# A changed parameter publishes a new version of each aliased function that reads it, which
# takes traffic through CodeDeploy like a code change (template.yaml, ConfigurationDigest).
# Usage: STACK=... REGION=... bash infra/set-parameter.sh Name=Value [Name=Value ...]
set -euo pipefail
: "${STACK:?set STACK to the stack name}" "${REGION:?set REGION to its region}"
[ $# -gt 0 ] || { echo "usage: STACK=... REGION=... $0 Name=Value [Name=Value ...]" >&2; exit 2; }
keys=$(aws cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" \
  --query 'Stacks[0].Parameters[].ParameterKey' --output json)
parameters=$(python3 - "$keys" "$@" <<'PY'
import json
import sys

keys = json.loads(sys.argv[1])
pairs = {}
for arg in sys.argv[2:]:
    name, sep, value = arg.partition("=")
    if not sep:
        sys.exit(f"{arg!r} is not Name=Value")
    pairs[name] = value
# These choose the binaries' architecture: the previous template's builds would not run.
rebuild = sorted(set(pairs) & {"Architecture", "Embedder", "EmbeddingApiKeySecret"})
if rebuild:
    sys.exit(f"{', '.join(rebuild)} change what is built: bash infra/sam-build.sh, then sam deploy (docs/deploy.md)")
unknown = sorted(set(pairs) - set(keys))
if unknown:
    sys.exit(f"not parameters of the stack: {', '.join(unknown)}")
# A malformed price table would stop every function at start (500 misconfigured), the ones
# without a canary until the stack rolls back: refuse what is not a JSON object of objects.
if pairs.get("Prices"):
    try:
        table = json.loads(pairs["Prices"])
    except ValueError as e:
        sys.exit(f"Prices is not JSON: {e} (docs/costs.md#prices)")
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        sys.exit('Prices must be {"provider/model": {"input_per_1k_usd": ..., ...}} (docs/costs.md#prices)')
print(json.dumps([{"ParameterKey": k, "ParameterValue": pairs[k]} if k in pairs
                  else {"ParameterKey": k, "UsePreviousValue": True} for k in keys]))
PY
)
aws cloudformation update-stack --stack-name "$STACK" --region "$REGION" --use-previous-template \
  --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --parameters "$parameters"
aws cloudformation wait stack-update-complete --stack-name "$STACK" --region "$REGION"
