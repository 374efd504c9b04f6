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
  nested template in the regions where it is made (about 3 minutes on 2 cores).

Usage: python infra/regions.py [--lint]; exits 1 on a failed check.
"""
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from cfnlint.decode import decode
from cfnlint.helpers import REGIONS

from stack import evaluate, nested, transformed

# Regions of other partitions (China, GovCloud, the isolated ones, the European Sovereign Cloud).
OTHER_PARTITIONS = ("cn-", "us-gov-", "us-iso", "eu-isoe-", "eusc-")
REGIONS_AWS = [r for r in REGIONS if not r.startswith(OTHER_PARTITIONS)]


def types(region):
    """The resource types CloudFormation has in `region`."""
    return set(importlib.import_module(f"cfnlint.data.schemas.providers.{region.replace('-', '_')}").types)


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
    runs = [("template.yaml", [region]) for region in deploys]
    runs += [(resources[n]["Properties"]["TemplateURL"], made[n]) for n in names]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda run: subprocess.run([lint, "--regions", *run[1], "--", run[0]],
                                                        capture_output=True, text=True), runs))
    for (path, regions), result in zip(runs, done):
        if result.returncode != 0:
            failed.append(f"cfn-lint {path} in {' '.join(regions)}:\n{result.stdout}{result.stderr}")
    for path in dict(runs):
        print(f"cfn-lint {path}: in {sum(len(r) for p, r in runs if p == path)} regions")

if failed:
    sys.exit("regions: " + "\n".join(failed))
print("regions: each region gets what its CloudFormation has")
