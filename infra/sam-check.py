"""The template as CloudFormation deploys it: the SAM transform's output (samtranslator, from
cfn-lint's pinned venv), with the parameters' defaults (and `Name=Value` overrides) passed as
CloudFormation passes them (a CommaDelimitedList as a list). Checks what only the transform's
output shows (docs/deploy.md):

- every browser-facing door takes the same origins, `AllowedOrigins`: the HTTP API's CORS
  (the `x-amazon-apigateway-cors` of its OpenAPI body) and each Function URL's `Cors`;
- the HTTP API's CORS allows what its user routes need (their methods, the Authorization
  header) and lets a browser read `Retry-After`;
- `Architecture=x86_64` (a region without arm64 Lambda) leaves no arm64 function or layer;
- no parameter is `NoEcho` (a key is a Secrets Manager secret's name, read at run time), and
  each function may read exactly the secrets its `*_SECRET` variables name, with every key
  given and with none.

Usage: python infra/sam-check.py [Name=Value ...]; prints the resources and exits 1 on a
failed check.
"""
import json
import os
import sys

from cfnlint.decode import decode
from cfnlint.template.transforms._sam import Transform

os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
template, problems = decode("template.yaml")
if problems:
    sys.exit(f"template.yaml does not parse: {problems}")
overrides = dict(arg.split("=", 1) for arg in sys.argv[1:])


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


resources, parameters = transformed(overrides)
print(f"SAM transform: {len(resources)} resources")

failed = []
origins = parameters["AllowedOrigins"]
apis = {n: r for n, r in resources.items() if r["Type"] == "AWS::ApiGatewayV2::Api"}
urls = {n: r for n, r in resources.items() if r["Type"] == "AWS::Lambda::Url"}
if not apis or not urls:
    failed.append(f"expected the HTTP API and the Function URLs, found {list(apis)} and {list(urls)}")
for name, api in apis.items():
    cors = api["Properties"].get("Body", {}).get("x-amazon-apigateway-cors")
    if not cors:
        failed.append(f"{name}: no CORS (browsers cannot call its user routes)")
        continue
    print(f"{name} CORS: {cors}")
    if cors.get("allowOrigins") != origins:
        failed.append(f"{name}: allowOrigins {cors.get('allowOrigins')!r}, not AllowedOrigins {origins!r}")
    methods = {m.upper() for m in cors.get("allowMethods", [])}
    routes = {m.upper() for path in api["Properties"]["Body"].get("paths", {}).values() for m in path}
    missing = {m for m in routes if m in {"GET", "POST", "PUT", "DELETE"}} - methods
    if missing:
        failed.append(f"{name}: its routes use {sorted(missing)}, which its CORS does not allow")
    headers = {h.lower() for h in cors.get("allowHeaders", [])}
    if not {"authorization", "content-type"} <= headers:
        failed.append(f"{name}: allowHeaders {sorted(headers)} lack authorization or content-type")
    if "retry-after" not in {h.lower() for h in cors.get("exposeHeaders", [])}:
        failed.append(f"{name}: a browser cannot read Retry-After")
for name, url in urls.items():
    allowed = url["Properties"].get("Cors", {}).get("AllowOrigins")
    print(f"{name} origins: {allowed}")
    # CloudFormation resolves a Function URL's `Ref` at deploy; SAM leaves it as written.
    if allowed not in (origins, {"Ref": "AllowedOrigins"}):
        failed.append(f"{name}: AllowOrigins {allowed!r}, not AllowedOrigins {origins!r}")
# A region without arm64 Lambda: Architecture=x86_64 leaves no arm64 anywhere, with either
# embedder (the bundled model's functions and layer are x86_64).
for embedder in ("bundled", "api"):
    x86, _ = transformed({**overrides, "Architecture": "x86_64", "Embedder": embedder, "EmbeddingApiKeySecret": "k"})
    for name, resource in x86.items():
        if not resource["deployed"]:
            continue
        props = resource.get("Properties", {})
        archs = props.get("Architectures", []) + props.get("CompatibleArchitectures", [])
        if "arm64" in archs:
            failed.append(f"Architecture=x86_64, Embedder={embedder}: {name} is still {archs}")
    print(f"Architecture=x86_64, Embedder={embedder}: no arm64")

# Keys: no NoEcho parameter (SAM CLI's guided deploy cannot leave one empty, and its value is
# fixed at deploy); each function reads exactly the secrets its *_SECRET variables name.
secret_parameters = [n for n in template["Parameters"] if n.endswith("Secret")]
noecho = [n for n, spec in template["Parameters"].items() if spec.get("NoEcho")]
if noecho:
    failed.append(f"NoEcho parameters {noecho}: keep keys in Secrets Manager, named by a *Secret parameter")
for keys in ({}, {name: f"research/{name}" for name in secret_parameters}):
    deployed, given = transformed({**overrides, **keys})
    conditions = decode("template.yaml")[0].get("Conditions", {})
    roles = {n: r for n, r in deployed.items() if r["Type"] == "AWS::IAM::Role"}
    for name, function in deployed.items():
        if function["Type"] != "AWS::Lambda::Function":
            continue
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        named = {text(v) for v in present([evaluate(v, given, conditions) for k, v in env.items() if k.endswith("_SECRET")])}
        role = roles.get(function["Properties"]["Role"]["Fn::GetAtt"][0], {})
        readable = set()
        for policy in present(evaluate(role.get("Properties", {}).get("Policies", []), given, conditions)):
            for statement in policy["PolicyDocument"]["Statement"]:
                if "secretsmanager:GetSecretValue" in str(statement.get("Action")):
                    resources = statement["Resource"]
                    for arn in present(evaluate(resources if isinstance(resources, list) else [resources], given, conditions)):
                        readable.add(text(arn))
        # An ARN built from a name ends with `:secret:<name>-??????`; the stack's own secret is a Ref.
        got = {a.split(":secret:", 1)[1][: -len("-??????")] if ":secret:" in a else a for a in readable}
        if named != got:
            failed.append(f"{name} ({'every key' if keys else 'no key'}): reads {sorted(named)}, may read {sorted(got)}")
    print(f"{'every key given' if keys else 'no key given'}: each function may read exactly the secrets it names")

for problem in failed:
    print(f"FAILED: {problem}")
sys.exit(1 if failed else 0)
