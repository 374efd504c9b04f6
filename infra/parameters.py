"""The stack's parameters, as the runbook's ways of changing them send them.

    python3 infra/parameters.py update STACKS_JSON Name=Value ...
        The `--parameters` JSON of `aws cloudformation update-stack --use-previous-template`
        (infra/set-parameter.sh): the names given take their new values, every other parameter
        of the stack keeps its previous one. Refuses a parameter that changes what is built.
    python3 infra/parameters.py build STACKS_JSON Name=Value ...
        The `sam build --parameter-overrides` values (infra/deploy.sh), NUL-separated: every
        parameter of the stack at its value now, changed only by the names given, each quoted
        as the SAM CLI's parser unquotes it (samcli/cli/types.py, CfnParameterOverridesType).
    python3 infra/parameters.py deploy STACKS_JSON Name=Value ...
        The `sam deploy --parameter-overrides` of a stack that exists, in the same form: only
        the names given and those that chose the build (BUILT). The SAM CLI sends every other
        parameter of the template as UsePreviousValue (samcli/commands/deploy/deploy_context.py,
        merge_parameters), so a change made while this deploy was building is kept too.
    python3 infra/parameters.py new STACKS_JSON Name=Value ...
        The same for a stack made anew from saved parameters (a teardown's redeploy): all of
        them, since a new stack has no previous values.

STACKS_JSON is what `aws cloudformation describe-stacks --output json` prints (a file saved
before a teardown, or `{"Stacks": []}` for a stack not made yet). TEMPLATE names the template
whose parameters count (default: template.yaml beside infra/). Exits 1 naming what is wrong;
nothing is sent then.
"""
import json
import os
import re
import sys
from pathlib import Path

# What chooses the binaries' architecture or the model layer: the previous template's builds
# would not run (an arm64 binary on x86_64), so these are changed by a build (infra/deploy.sh).
BUILT = {"Architecture", "Embedder", "EmbeddingApiKeySecret", "WishFacets"}


def template_parameters():
    """The names under the template's top-level `Parameters:`, in order."""
    template = Path(os.environ.get("TEMPLATE") or Path(__file__).resolve().parent.parent / "template.yaml")
    names, inside = [], False
    for line in template.read_text().splitlines():
        if re.match(r"^[A-Za-z]", line):
            inside = line.startswith("Parameters:")
        elif inside and (m := re.match(r"^  ([A-Za-z0-9]+):\s*$", line)):
            names.append(m.group(1))
    return names


HIDDEN = "****"  # how DescribeStacks shows a NoEcho parameter's value


def stack_values(stacks_json):
    """{name: value} of the stack's parameters (empty for no stack)."""
    stacks = json.loads(stacks_json).get("Stacks") or [{}]
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in stacks[0].get("Parameters") or []}


def pairs(args):
    """{name: value} of `Name=Value` arguments, values checked where a bad one would stop every
    function at start."""
    given = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not name:
            sys.exit(f"{arg!r} is not Name=Value")
        given[name] = value
    # A malformed price table would stop every function at start (500 misconfigured), the ones
    # without a canary until the stack rolls back: refuse what is not a JSON object of objects.
    if given.get("Prices"):
        try:
            table = json.loads(given["Prices"])
        except ValueError as e:
            sys.exit(f"Prices is not JSON: {e} (docs/costs.md#prices)")
        if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
            sys.exit('Prices must be {"provider/model": {"input_per_1k_usd": ..., ...}} (docs/costs.md#prices)')
    return given


def update(stacks_json, args):
    given, current = pairs(args), stack_values(stacks_json)
    if not current:
        sys.exit("the stack has no parameters: is it deployed? (STACK, REGION)")
    rebuild = sorted(set(given) & BUILT)
    if rebuild:
        sys.exit(f"{', '.join(rebuild)} change what is built: STACK=... REGION=... bash infra/deploy.sh "
                 + " ".join(f"{k}=..." for k in rebuild) + " builds and deploys with them (docs/deploy.md)")
    unknown = sorted(set(given) - set(current))
    if unknown:
        sys.exit(f"not parameters of the stack: {', '.join(unknown)}")
    return json.dumps([{"ParameterKey": k, "ParameterValue": given[k]} if k in given
                       else {"ParameterKey": k, "UsePreviousValue": True} for k in current])


def quoted(value):
    """`value` as the SAM CLI's override parser reads it back whole: in double quotes, `"`
    escaped. It unescapes only `\\ `, `\\"` and `\\'`, so a backslash could not round-trip."""
    if "\\" in value:
        sys.exit(f"a value with a backslash cannot pass through sam's --parameter-overrides: {value!r}")
    return '"' + value.replace('"', '\\"') + '"'


def overrides(stacks_json, args, mode):
    given, current, known = pairs(args), stack_values(stacks_json), template_parameters()
    unknown = sorted(set(given) - set(known))
    if unknown:
        sys.exit(f"not parameters of the template: {', '.join(unknown)}")
    hidden = sorted(k for k in known if current.get(k) == HIDDEN and k not in given)
    if mode == "new" and hidden:
        sys.exit(f"the saved stack hides {', '.join(hidden)} (NoEcho): give their values as Name=Value")
    if mode == "deploy" and not current:
        sys.exit("the stack has no parameters: is it deployed? (STACK, REGION; a new one: PARAMETERS=file)")
    # The stack's values for the parameters this template still has (a NoEcho one, unknown, is
    # left to its previous value); a parameter it added keeps its default unless given.
    chosen = known if mode != "deploy" else [k for k in known if k in BUILT]
    merged = {k: current[k] for k in chosen if k in current and current[k] != HIDDEN} | given
    return "\0".join(f"{k}={quoted(v)}" for k, v in merged.items())


if __name__ == "__main__":
    modes = {"update": update, **{m: lambda s, a, m=m: overrides(s, a, m) for m in ("build", "deploy", "new")}}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    sys.stdout.write(modes[sys.argv[1]](sys.argv[2], sys.argv[3:]))
