#!/usr/bin/env bash
# Fills build/model-layer/models/ with the bundled embedder's weights (fetched and checksummed
# by infra/fetch-model.sh) for template.yaml's ModelLayer: run it before `sam build` when the
# stack uses the bundled model (no EmbeddingApiKeySecret). Lambda unpacks the layer under /opt.
set -euo pipefail
cd "$(dirname "$0")/.."
model="$(bash infra/fetch-model.sh)"
mkdir -p build/model-layer/models
cp "$model" build/model-layer/models/e5-small-q4.bin
echo "build/model-layer/models/e5-small-q4.bin ($(du -h build/model-layer/models/e5-small-q4.bin | cut -f1))"
