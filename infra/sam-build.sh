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
started=$(date +%s)
sam build --beta-features "$@"
echo "sam build: $(( $(date +%s) - started )) s"
