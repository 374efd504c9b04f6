#!/usr/bin/env bash
# `sam build` of template.yaml on a machine without Docker: the bundled model's layer, then
# every function with cargo-lambda (arm64 ones cross-compiled with zig, C through
# infra/zigcc-arm64.sh). Needs `pip install aws-sam-cli cargo-lambda`. Arguments go to sam.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sam >/dev/null && command -v cargo-lambda >/dev/null || {
  echo "sam-build: needs aws-sam-cli and cargo-lambda (pip install aws-sam-cli cargo-lambda)" >&2
  exit 1
}
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
bash infra/model-layer.sh
export CC_aarch64_unknown_linux_gnu="$PWD/infra/zigcc-arm64.sh"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}/sam-target}"
# Build for the architectures the stack deploys: without overrides of its own, the build takes
# the parameters `sam deploy --guided` saved (samconfig.toml), `Embedder` among them.
args=("$@")
if [[ " $* " != *" --parameter-overrides"* ]] && [ -f samconfig.toml ]; then
  saved=$(python3 -c 'import tomllib; c = tomllib.load(open("samconfig.toml", "rb")); v = c.get("default", {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", ""); print(" ".join(v) if isinstance(v, list) else v)')
  # Every parameter is saved (no key is NoEcho: keys are secrets' names), so `Embedder=auto`
  # picks the same architectures here as in the deploy.
  echo "sam-build: the parameters saved in samconfig.toml"
  args+=(--parameter-overrides "$saved")
fi
started=$(date +%s)
# SAM shows cargo's output only once a function is built: a line a minute meanwhile.
(
  while sleep 60; do
    newest=$(ls -td "$CARGO_TARGET_DIR"/release/.fingerprint/* "$CARGO_TARGET_DIR"/*/release/.fingerprint/* \
      2>/dev/null | head -n1 || true)
    newest=$(basename "${newest:-none}")
    echo "sam-build: $(( $(date +%s) - started )) s, compiling (latest: ${newest%-*})"
  done
) &
ticker=$!
# Its sleep too: a sleep left running would hold this script's output open for a minute.
trap 'pkill -P "$ticker" 2>/dev/null || true; kill "$ticker" 2>/dev/null || true' EXIT
sam build --beta-features "${args[@]}"
echo "sam build: $(( $(date +%s) - started )) s"
