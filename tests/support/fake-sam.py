#!/usr/bin/env python3
"""A fake SAM CLI for the deploy script's test (tests/docs.rs): `sam build` and `sam deploy`
record what they would send, the parameters decoded as the SAM CLI decodes
`--parameter-overrides` (samcli/cli/types.py, CfnParameterOverridesType: each value
`Key=Value`, `Key="..."` or `Key='...'`, the quotes' escapes undone), the configuration file's
own parameters, which would apply where no override is given, and the directory it ran in.
A build writes the built template (.aws-sam/build/template.yaml, the source's, as SAM does).
A deploy makes or updates the stack in the fake AWS world ($FAKE_AWS_STATE,
tests/support/fake-aws.py) as the SAM CLI and CloudFormation would: each parameter of the
template not overridden is sent as UsePreviousValue (samcli/commands/deploy/deploy_context.py,
merge_parameters; its unit test test_deploy_context.py asserts it), which keeps the stack's
value, or for a new stack leaves the template's default (absent here). FAKE_SAM_DURING_BUILD,
a JSON object of parameters, is a runbook's change made to the stack while the build runs.
One JSON line per call goes to $FAKE_SAM_CALLS.
"""
import json
import os
import re
import sys
import tomllib

KEY = r"""([A-Za-z0-9\"']+)"""
VALUE = r"""(\"(?:\\.|[^\"\\]+)*\"|'(?:\\.|[^'\\]+)*'|(?:\\.|[^ \"\\]+)+)"""
PAIR = rf"(?:(?: ){KEY}={VALUE})"


def unquote(value):
    if value and ((value[0] == value[-1] == '"') or (value[0] == value[-1] == "'")):
        value = value[1:-1]
    return value.replace("\\ ", " ").replace('\\"', '"').replace("\\'", "'")


def main():
    argv = sys.argv[1:]
    command, options, name = argv[0], {}, None
    for arg in argv[1:]:
        if arg.startswith("--"):
            name = arg
            options.setdefault(name, [])
        elif name is None:
            sys.exit(f"Error: Got unexpected extra argument ({arg})")
        else:
            options[name].append(arg)
    parameters = {}
    for value in options.get("--parameter-overrides", []):
        found = re.findall(PAIR, " " + value.strip())
        if not found:
            sys.exit(f"Error: Invalid value for '--parameter-overrides': {value} is not in valid format.")
        parameters.update({unquote(k): unquote(v) for k, v in found})
    config = options.get("--config-file", ["samconfig.toml"])[0]
    saved = {}
    if os.path.exists(config):
        with open(config, "rb") as f:
            saved = tomllib.load(f).get("default", {}).get(command, {}).get("parameters", {})
    record = {"command": command, "parameters": parameters, "config_parameters": saved, "cwd": os.getcwd(),
              "options": {k: v for k, v in options.items() if k != "--parameter-overrides"}}
    with open(os.environ["FAKE_SAM_CALLS"], "a") as calls:
        calls.write(json.dumps(record) + "\n")
    with open(os.environ["FAKE_AWS_STATE"]) as f:
        world = json.load(f)
    if command == "build":
        os.makedirs(".aws-sam/build", exist_ok=True)
        with open("template.yaml") as source, open(".aws-sam/build/template.yaml", "w") as built:
            built.write(source.read())
        meanwhile = json.loads(os.environ.get("FAKE_SAM_DURING_BUILD") or "{}")
        for p in (world["stacks"].get(options.get("--stack-name", ["research"])[0]) or {}).get("Parameters", []):
            p["ParameterValue"] = meanwhile.get(p["ParameterKey"], p["ParameterValue"])
    if command == "deploy":
        if "--resolve-s3" in options and ("s3_bucket" in saved or "--s3-bucket" in options):
            sys.exit("Error: Cannot use both --resolve-s3 and --s3-bucket parameters. Please use only one.")
        template = options["--template-file"][0]
        if not os.path.exists(template):
            sys.exit(f"Error: Template file not found at {template}")
        stack = options["--stack-name"][0]
        previous = {p["ParameterKey"]: p["ParameterValue"] for p in (world["stacks"].get(stack) or {}).get("Parameters", [])}
        merged = {}
        for name in template_parameters(template):
            if name in parameters:
                merged[name] = parameters[name]
            elif name in previous:  # UsePreviousValue
                merged[name] = previous[name]
        world["stacks"][stack] = {"Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in merged.items()]}
    with open(os.environ["FAKE_AWS_STATE"], "w") as f:
        json.dump(world, f)


def template_parameters(path):
    """The names under a template's top-level `Parameters:`."""
    names, inside = [], False
    with open(path) as f:
        for line in f:
            if re.match(r"^[A-Za-z]", line):
                inside = line.startswith("Parameters:")
            elif inside and (m := re.match(r"^  ([A-Za-z0-9]+):\s*$", line)):
                names.append(m.group(1))
    return names


main()
