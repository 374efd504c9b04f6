"""The template as CloudFormation deploys it: the SAM transform's output (samtranslator, from
cfn-lint's pinned venv), with the parameters' defaults (and `Name=Value` overrides) passed as
CloudFormation passes them (a CommaDelimitedList as a list). Checks what only the transform's
output shows (docs/deploy.md):

- every browser-facing door takes the same origins, `AllowedOrigins`: the HTTP API's CORS
  (the `x-amazon-apigateway-cors` of its OpenAPI body) and each Function URL's `Cors` (in the
  doors' nested stack, infra/stacks/doors.yaml, each on its function's `live` alias);
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
import re
import sys

from cfnlint.decode import decode

from stack import evaluate, nested, present, text, transformed

template, problems = decode("template.yaml")
if problems:
    sys.exit(f"template.yaml does not parse: {problems}")
overrides = dict(arg.split("=", 1) for arg in sys.argv[1:])


resources, parameters = transformed(overrides)
print(f"SAM transform: {len(resources)} resources")

failed = []
origins = parameters["AllowedOrigins"]
apis = {n: r for n, r in resources.items() if r["Type"] == "AWS::ApiGatewayV2::Api"}
# The Function URLs are in the doors' nested stack (infra/stacks/doors.yaml), given the root's
# origins and the functions' `live` aliases (the versions CodeDeploy shifts and rolls back).
stacks = nested(resources)
doors = resources.get("StreamingDoorsStack", {}).get("Properties", {}).get("Parameters", {})
urls = {n: r for n, r in stacks.get("StreamingDoorsStack", {}).get("Resources", {}).items() if r["Type"] == "AWS::Lambda::Url"}
if not apis or len(urls) != 2:
    failed.append(f"expected the HTTP API and the two Function URLs, found {list(apis)} and {list(urls)}")
if doors.get("AllowedOrigins") != {"Fn::Join": [",", {"Ref": "AllowedOrigins"}]}:
    failed.append(f"the doors' stack is given origins {doors.get('AllowedOrigins')!r}, not AllowedOrigins")
for name, url in urls.items():
    alias = doors.get(url["Properties"]["TargetFunctionArn"].get("Ref"))
    function = name.removesuffix("Url")
    if alias != {"Ref": f"{function}FunctionAliaslive"}:
        failed.append(f"the door {name} targets {alias!r}, not {function}Function's live alias")
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
    # The nested stack's AllowedOrigins (a CommaDelimitedList of the root's, joined above).
    if allowed != {"Ref": "AllowedOrigins"}:
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

# Which records each function may write (docs/access.md): every write action on the table names
# the partitions it may touch (dynamodb:LeadingKeys), exactly as the docs' table lists them, and
# nothing may DeleteItem, Scan or write in transactions.
WRITES = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem")
FORBIDDEN = ("dynamodb:DeleteItem", "dynamodb:Scan", "dynamodb:TransactWriteItems", "dynamodb:PartiQLDelete", "dynamodb:*")


def documented_writes():
    """{function: {action: set of prefixes}} from docs/access.md's table."""
    lines = open("docs/access.md", encoding="utf-8").read().split("## Which records each function may write", 1)[1]
    table = {}
    for line in lines.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("function", "---") or not line.startswith("|"):
            continue
        table[cells[0]] = {action: {p.strip().strip("`") for p in cell.split(",") if p.strip()}
                           for action, cell in zip(WRITES, cells[1:])}
    return table


def kebab(logical_id):
    return re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id.removesuffix("Function")).lower()


deployed, given = transformed(overrides)
conditions = decode("template.yaml")[0].get("Conditions", {})
roles = {n: r for n, r in deployed.items() if r["Type"] == "AWS::IAM::Role"}
granted = {}
for name, function in deployed.items():
    if function["Type"] != "AWS::Lambda::Function":
        continue
    role = roles.get(function["Properties"]["Role"]["Fn::GetAtt"][0], {})
    writes = {}
    for policy in present(evaluate(role.get("Properties", {}).get("Policies", []), given, conditions)):
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement.get("Action")
            actions = [a for a in (actions if isinstance(actions, list) else [actions]) if str(a).startswith("dynamodb:")]
            for action in actions:
                if action in FORBIDDEN:
                    failed.append(f"{name}: may {action}")
                if action not in WRITES:
                    continue
                keys = None
                for operator, values in statement.get("Condition", {}).items():
                    if operator.startswith("ForAllValues:String") and "dynamodb:LeadingKeys" in values:
                        keys = values["dynamodb:LeadingKeys"]
                if keys is None:
                    failed.append(f"{name}: {action} on every partition (no dynamodb:LeadingKeys)")
                    continue
                writes.setdefault(action, set()).update(keys if isinstance(keys, list) else [keys])
    if writes:
        granted[kebab(name)] = writes
        reach = "; ".join(f"{a.split(':')[1]} {', '.join(sorted(p))}" for a, p in sorted(writes.items()))
        print(f"{name} writes: {reach}")
documented = documented_writes()
for function in sorted(set(granted) | set(documented)):
    want = {a: p for a, p in documented.get(function, {}).items() if p}
    if granted.get(function, {}) != want:
        failed.append(f"{function}: may write {granted.get(function)}, docs/access.md says {want}")
print(f"writes by partition: {len(granted)} functions, each as docs/access.md lists")


# Settings reach the live alias: for every parameter, a second value; an aliased function
# publishes a version (CodeDeploy then shifts its alias) when its version's logical id or its
# description changes. The description is ConfigurationDigest's answer, computed by its own
# code (the template's ZipFile) over the function's configuration as CloudFormation resolves it,
# and given anew only when the custom resource's own properties change (else CloudFormation
# does not call it). Each function must publish exactly when its configuration changes.
PSEUDO = {"AWS::Region": "us-east-1", "AWS::Partition": "aws", "AWS::AccountId": "123456789012",
          "AWS::StackName": "stack", "AWS::URLSuffix": "amazonaws.com", "AWS::NoValue": None}


def resolve(value, parameters, conditions, outputs):
    """`value` as CloudFormation deploys it: parameters, conditions, pseudo parameters and
    `Fn::Sub`/`Fn::Join`/`Fn::Select` resolved, a resource as `<Name>` (`<Name.Attr>`) unless
    `outputs` holds its attribute, `AWS::NoValue` dropped."""
    def again(v):
        return resolve(v, parameters, conditions, outputs)

    def ref(name):
        if name in parameters:
            return parameters[name]
        if name in PSEUDO:
            return PSEUDO[name]
        return f"<{name}>"

    def attribute(name):
        return outputs.get(name, f"<{name}>")

    if isinstance(value, list):
        return [v for v in (again(v) for v in value) if v is not None]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (fn, args), = value.items()
        if fn == "Ref":
            return ref(args)
        if fn == "Fn::GetAtt":
            return attribute(".".join(args) if isinstance(args, list) else args)
        if fn in ("Condition", "Fn::If", "Fn::Equals", "Fn::Not", "Fn::Or", "Fn::And"):
            if fn == "Fn::If":
                name, then, otherwise = args
                return again(then if evaluate({"Condition": name}, parameters, conditions) else otherwise)
            return evaluate(value, parameters, conditions)
        if fn == "Fn::Sub":
            text, names = (args, {}) if isinstance(args, str) else args
            names = {k: again(v) for k, v in names.items()}

            def sub(match):
                name = match.group(1)
                if name in names:
                    return str(names[name])
                if "." in name:
                    return str(attribute(name))
                found = ref(name)
                return ",".join(found) if isinstance(found, list) else str(found)
            return re.sub(r"\$\{([^}!]+)\}", sub, text)
        if fn == "Fn::Join":
            sep, parts = args
            parts = again(parts)
            return sep.join(str(p) for p in (parts if isinstance(parts, list) else [parts]))
        if fn == "Fn::Select":
            index, items = again(args)
            return items[int(index)]
    resolved = {k: again(v) for k, v in value.items()}
    return {k: v for k, v in resolved.items() if v is not None}


def names_in(value):
    """The resources `value` refers to, by logical id."""
    found = set()
    if isinstance(value, list):
        for v in value:
            found |= names_in(v)
    elif isinstance(value, dict):
        for fn, args in value.items():
            if fn == "Ref" and isinstance(args, str):
                found.add(args)
            elif fn == "Fn::GetAtt":
                found.add(args[0] if isinstance(args, list) else args.split(".")[0])
            elif fn == "Fn::Sub":
                text = args if isinstance(args, str) else args[0]
                found |= {m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text)}
                if not isinstance(args, str):
                    found |= names_in(args[1])
            else:
                found |= names_in(args)
    return found


# ConfigurationDigestFunction's own code (Lambda provides `cfnresponse` to inline code), and
# what a version keeps: its FIELDS, as the function's properties name them (the code's digest
# as its location).
digest_code = {}
digest_resource = template["Resources"].get("ConfigurationDigestFunction")
if digest_resource:
    sys.modules.setdefault("cfnresponse", type(sys)("cfnresponse"))
    exec(compile(digest_resource["Properties"]["Code"]["ZipFile"], "ConfigurationDigestFunction", "exec"), digest_code)
KEPT = tuple("Code" if f == "CodeSha256" else f for f in digest_code.get("FIELDS", ()))
if not KEPT:
    failed.append("no ConfigurationDigestFunction with FIELDS: a changed parameter would reach no live alias")


def published(overrides, previous=None):
    """Each aliased function's configuration and the version it would publish, after a
    deploy with `overrides` that follows `previous` (a deploy's result, or None for a create)."""
    deployed, given = transformed(overrides)
    conditions = deployed_conditions
    digest_resource = deployed.get("ConfigurationDigest")
    aliased = {}
    for name, r in deployed.items():
        if r["Type"] == "AWS::Lambda::Version" and r["deployed"]:
            aliased[r["Properties"]["FunctionName"]["Ref"]] = {**r, "logical_id": name}
    configurations, outputs = {}, {}
    for function in aliased:
        props = deployed[function]["Properties"]
        configuration = resolve({k: props[k] for k in KEPT if k in props}, given, conditions, {})
        configuration["Layers"] = [{"Arn": arn} for arn in configuration.get("Layers", [])]
        configurations[function] = configuration
        if digest_code:
            outputs[f"ConfigurationDigest.{function}"] = digest_code["digest"](configuration)
    digest_properties = resolve(digest_resource["Properties"], given, conditions, {}) if digest_resource else None
    if previous is not None and digest_properties == previous["digest_properties"]:
        outputs = previous["outputs"]  # CloudFormation does not call an unchanged custom resource
    versions = {}
    for function, version in aliased.items():
        description = resolve(version["Properties"].get("Description"), given, conditions, outputs)
        versions[function] = (version["logical_id"], description)
    return {"configurations": configurations, "versions": versions, "outputs": outputs,
            "digest_properties": digest_properties, "deployed": deployed}


def alternative(spec, value):
    """A second valid value of a parameter of `spec` whose value is `value`."""
    if "AllowedValues" in spec:
        return next(str(v) for v in spec["AllowedValues"] if str(v) != str(value))
    if spec.get("Type") == "Number":
        return str(int(float(value)) + 1)
    candidates = [
        str(value) + ",https://other.example" if spec.get("Type") == "CommaDelimitedList" else None,
        "research/changed", "https://changed.example:6334", "other-collection",
        "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/POST/ai/tools/*",
        "research=6,*=0", "tavily,perplexity", "research,detail", "0.25", "0.75", "email",
        "https://issuer.example", "x", "[]", "123456789012", str(value) + "x",
    ]
    pattern = spec.get("AllowedPattern")
    for candidate in candidates:
        if candidate is None or candidate == str(value):
            continue
        if pattern is None or re.fullmatch(pattern, candidate):
            return candidate
    return None


# With an API embedder the bundled model still ships beside it to read the wish facets
# (WishFacets=bundled: the layer, x86_64, WISH_FACETS=bundled), unless WishFacets=off.
for facets, arch, layered in (("bundled", "x86_64", True), ("off", "arm64", False)):
    api, given = transformed({**overrides, "Embedder": "api", "EmbeddingApiKeySecret": "k", "WishFacets": facets})
    for name in ("IndexActivityFunction", "RagSearchFunction", "AssistantFunction", "BackfillFunction"):
        props = resolve(api[name]["Properties"], given, decode("template.yaml")[0].get("Conditions", {}), {})
        got = (props.get("Architectures"), bool(props.get("Layers")),
               props["Environment"]["Variables"].get("WISH_FACETS"))
        if got != ([arch], layered, facets):
            failed.append(f"Embedder=api, WishFacets={facets}: {name} is {got}, not {([arch], layered, facets)}")
    if any(n.startswith("ModelLayer") and r["deployed"] for n, r in api.items()) != layered:
        failed.append(f"Embedder=api, WishFacets={facets}: the ModelLayer is {'absent' if layered else 'made'}")
    print(f"Embedder=api, WishFacets={facets}: the four embedding functions {arch}, model layer {layered}")

deployed_conditions = decode("template.yaml")[0].get("Conditions", {})
# The functions refuse a plain http Qdrant server (QDRANT_URL, off loopback): so does the deploy.
qdrant_pattern = template["Parameters"]["QdrantUrl"]["AllowedPattern"]
if re.fullmatch(qdrant_pattern, "http://qdrant.example:6334") or not re.fullmatch(qdrant_pattern, "https://xyz.cloud.qdrant.io:6334"):
    failed.append(f"QdrantUrl's pattern {qdrant_pattern!r} must take https URLs only")
baseline_overrides = {**overrides}
if "QdrantUrl" not in baseline_overrides and "Default" not in template["Parameters"]["QdrantUrl"]:
    baseline_overrides["QdrantUrl"] = "https://qdrant.example:6334"
base = published(baseline_overrides)
for version_id, version in base["deployed"].items():
    if version["Type"] == "AWS::Lambda::Version" and version.get("DeletionPolicy") != "Retain":
        failed.append(f"{version_id}: a version whose code changed is not retained (manual rollback)")
    if version["Type"] == "AWS::Lambda::Version" and version.get("UpdateReplacePolicy") != "Retain":
        failed.append(f"{version_id}: a version replaced by a changed parameter is deleted (manual rollback)")
# Every resource an aliased function's configuration names is among the digest's properties, so
# a replaced one (a new table, layer, role or log group) calls it again.
digest_names = names_in(base["deployed"].get("ConfigurationDigest", {}).get("Properties", {}))
for function in base["configurations"]:
    props = base["deployed"][function]["Properties"]
    named = names_in({k: props[k] for k in KEPT if k in props}) - set(template["Parameters"]) - set(PSEUDO)
    missing = named - digest_names
    if missing:
        failed.append(f"{function}: its configuration names {sorted(missing)}, which ConfigurationDigest's properties do not")
pairs, reads = [], []
for name, spec in template["Parameters"].items():
    value = baseline_overrides.get(name, spec.get("Default", "placeholder"))
    other = alternative(spec, value)
    if other is None:
        failed.append(f"{name}: no second valid value to try (add one to sam-check.py's alternative())")
        continue
    changed = published({**baseline_overrides, name: other}, previous=base)
    for function, configuration in base["configurations"].items():
        read = changed["configurations"][function] != configuration
        publishes = changed["versions"][function] != base["versions"][function]
        if read:
            reads.append((function, name))
        if publishes:
            pairs.append((function, name))
        if read != publishes:
            failed.append(f"{name}={other!r}: {function} {'reads it' if read else 'does not read it'} "
                          f"but {'publishes' if publishes else 'publishes no'} version")
# WishFacets matters only beside an API embedder: turned on a month later there, the aliased
# functions that embed (rag-search, the assistant) publish a version.
api_base = {**baseline_overrides, "Embedder": "api", "EmbeddingApiKeySecret": "research/embedding"}
facets_off = published({**api_base, "WishFacets": "off"})
facets_on = published({**api_base, "WishFacets": "bundled"}, previous=facets_off)
moved = sorted(f for f in facets_off["versions"] if facets_on["versions"][f] != facets_off["versions"][f])
if moved != ["AssistantFunction", "RagSearchFunction"]:
    failed.append(f"WishFacets=bundled beside an API embedder publishes {moved}, not the assistant and rag-search")
print(f"WishFacets=bundled beside an API embedder publishes a version of {', '.join(moved)}")
print(f"settings reach the live alias: {len(pairs)} of {len(reads)} function/parameter pairs that change "
      f"a configuration publish a version ({len(base['configurations'])} aliased functions, "
      f"{len(template['Parameters'])} parameters tried)")

# Each deployed function's variables with every key secret named and every string parameter at
# its longest (MaxLength, else its default; Prices as JSON entries, whose quotes count twice once
# escaped), with either embedder: every variable any configuration sets appears here (none is
# set only without a key).
def longest(name, spec):
    if spec.get("Type") != "String" or "MaxLength" not in spec:
        return None
    entry = '"p/m-0000": {"input_per_1k_usd": 0.000001, "output_per_1k_usd": 0.000001}, '
    return ("{" + entry * 100 if name == "Prices" else "x" * 10000)[: int(spec["MaxLength"])]


environments = []
for embedder in ("bundled", "api"):
    filled = {**baseline_overrides, "Embedder": embedder}
    for name, spec in template["Parameters"].items():
        if name.endswith("Secret"):
            filled[name] = "research/" + "k" * 40
        elif longest(name, spec) is not None:
            filled[name] = longest(name, spec)
    sized, given = transformed(filled)
    for function, r in sized.items():
        if r["Type"] == "AWS::Lambda::Function" and r["deployed"]:
            variables = resolve(r["Properties"].get("Environment", {}).get("Variables", {}), given, deployed_conditions, {})
            environments.append((embedder, function, variables))

# Lambda refuses a function whose environment, as compact JSON, is over 4 KB: Prices is the one
# meant to grow.
largest = {}
for embedder, function, variables in environments:
    size = len(json.dumps({k: str(v) for k, v in variables.items()}, separators=(",", ":")).encode())
    largest[function] = max(size, largest.get(function, 0))
    if size > 4096:
        failed.append(f"{function}: its environment is {size} bytes with Embedder={embedder} and the longest "
                      f"parameters; Lambda refuses over 4096")
name, size = max(largest.items(), key=lambda item: item[1])
print(f"environments at the longest parameters: at most {size} of Lambda's 4096 bytes ({name})")

# Every variable the template gives a function is documented in docs/configuration.md with
# that function among its readers ("all" and "every function" name them all); a variable every
# function is given (Globals, so that all see the same data) names the ones that read it.
FUNCTIONS = {"search", "research", "rag-search", "assistant", "index-activity", "backfill", "cost-report"}
readers = {}
for line in open("docs/configuration.md", encoding="utf-8"):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) >= 4 and cells[0].startswith("`"):
        for variable in re.findall(r"`([A-Z0-9_]+)`", cells[0]):
            text = cells[2]
            named = {f for f in FUNCTIONS if re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)}
            readers[variable] = FUNCTIONS if text.startswith(("all", "every function")) else named
everyone = set(template["Globals"]["Function"]["Environment"]["Variables"])
given_to = {}
for _, function, variables in environments:
    if kebab(function) in FUNCTIONS:
        for variable in variables:
            given_to.setdefault(variable, set()).add(kebab(function))
undocumented = 0
for variable, functions in sorted(given_to.items()):
    unlisted = set() if variable in everyone else functions - readers.get(variable, set())
    if variable not in readers or not readers[variable] or unlisted:
        failed.append(f"{variable}: the template sets it on {sorted(unlisted or functions)}; docs/configuration.md "
                      f"lists as its readers {sorted(readers.get(variable, [])) or 'no function'}")
        undocumented += 1
print(f"variables the template sets: {len(given_to)}, each documented with its readers ({undocumented} not)")

# The assistant's PreTraffic hook (AssistantSmokeHook): CodeDeploy runs it before a new version
# takes traffic, on that version; its event is the fixture tests/assistant.rs sends to the
# assistant, and its verdict lets through only what is not the version's own failure.
resources, _ = transformed(overrides)
hook = resources.get("AssistantSmokeHook")
aliases = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Alias"
           and r["Properties"].get("FunctionName") == {"Ref": "AssistantFunction"}]
if not hook or len(aliases) != 1:
    failed.append("no AssistantSmokeHook, or no single `live` alias of the assistant")
else:
    update = aliases[0].get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate", {})
    if update.get("BeforeAllowTrafficHook") != {"Ref": "AssistantSmokeHook"}:
        failed.append(f"the assistant's alias does not run AssistantSmokeHook before traffic: {update}")
    version = hook["Properties"]["Environment"]["Variables"]["NEW_VERSION"]
    target = resources.get(version.get("Ref", "") if isinstance(version, dict) else "", {})
    if target.get("Type") != "AWS::Lambda::Version" or target["Properties"].get("FunctionName") != {"Ref": "AssistantFunction"}:
        failed.append(f"AssistantSmokeHook's NEW_VERSION is not the assistant's new version: {version}")
    name = hook["Properties"]["FunctionName"]
    if not (isinstance(name, dict) and str(name.get("Fn::Sub", [""])[0]).startswith("CodeDeployHook_")):
        failed.append(f"AssistantSmokeHook's name does not start with CodeDeployHook_ (CodeDeploy's role may not invoke it): {name}")
    code = {}
    exec(compile(hook["Properties"]["Code"]["ZipFile"], "AssistantSmokeHook", "exec"), code)
    for mode, fixture_id in (("CHAT", "fixture-smoke"), ("EXPLORE", "fixture-smoke-explore")):
        path = f"infra/events/smoke-{'chat' if mode == 'CHAT' else 'explore'}.json"
        with open(path) as fixture:
            if code["smoke_event"]("sub", fixture_id, mode) != json.load(fixture):
                failed.append(f"AssistantSmokeHook's {mode} event is not {path}")
    if list(code["MESSAGES"]) != ["CHAT", "EXPLORE"]:
        failed.append(f"AssistantSmokeHook does not try both modes: {list(code['MESSAGES'])}")

    def answered(status, code_=None, mock=False):
        body = json.dumps({"error": {"code": code_, "message": "m"}} if code_ else {"reply": "Hi", "mock": mock})
        return {"Payload": json.dumps({"statusCode": status, "body": body})}
    crash = {"FunctionError": "Unhandled", "Payload": "{}"}
    throttled = code["THROTTLED"]
    # (the new version's answer, live's, the stack has a model key) -> may it take traffic?
    verdicts = {
        "throttled, live too, only limits changed (lower Budgets under the kill switch)": (throttled, throttled, True, True),
        "throttled, live answers": (throttled, answered(200), True, False),
        "200": (answered(200), None, True, True),
        "200 mock, keyless stack": (answered(200, mock=True), None, False, True),
        "200 mock, keyed stack (a lost key)": (answered(200, mock=True), None, True, False),
        "429 quota, live too": (answered(429, "quota_exceeded"), answered(429, "quota_exceeded"), True, True),
        "429, live answers": (answered(429, "budget_exceeded"), answered(200), True, False),
        "503 model_unavailable, live too": (answered(503, "model_unavailable"), answered(503, "model_unavailable"), True, True),
        "503 model_unavailable, live answers": (answered(503, "model_unavailable"), answered(200), True, False),
        "400 model_refused": (answered(400, "model_refused"), answered(200), True, False),
        "503 upstream_unavailable": (answered(503, "upstream_unavailable"), answered(503, "upstream_unavailable"), True, False),
        "500 misconfigured": (answered(500, "misconfigured"), answered(200), True, False),
        "a crash": (crash, answered(200), True, False),
    }
    wrong = [case for case, (new, live, keyed, passes) in verdicts.items()
             if (code["verdict"](new, lambda live=live: live, keyed, lambda: []) is None) != passes]
    if code["verdict"](throttled, lambda: throttled, True, lambda: ["CodeSha256"]) is None:
        wrong.append("throttled, live too, new code")
    # What `changed` sees between two configurations, as GetFunctionConfiguration gives them.
    base = {"CodeSha256": "a", "Architectures": ["arm64"], "Runtime": "provided.al2023", "Handler": "bootstrap",
            "Layers": [], "Environment": {"Variables": {"BUDGETS": "assistant=5,*=0", "LLM_MODEL": "gpt-4o-mini"}}}
    def but(**changes):
        c = json.loads(json.dumps(base))
        for k, v in changes.items():
            if k in base:
                c[k] = v
            else:
                c["Environment"]["Variables"][k] = v
        return c
    for case, other, expected in [
        ("lower Budgets", but(BUDGETS="assistant=1,*=0"), []),
        ("a lower quota", but(USER_QUOTA_PER_MINUTE="5"), []),
        ("new code", but(CodeSha256="b"), ["CodeSha256"]),
        ("another model", but(LLM_MODEL="gpt-9"), ["LLM_MODEL"]),
        ("a price table", but(PRICES="{}"), ["PRICES"]),
        ("the model layer", but(Layers=[{"Arn": "arn:aws:lambda:eu-west-1:1:layer:e5:2"}]), ["Layers"]),
        ("x86_64", but(Architectures=["x86_64"]), ["Architectures"]),
    ]:
        if code["changed"](other, base) != expected:
            wrong.append(f"changed(), {case}: {code['changed'](other, base)}")
    if wrong:
        failed.append(f"AssistantSmokeHook's verdict is wrong for {wrong}")
    # The handler itself, on fake clients: what it asks, and what it reports to CodeDeploy.
    import io
    import types

    class Throttle(Exception):
        """What boto3 raises when Lambda throttles an invocation (a ClientError's response)."""
        response = {"Error": {"Code": "TooManyRequestsException"}}

    def run_hook(answers, configurations=(base, base)):
        asked, reported = [], []

        class Lambda:
            def invoke(self, FunctionName, Payload):
                asked.append(f"{FunctionName} {json.loads(json.loads(Payload)['body'])['mode']}")
                answer = answers[FunctionName]
                if isinstance(answer, list):  # one answer per call, in order
                    answer = answer.pop(0) if len(answer) > 1 else answer[0]
                if isinstance(answer, Exception):
                    raise answer
                return {**answer, "Payload": io.BytesIO(answer["Payload"].encode())}

            def get_function_configuration(self, FunctionName):
                return configurations[0] if FunctionName == "new" else configurations[1]

        class CodeDeploy:
            def put_lifecycle_event_hook_execution_status(self, **report):
                reported.append(report["status"])

        boto3 = types.SimpleNamespace(client=lambda name, **_: Lambda() if name == "lambda" else CodeDeploy())
        botocore = types.ModuleType("botocore.config")
        botocore.Config = lambda **options: options
        saved = {name: sys.modules.get(name) for name in ("boto3", "botocore", "botocore.config")}
        sys.modules.update({"boto3": boto3, "botocore": types.ModuleType("botocore"), "botocore.config": botocore})
        env = {"NEW_VERSION": "new", "LIVE": "live", "HAS_LLM_KEY": "true", "USER_CLAIM": "sub"}
        saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            code["handler"]({"DeploymentId": "d-1", "LifecycleEventHookExecutionId": "h-1"}, None)
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module
            for k, v in saved_env.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        return asked, reported
    chat, explore = "new CHAT", "new EXPLORE"
    runs = {
        "a reply in each mode": ({"new": answered(200)}, ([chat, explore], ["Succeeded"])),
        "the provider down for both": ({"new": answered(503, "model_unavailable"), "live": answered(503, "model_unavailable")},
                                       ([chat, "live CHAT", explore, "live EXPLORE"], ["Succeeded"])),
        "a refused request": ({"new": answered(400, "model_refused")}, ([chat], ["Failed"])),
        "EXPLORE broken": ({"new": [answered(200), answered(500, "misconfigured")]}, ([chat, explore], ["Failed"])),
        "no answer": ({"new": TimeoutError("read timeout")}, ([chat], ["Failed"])),
        "throttled once, then a reply": ({"new": [Throttle(), answered(200)]}, ([chat, chat, explore], ["Succeeded"])),
        "the kill switch, lower Budgets": ({"new": Throttle(), "live": Throttle()},
                                           ([chat] * 3 + ["live CHAT"] + [explore] * 3 + ["live EXPLORE"], ["Succeeded"]),
                                           (but(BUDGETS="assistant=1,*=0"), base)),
        "the kill switch, new code": ({"new": Throttle(), "live": Throttle()}, ([chat] * 3 + ["live CHAT"], ["Failed"]),
                                      (but(CodeSha256="b"), base)),
        "the kill switch, another model": ({"new": Throttle(), "live": Throttle()}, ([chat] * 3 + ["live CHAT"], ["Failed"]),
                                           (but(LLM_MODEL="gpt-9"), base)),
        "throttled, live answers": ({"new": Throttle(), "live": answered(200)}, ([chat] * 3 + ["live CHAT"], ["Failed"])),
    }
    code["time"] = types.SimpleNamespace(sleep=lambda seconds: None)  # no pauses between the tries
    for case, (answers, expected, *sha) in runs.items():
        got = run_hook({k: list(v) if isinstance(v, list) else v for k, v in answers.items()}, *sha)
        if got != expected:
            failed.append(f"AssistantSmokeHook's handler, {case}: asked and reported {got}, not {expected}")
    variables = hook["Properties"]["Environment"]["Variables"]
    if set(variables) != {"NEW_VERSION", "LIVE", "HAS_LLM_KEY", "USER_CLAIM"}:
        failed.append(f"AssistantSmokeHook's environment: {sorted(variables)}")
    print(f"the assistant's PreTraffic hook: runs on the new version, sends the smoke fixture, "
          f"{len(verdicts) - len(wrong)} of {len(verdicts)} verdicts right, its handler reports {len(runs)} runs")

for problem in failed:
    print(f"FAILED: {problem}")
sys.exit(1 if failed else 0)
