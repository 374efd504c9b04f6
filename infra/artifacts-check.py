"""The deploy build's artifacts match the template: each function's `bootstrap` is the ELF
machine its `Architectures` name under the build's `Embedder` and `Architecture` (resolved as
CloudFormation would: the Globals' `!Ref Architecture`, the `!If [ShipsModel, ...]` of the
functions that run the bundled model: with the bundled embedder, or beside an API one with
`WishFacets=bundled`), linked position-dependent (ELF type EXEC: functions/link.rs,
half the cold start), and the model layer holds the bundled model.

Usage: python infra/artifacts-check.py BUILD_DIR EMBEDDER ARCHITECTURE [WISH_FACETS] (what
infra/deploy-build-check.sh runs on `.aws-sam/build`), or `--self-test`: the same checks on
artifacts it fakes (ELF headers), right and wrong, so they run in the test command and cannot rot.
"""
import sys
import tempfile
from pathlib import Path

import yaml

MACHINES = {"x86_64": 62, "arm64": 183}
# ELF e_type: ET_EXEC, a position-dependent executable (a PIE is ET_DYN, 3).
EXEC = 2
# Text only the Qdrant Edge adapter carries (its errors): a deployed function uses a Qdrant
# server, and `cargo lambda build` leaves the crates' `edge` feature out (their Cargo.toml).
EDGE = b"vector index (edge)"


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


def load(path):
    return yaml.load(Path(path).read_text(), Loader=Tagged)


def ships_model(embedder, wish_facets):
    """ShipsModel: the bundled embedder (auto without a key is bundled), or the facets beside."""
    return embedder in ("bundled", "auto") or wish_facets == "bundled"


def architectures(template, embedder, architecture, wish_facets="off"):
    """Each function's architecture as deployed with these parameters."""
    local = ships_model(embedder, wish_facets)

    def resolve(value):
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict) and "!Ref" in value:
            assert value["!Ref"] == "Architecture", f"Architectures refers to {value['!Ref']}"
            return architecture
        if isinstance(value, dict) and "!If" in value:
            condition, when_true, when_false = value["!If"]
            assert condition == "ShipsModel", f"Architectures depends on {condition}"
            return resolve(when_true if local else when_false)
        return value

    default = template["Globals"]["Function"]["Architectures"]
    return {
        name: resolve(r["Properties"].get("Architectures", default))[0]
        for name, r in template["Resources"].items()
        if r["Type"] == "AWS::Serverless::Function"
    }


def check(build, template, embedder, architecture, wish_facets="off", say=print):
    """The problems of the build in `build` (none: it deploys as the template says)."""
    build, problems = Path(build), []
    for name, arch in architectures(template, embedder, architecture, wish_facets).items():
        bootstrap = build / name / "bootstrap"
        if not bootstrap.is_file():
            problems.append(f"{name}: no {bootstrap}")
            continue
        head = bootstrap.read_bytes()[:20]
        kind, machine = int.from_bytes(head[16:18], "little"), int.from_bytes(head[18:20], "little")
        if head[:4] != b"\x7fELF" or machine != MACHINES[arch]:
            problems.append(f"{name}: deployed as {arch}, built for ELF machine {machine}")
        elif kind != EXEC:
            problems.append(f"{name}: ELF type {kind}, not a position-dependent executable ({EXEC}): "
                            "its crate's build script (functions/link.rs) did not link it -no-pie")
        elif EDGE in bootstrap.read_bytes():
            problems.append(f"{name}: carries Qdrant Edge, which a deployed function never runs "
                            "(built without [package.metadata.lambda.build] no_default_features?)")
        else:
            say(f"{name}: {arch} ({bootstrap.stat().st_size // 1024} KiB)")
    if ships_model(embedder, wish_facets):
        uri = load(build / "template.yaml")["Resources"]["ModelLayer"]["Properties"]["ContentUri"]
        layer = build / uri / "models/e5-small-q4.bin"
        if not layer.is_file():
            problems.append(f"ModelLayer: no {layer}")
    return problems


def fake(build, template, embedder, architecture, facets="off", wrong=None, edge=None, pie=None):
    """Artifacts as a build for these parameters leaves them; `wrong` built for the other
    architecture, `edge` with Qdrant Edge in it, `pie` position-independent."""
    for name, arch in architectures(template, embedder, architecture, facets).items():
        if name == wrong:
            arch = "x86_64" if arch == "arm64" else "arm64"
        (build / name).mkdir(parents=True)
        kind = 3 if name == pie else EXEC
        head = b"\x7fELF" + bytes(12) + kind.to_bytes(2, "little") + MACHINES[arch].to_bytes(2, "little")
        (build / name / "bootstrap").write_bytes(head + bytes(100) + (EDGE if name == edge else b""))
    (build / "ModelLayer" / "models").mkdir(parents=True)
    (build / "ModelLayer" / "models" / "e5-small-q4.bin").write_bytes(b"weights")
    (build / "template.yaml").write_text("Resources:\n  ModelLayer:\n    Properties:\n      ContentUri: ModelLayer\n")


def self_test():
    template, failed = load("template.yaml"), []
    functions = [n for n, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    sets = [(e, f, a) for e, f in (("bundled", "off"), ("api", "off"), ("api", "bundled")) for a in ("arm64", "x86_64")]
    for embedder, facets, architecture in sets:
        named = f"Embedder={embedder} WishFacets={facets} Architecture={architecture}"
        quiet = lambda _: None  # noqa: E731
        with tempfile.TemporaryDirectory() as right, tempfile.TemporaryDirectory() as wrong:
            fake(Path(right), template, embedder, architecture, facets)
            if problems := check(right, template, embedder, architecture, facets, say=quiet):
                failed.append(f"{named}: a right build refused: {problems}")
            built = architectures(template, embedder, architecture, facets)
            moved = next(n for n, a in built.items() if a == architecture)
            fake(Path(wrong), template, embedder, architecture, facets, wrong=moved)
            if not check(wrong, template, embedder, architecture, facets, say=quiet):
                failed.append(f"{named}: {moved} built wrong, not seen")
        with tempfile.TemporaryDirectory() as heavy:
            fake(Path(heavy), template, embedder, architecture, facets, edge="RagSearchFunction")
            if not check(heavy, template, embedder, architecture, facets, say=quiet):
                failed.append(f"{named}: Qdrant Edge in a function, not seen")
        with tempfile.TemporaryDirectory() as pie:
            fake(Path(pie), template, embedder, architecture, facets, pie="AssistantFunction")
            if not check(pie, template, embedder, architecture, facets, say=quiet):
                failed.append(f"{named}: a PIE bootstrap, not seen")
    # Beside an API embedder the facets put the four embedding functions on x86_64.
    if architectures(template, "api", "arm64", "bundled")["RagSearchFunction"] != "x86_64":
        failed.append("Embedder=api WishFacets=bundled: rag-search is not x86_64")
    for problem in failed:
        print(f"FAILED: {problem}")
    print(f"artifacts check: {len(functions)} functions, {len(sets)} parameter sets, right builds pass and wrong ones (an architecture, Qdrant Edge, a PIE) fail")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    build, embedder, architecture = sys.argv[1:4]
    facets = sys.argv[4] if len(sys.argv) > 4 else "off"
    template = load("template.yaml")
    if problems := check(build, template, embedder, architecture, facets):
        sys.exit("FAILED: the build does not match the template:\n" + "\n".join(problems))
    print(f"the functions are built for the architectures the stack deploys them as "
          f"(Embedder={embedder}, Architecture={architecture}, WishFacets={facets})")
