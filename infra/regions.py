"""Where the stack deploys and what each region gets, from cfn-lint's region data (the pinned
version's CloudFormation resource types, region by region):

- the root template deploys in every `aws`-partition region whose CloudFormation has the HTTP
  API: every resource type of the SAM transform's output exists there. CloudFormation refuses
  a template that names a type its region lacks (whether a false condition spares it is
  reported both ways: cfn-lint#3495, serverless-application-model#1167), so the root names none
  that any such region lacks;
- each nested stack (infra/stacks/) is made exactly where every type of its template exists:
  its condition, evaluated in the region (the parameters' defaults, a budget topic given);
- docs/deploy.md's table of regions is the one this prints;
- with `--lint`: cfn-lint on the root template in every region where it deploys, and on each
  nested template in the regions where it is made. Regions alike for a template (the same
  schema, by cfn-lint's own hash, of every resource type it names, and the same value of every
  condition) give the same result: one of each kind is linted (12 of 32 for the root). A pass
  is kept under `$RESEARCH_BUNDLE_CACHE/cfn-lint-passed/` by a key of every input (cfn-lint's
  version, the templates, these scripts, the regions and what makes them alike), so an
  unchanged template is not linted again; a failure is never kept.
- with `--check-key`: that a change of each of those inputs changes the key.

Usage: python infra/regions.py [--lint] [--check-key]; exits 1 on a failed check.
"""
import hashlib
import importlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

from cfnlint.decode import decode
from cfnlint.helpers import REGIONS

from stack import evaluate, nested, transformed

# Regions of other partitions (China, GovCloud, the isolated ones, the European Sovereign Cloud).
OTHER_PARTITIONS = ("cn-", "us-gov-", "us-iso", "eu-isoe-", "eusc-")
REGIONS_AWS = [r for r in REGIONS if not r.startswith(OTHER_PARTITIONS)]


def schemas(region):
    """The resource types CloudFormation has in `region`, each with its schema's hash."""
    return importlib.import_module(f"cfnlint.data.schemas.providers.{region.replace('-', '_')}").types


def types(region):
    """The resource types CloudFormation has in `region`."""
    return set(schemas(region))


# What cfn-lint's result on a template can depend on besides the region's data.
INPUTS = ["template.yaml", "infra/stacks/doors.yaml", "infra/stacks/budget.yaml", "infra/regions.py", "infra/stack.py"]


def kind(region, named, given, conditions):
    """What makes `region` alike another for a template naming the types `named`: each type's
    schema hash there, and every condition's value."""
    have = schemas(region)
    given = {**given, "AWS::Region": region, "AWS::Partition": "aws"}
    values = {name: evaluate({"Condition": name}, given, conditions) for name in conditions}
    return json.dumps([sorted((t, have.get(t)) for t in named), sorted(values.items())])


def key(path, regions, alike, contents, linter):
    """The cache key of a pass of cfn-lint `linter` on `path` in `regions` (of kind `alike`),
    given the `contents` of every input file."""
    blob = json.dumps([linter, path, regions, alike, sorted(contents.items())])
    return hashlib.sha256(blob.encode()).hexdigest()


def check_key():
    """A change of any input changes the key."""
    contents = {path: open(path, encoding="utf-8").read() for path in INPUTS}
    base = dict(path="template.yaml", regions=["us-east-1"], alike="kind", contents=contents, linter="1.51.0")
    changes = {
        "the template": {"contents": {**contents, "template.yaml": contents["template.yaml"] + " "}},
        "a nested template": {"contents": {**contents, "infra/stacks/doors.yaml": ""}},
        "this script": {"contents": {**contents, "infra/regions.py": ""}},
        "the path": {"path": "infra/stacks/doors.yaml"},
        "the regions": {"regions": ["us-east-2"]},
        "the region's kind": {"alike": "other"},
        "cfn-lint's version": {"linter": "1.51.1"},
    }
    same = [what for what, change in changes.items() if key(**{**base, **change}) == key(**base)]
    if same or key(**base) != key(**base):
        sys.exit(f"regions: the lint cache's key does not change with {same}")
    print(f"regions: the lint cache's key changes with each of its {len(changes)} inputs")


if "--check-key" in sys.argv[1:]:
    check_key()


def template_types(template):
    """The resource types `template` names (a `Custom::` type is a custom resource, in every region)."""
    return {r["Type"] for r in template["Resources"].values() if not r["Type"].startswith("Custom::")}


failed = []
resources, parameters = transformed({"BudgetAlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms"})
conditions = decode("template.yaml")[0]["Conditions"]
root = template_types({"Resources": resources})
stacks = nested(resources)
rows = []
deploys = []
made = {name: [] for name in stacks}
for region in REGIONS_AWS:
    have = types(region)
    if not have >= {"AWS::ApiGatewayV2::Api"}:
        rows.append((region, "no (no HTTP API)", *["no"] * len(stacks)))
        continue
    lacking = sorted(root - have)
    if lacking:
        failed.append(f"{region} has the HTTP API but the root template names {lacking}, which it lacks")
        continue
    deploys.append(region)
    given = {**parameters, "AWS::Region": region, "AWS::Partition": "aws"}
    row = [region, "yes"]
    for name, template in stacks.items():
        possible = template_types(template) <= have
        if evaluate({"Condition": resources[name]["Condition"]}, given, conditions) != possible:
            failed.append(f"{region}: {name} is {'' if possible else 'not '}possible there, its condition says otherwise")
        if possible:
            made[name].append(region)
        row.append("yes" if possible else "no")
    rows.append(row)

names = list(stacks)
header = ["region", "the stack", *(f"`{n}`" for n in names)]
table = "\n".join(
    ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    + [f"| `{region}` | " + " | ".join(cells) + " |" for region, *cells in rows]
)
print(table)
print(f"the stack deploys in {len(deploys)} of {len(REGIONS_AWS)} aws regions; "
      + "; ".join(f"{n} in {len(made[n])}" for n in names))
if table not in open("docs/deploy.md", encoding="utf-8").read():
    failed.append("docs/deploy.md's table of regions is not the one above")

if "--lint" in sys.argv[1:]:
    # The root one process per region, two at a time: cfn-lint given many regions at once
    # slows far past their sum on this template's region conditions (8 regions: 4.4 minutes,
    # one: 11 seconds). The nested templates are small: all their regions in one process.
    lint = os.path.join(os.path.dirname(sys.executable), "cfn-lint")
    linter = version("cfn-lint")
    contents = {path: open(path, encoding="utf-8").read() for path in INPUTS}
    kept = os.path.join(os.environ.get("RESEARCH_BUNDLE_CACHE") or os.path.expanduser("~/.cache/research-bundle"),
                        "cfn-lint-passed")
    os.makedirs(kept, exist_ok=True)
    runs, alike = [], {}  # (path, regions linted, the pass's file); each path's kinds by the region linted
    for path, regions, named in [("template.yaml", deploys, root)] + [
            (resources[n]["Properties"]["TemplateURL"], made[n], template_types(stacks[n])) for n in names]:
        kinds = {}
        for region in regions:
            kinds.setdefault(kind(region, named, parameters, conditions), []).append(region)
        alike[path] = {group[0]: group for group in kinds.values()}
        for linted in ([[r] for r in alike[path]] if path == "template.yaml" else [list(alike[path])]):
            runs.append((path, linted, os.path.join(kept, key(path, linted, json.dumps(kinds), contents, linter))))
    todo = [run for run in runs if not os.path.exists(run[2])]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda run: subprocess.run([lint, "--regions", *run[1], "--", run[0]],
                                                        capture_output=True, text=True), todo))
    for (path, regions, passed), result in zip(todo, done):
        if result.returncode != 0:
            failed.append(f"cfn-lint {path} in {' '.join(regions)} (and the regions alike: "
                          f"{' '.join(r for region in regions for r in alike[path][region])}):\n{result.stdout}{result.stderr}")
        else:
            open(passed, "w").close()
    for path, kinds in alike.items():
        fresh = sum(len(regions) for p, regions, _ in todo if p == path)
        print(f"cfn-lint {linter} {path}: {sum(map(len, kinds.values()))} regions of {len(kinds)} kinds, "
              f"one of each linted ({len(kinds) - fresh} of them passes kept from an earlier run)")

if failed:
    sys.exit("regions: " + "\n".join(failed))
print("regions: each region gets what its CloudFormation has")
