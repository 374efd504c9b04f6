#!/usr/bin/env bash
# Builds a checkout and deploys it with the stack's parameters as they are now (the last
# deploy's, as infra/set-parameter.sh or the console changed them since), changed only by the
# Name=Value given: a runbook's change survives the next code deploy. The build takes every
# value (the binaries' architectures follow them); `sam deploy` sends only the names given and
# those that chose the build, and the SAM CLI sends the rest as their previous values, so a
# runbook change made while this builds is kept too. It reads no samconfig.toml: the on-call
# engineer's copy may be another deploy's. Then each aliased function keeps its newest
# KEEP_VERSIONS (default 5) versions, every one an alias serves and the one to roll back to
# (infra/versions.py prune).
#   SOURCE=<dir>      builds and deploys that checkout instead of this one (an older commit's
#                     `git worktree`: a rollback that sticks), with this checkout's scripts.
#   PARAMETERS=<file> a stack that is gone (docs/deploy.md, "6. Tear down"): every parameter
#                     from what `aws cloudformation describe-stacks` printed before it went.
# Usage: STACK=... REGION=... [SOURCE=dir] [PARAMETERS=file] bash infra/deploy.sh [Name=Value ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "${SOURCE:-$here/..}" && pwd)"
: "${STACK:?set STACK to the stack name}" "${REGION:?set REGION to its region}"
[ -f "$source_dir/template.yaml" ] && [ -f "$source_dir/infra/sam-build.sh" ] ||
  { echo "deploy: $source_dir is not a checkout of this project (template.yaml, infra/sam-build.sh)" >&2; exit 1; }
if [ -n "${PARAMETERS:-}" ]; then
  stacks=$(cat "$PARAMETERS")
  mode=new
else
  stacks=$(aws cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" --output json)
  mode=deploy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TEMPLATE="$source_dir/template.yaml"
# NUL-separated values (they may hold spaces, commas, quotes), read into arrays (bash 3.2 too).
python3 "$here/parameters.py" build "$stacks" "$@" > "$work/build"
python3 "$here/parameters.py" "$mode" "$stacks" "$@" > "$work/deploy"
build=() deploy=()
while IFS= read -r -d '' v || [ -n "$v" ]; do build+=("$v"); done < "$work/build"
while IFS= read -r -d '' v || [ -n "$v" ]; do deploy+=("$v"); done < "$work/deploy"
echo "deploy: $source_dir, the stack's values changed by: ${*:-nothing} (sends ${#deploy[@]} of ${#build[@]})"
# An empty configuration: nothing of a local samconfig.toml (parameters, bucket, stack,
# build_dir) applies.
echo 'version = 0.1' > "$work/samconfig.toml"
(cd "$source_dir" && bash infra/sam-build.sh --config-file "$work/samconfig.toml" --parameter-overrides "${build[@]}")
(cd "$source_dir" && sam deploy --config-file "$work/samconfig.toml" --template-file .aws-sam/build/template.yaml \
  --stack-name "$STACK" --region "$REGION" --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND \
  --resolve-s3 --no-confirm-changeset --no-fail-on-empty-changeset --parameter-overrides "${deploy[@]}")
python3 "$here/versions.py" prune --keep "${KEEP_VERSIONS:-5}"
