#!/usr/bin/env bash
# The deploy guide's build, run as docs/deploy.md writes it (the first `sh` block of
# "## 2. Build"), with the SAM CLI and cargo-lambda pinned in infra/versions.env; then every
# built function is checked to be the architecture template.yaml deploys it as (its
# `bootstrap`'s ELF machine), and the model layer to hold the bundled model. The guide's
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
"$venv/bin/python" - "$embedder" <<'EOF'
"""Each built function's bootstrap is the ELF machine its Architectures name under Embedder."""
import sys
from pathlib import Path

import yaml

embedder = sys.argv[1]
local = embedder == "bundled"  # the template's LocalEmbedder (auto without a key is bundled too)


class Tagged(yaml.SafeLoader):
    pass


def tagged(loader, suffix, node):
    """`!If [a, b, c]` as {"!If": [a, b, c]}."""
    if isinstance(node, yaml.SequenceNode):
        return {"!" + suffix: loader.construct_sequence(node, deep=True)}
    if isinstance(node, yaml.MappingNode):
        return {"!" + suffix: loader.construct_mapping(node, deep=True)}
    return {"!" + suffix: loader.construct_scalar(node)}


Tagged.add_multi_constructor("!", tagged)
template = yaml.load(Path("template.yaml").read_text(), Loader=Tagged)
default = template["Globals"]["Function"]["Architectures"]
machines = {"x86_64": 62, "arm64": 183}
problems, checked = [], 0
for name, resource in template["Resources"].items():
    if resource["Type"] != "AWS::Serverless::Function":
        continue
    arch = resource["Properties"].get("Architectures", default)
    if isinstance(arch, dict):
        condition, when_true, when_false = arch["!If"]
        assert condition == "LocalEmbedder", f"{name}: Architectures depends on {condition}"
        arch = when_true if local else when_false
    bootstrap = Path(".aws-sam/build") / name / "bootstrap"
    if not bootstrap.is_file():
        problems.append(f"{name}: no {bootstrap}")
        continue
    head = bootstrap.read_bytes()[:20]
    machine = int.from_bytes(head[18:20], "little")
    if head[:4] != b"\x7fELF" or machine != machines[arch[0]]:
        problems.append(f"{name}: deployed as {arch[0]}, built for ELF machine {machine}")
    checked += 1
    print(f"{name}: {arch[0]} ({bootstrap.stat().st_size // 1024} KiB)")
built = yaml.load(Path(".aws-sam/build/template.yaml").read_text(), Loader=Tagged)
if local:
    uri = built["Resources"]["ModelLayer"]["Properties"]["ContentUri"]
    layer = Path(".aws-sam/build") / uri / "models/e5-small-q4.bin"
    if not layer.is_file():
        problems.append(f"ModelLayer: no {layer}")
    else:
        print(f"ModelLayer: {layer.resolve().relative_to(Path.cwd())} ({layer.stat().st_size >> 20} MiB)")
if problems or checked < 7:
    sys.exit("FAILED: the build does not match the template:\n" + "\n".join(problems or [f"{checked} functions"]))
print(f"the {checked} functions are built for the architectures the stack deploys them as (Embedder={embedder})")
EOF
