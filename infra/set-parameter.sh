#!/usr/bin/env bash
# Changes stack parameters on the deployed template (no build, no checkout); every other
# parameter keeps its value. Values may hold commas (Budgets, JwtAudience, AllowedOrigins,
# SearchProviders): the parameters reach the AWS CLI as JSON, not its comma-split shorthand.
# A changed parameter publishes a new version of each aliased function that reads it, which
# takes traffic through CodeDeploy like a code change (template.yaml, ConfigurationDigest).
# The change lives in the stack, and the next infra/deploy.sh deploys with the stack's values,
# so it is kept. Parameters that change what is built are refused: infra/deploy.sh builds. So
# is any change while `live` runs other code than the stack's (a rollback by hand).
# Usage: STACK=... REGION=... bash infra/set-parameter.sh Name=Value [Name=Value ...]
set -euo pipefail
: "${STACK:?set STACK to the stack name}" "${REGION:?set REGION to its region}"
[ $# -gt 0 ] || { echo "usage: STACK=... REGION=... $0 Name=Value [Name=Value ...]" >&2; exit 2; }
here="$(dirname "$0")"
# After a rollback by hand, `live` runs older code than the stack holds, and the update would
# publish the stack's again: refused until the rollback is made to stick (infra/deploy.sh).
python3 "$here/versions.py" drift >/dev/null
stacks=$(aws cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" --output json)
parameters=$(python3 "$here/parameters.py" update "$stacks" "$@")
aws cloudformation update-stack --stack-name "$STACK" --region "$REGION" --use-previous-template \
  --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --parameters "$parameters"
aws cloudformation wait stack-update-complete --stack-name "$STACK" --region "$REGION"
