#!/usr/bin/env bash
# The deploy guide's build, run as docs/deploy.md writes it (the first `sh` block of
# "## 2. Build"), with the SAM CLI and cargo-lambda pinned in infra/versions.env; then every
# built function is checked to be the architecture template.yaml deploys it as (its
# `bootstrap`'s ELF machine, infra/artifacts-check.py), and the model layer to hold the bundled model. The guide's
# `cargo xtask check-config` line is run as written by xtask's own tests. A cold build takes
# about 65 minutes on 2 cores (seven fat-LTO binaries, two architectures), so the test command
# runs it only with DEPLOY_BUILD=1. `--artifacts-only` checks an earlier build's output.
set -euo pipefail
cd "$(dirname "$0")/.."
source infra/versions.env
cache="${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}"

venv="$cache/venv-sam-$SAM_CLI_VERSION-cargo-lambda-$CARGO_LAMBDA_VERSION"
if [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cargo-lambda" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "aws-sam-cli==$SAM_CLI_VERSION" "cargo-lambda==$CARGO_LAMBDA_VERSION"
fi
export PATH="$venv/bin:$PATH" SAM_CLI_TELEMETRY=0

# The command as the guide writes it, its comment left out.
command=$(awk '/^## 2\. Build/ { s = 1 } s && /^```sh/ { c = 1; next } c && /^```/ { exit } c' docs/deploy.md \
  | sed 's/[[:space:]]*#.*$//')
[ -n "$command" ] || { echo "FAILED: docs/deploy.md's Build section has no sh block" >&2; exit 1; }
if [ "${1:-}" != --artifacts-only ]; then
  echo "\$ $command"
  started=$(date +%s)
  bash -c "$command"
  echo "the guide's build: $(( $(date +%s) - started )) s"
fi

embedder=$(grep -oE 'Embedder=[a-z]+' <<<"$command" | cut -d= -f2)
architecture=$(grep -oE 'Architecture=[a-z0-9_]+' <<<"$command" | cut -d= -f2)
facets=$(grep -oE 'WishFacets=[a-z]+' <<<"$command" | cut -d= -f2)
"$venv/bin/python" infra/artifacts-check.py .aws-sam/build "${embedder:-auto}" "${architecture:-arm64}" "${facets:-off}"
