"""The template as CloudFormation deploys it, for the checks of infra/ (sam-check.py,
regions.py): the SAM transform's output (samtranslator, from cfn-lint's pinned venv) with the
parameters as CloudFormation passes them, its conditions evaluated, and the nested stacks'
templates it names."""
import json
import os
import sys

from cfnlint.decode import decode
from cfnlint.template.transforms._sam import Transform

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def evaluate(value, parameters, conditions):
    """`value` with the intrinsics CloudFormation resolves at deploy (`Ref` of a parameter,
    `Fn::If` on the template's conditions, the condition functions) evaluated."""
    def condition(name):
        return evaluate(conditions[name], parameters, conditions)

    if isinstance(value, list):
        return [evaluate(v, parameters, conditions) for v in value]
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (fn, args), = value.items()
    if fn == "Ref":
        return parameters.get(args, value)
    if fn == "Condition":
        return condition(args)
    if fn == "Fn::If":
        name, then, otherwise = args
        return evaluate(then if condition(name) else otherwise, parameters, conditions)
    if fn == "Fn::Equals":
        a, b = (evaluate(x, parameters, conditions) for x in args)
        return a == b
    if fn == "Fn::Not":
        return not evaluate(args[0], parameters, conditions)
    if fn == "Fn::Or":
        return any(evaluate(x, parameters, conditions) for x in args)
    if fn == "Fn::And":
        return all(evaluate(x, parameters, conditions) for x in args)
    if fn == "Fn::Sub" and isinstance(args, str):
        for name, given in parameters.items():
            if isinstance(given, str):
                args = args.replace("${" + name + "}", given)
        return args
    return value


def text(value):
    """A resolved value as a string (an unresolved intrinsic as its JSON)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def present(values):
    """`values` without `AWS::NoValue`."""
    return [v for v in values if v != {"Ref": "AWS::NoValue"}]


def transformed(overrides):
    """The template after the SAM transform, with `overrides` over the defaults; and the
    parameters as CloudFormation passes them."""
    template, problems = decode("template.yaml")
    if problems:
        sys.exit(f"template.yaml does not parse: {problems}")
    parameters = {}
    for name, spec in template.get("Parameters", {}).items():
        value = overrides.get(name, spec.get("Default", "placeholder"))
        if spec.get("Type") == "CommaDelimitedList":
            value = [part.strip() for part in str(value).split(",")]
        parameters[name] = value
    transform = Transform("template.yaml", template, "us-east-1")
    transform._parameters = parameters  # as CloudFormation passes them, lists included
    errors = transform.transform_template()
    if errors:
        sys.exit(f"the SAM transform failed: {errors}")
    output = transform.template()
    conditions = output.get("Conditions", {})
    for resource in output["Resources"].values():
        condition = resource.get("Condition")
        resource["deployed"] = condition is None or evaluate({"Condition": condition}, parameters, conditions)
        for key in ("Architectures", "CompatibleArchitectures"):
            if key in resource.get("Properties", {}):
                resource["Properties"][key] = evaluate(resource["Properties"][key], parameters, conditions)
    return output["Resources"], parameters


def nested(resources):
    """{logical id: its template} of each nested stack (`AWS::CloudFormation::Stack` whose
    `TemplateURL` is a path in the repository, as `sam build` and `sam deploy` take it)."""
    out = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::CloudFormation::Stack":
            continue
        path = resource["Properties"]["TemplateURL"]
        template, problems = decode(path)
        if problems:
            sys.exit(f"{path} does not parse: {problems}")
        out[name] = template
    return out
