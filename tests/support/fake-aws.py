#!/usr/bin/env python3
"""A fake AWS CLI v2 for the runbook scripts' tests (tests/docs.rs): the few calls they make,
answered in the shapes of the CLI's `--output json` for those APIs (CloudFormation
DescribeStacks, DescribeStackResource, UpdateStack; Lambda ListVersionsByFunction, ListAliases,
GetAlias, GetFunctionConfiguration, UpdateAlias, DeleteFunction; CodeDeploy ListDeployments,
BatchGetDeployments, whose appSpecContent.content is always null, and
GetApplicationRevision), over a world kept in $FAKE_AWS_STATE (JSON) that the writes change.
Each call's argv is appended to $FAKE_AWS_CALLS as one JSON line. A call it does not know, an
unknown or missing option, or no --region, fails as the CLI does (exit 252 or 254, stderr).

The world: {"stacks": {name: {"Parameters": [...]}}, "resources": {logical id: physical id},
"functions": {name: {"versions": {"1": {"Description", "CodeSha256", "LastModified"}},
"aliases": {"live": {"FunctionVersion", "RoutingConfig"?}}, "latest"?: the $LATEST
configuration, else the newest version's}}, "deployments": {id: {"group", "createTime", "status",
"content", "revisionType"? (AppSpecContent, or String), "creator"? (codeDeployRollback: one of
CodeDeploy's own rollbacks)}}}.
"""
import hashlib
import json
import os
import sys

OPTIONS = {
    ("cloudformation", "describe-stacks"): {"--stack-name"},
    ("cloudformation", "describe-stack-resource"): {"--stack-name", "--logical-resource-id"},
    ("cloudformation", "update-stack"): {"--stack-name", "--use-previous-template", "--capabilities", "--parameters"},
    ("cloudformation", "wait"): {"--stack-name"},
    ("lambda", "list-versions-by-function"): {"--function-name"},
    ("lambda", "list-aliases"): {"--function-name"},
    ("lambda", "get-alias"): {"--function-name", "--name"},
    ("lambda", "get-function-configuration"): {"--function-name", "--qualifier"},
    ("lambda", "update-alias"): {"--function-name", "--name", "--function-version", "--routing-config"},
    ("lambda", "delete-function"): {"--function-name", "--qualifier"},
    ("deploy", "list-deployments"): {"--application-name", "--deployment-group-name", "--include-only-statuses"},
    ("deploy", "batch-get-deployments"): {"--deployment-ids"},
    ("deploy", "get-application-revision"): {"--application-name", "--revision"},
}
FLAGS = {"--use-previous-template"}
# A Lambda revision's two forms (RevisionLocation: AppSpecContent, or the older String).
KEYS = {"AppSpecContent": "appSpecContent", "String": "string"}


def fail(code, message):
    sys.stderr.write(f"\nAn error occurred ({code}): {message}\n")
    sys.exit(254)


def parse(argv):
    """(service, operation, {option: [values]}) as the CLI reads them."""
    if len(argv) < 2:
        sys.stderr.write("usage: aws [options] <command> <subcommand>\n")
        sys.exit(252)
    service, operation, rest = argv[0], argv[1], argv[2:]
    if service == "cloudformation" and operation == "wait":
        rest = rest[1:]  # the waiter's name
    if (service, operation) not in OPTIONS:
        sys.stderr.write(f"aws: error: argument operation: Invalid choice: {service} {operation}\n")
        sys.exit(252)
    options, name = {}, None
    for arg in rest:
        if arg.startswith("--"):
            name = arg
            options.setdefault(name, [])
        elif name is None:
            sys.stderr.write(f"aws: error: unrecognized arguments: {arg}\n")
            sys.exit(252)
        else:
            options[name].append(arg)
    allowed = OPTIONS[(service, operation)] | {"--region", "--output"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        sys.stderr.write(f"aws: error: unrecognized arguments: {' '.join(unknown)}\n")
        sys.exit(252)
    if not options.get("--region"):
        sys.stderr.write("You must specify a region.\n")
        sys.exit(253)
    for required in OPTIONS[(service, operation)] - FLAGS - {"--routing-config", "--include-only-statuses", "--qualifier"}:
        if not options.get(required):
            sys.stderr.write(f"aws: error: the following arguments are required: {required}\n")
            sys.exit(252)
    return service, operation, {k: v for k, v in options.items()}


def one(options, name):
    return options[name][0] if options.get(name) else None


def function(world, options):
    name = one(options, "--function-name")
    # A qualified ARN or name:qualifier names the same function.
    base = name.split(":")[6] if name.startswith("arn:") else name.split(":")[0]
    if base not in world["functions"]:
        fail("ResourceNotFoundException", f"Function not found: {name}")
    return base, world["functions"][base]


def answer(world, service, operation, options):
    if service == "cloudformation":
        stack = one(options, "--stack-name")
        if operation == "wait":
            return None
        if stack not in world["stacks"]:
            fail("ValidationError", f"Stack with id {stack} does not exist")
        if operation == "describe-stacks":
            return {"Stacks": [{"StackName": stack, "StackStatus": "UPDATE_COMPLETE", **world["stacks"][stack]}]}
        if operation == "describe-stack-resource":
            logical = one(options, "--logical-resource-id")
            if logical not in world["resources"]:
                fail("ValidationError", f"Resource {logical} does not exist for stack {stack}")
            return {"StackResourceDetail": {"StackName": stack, "LogicalResourceId": logical,
                                            "PhysicalResourceId": world["resources"][logical]}}
        if operation == "update-stack":
            sent = json.loads(one(options, "--parameters"))
            previous = {p["ParameterKey"]: p["ParameterValue"] for p in world["stacks"][stack]["Parameters"]}
            if {p["ParameterKey"] for p in sent} != set(previous):
                fail("ValidationError", "Parameters must name every parameter of the template")
            world["stacks"][stack]["Parameters"] = [
                {"ParameterKey": p["ParameterKey"],
                 "ParameterValue": previous[p["ParameterKey"]] if p.get("UsePreviousValue") else p["ParameterValue"]}
                for p in sent]
            return {"StackId": f"arn:aws:cloudformation:eu-west-1:123456789012:stack/{stack}/1"}
    if service == "lambda":
        name, fn = function(world, options)
        if operation == "list-versions-by-function":
            versions = [{"FunctionName": name, "Version": "$LATEST"}]
            versions += [{"FunctionName": name, "Version": v, **c} for v, c in sorted(fn["versions"].items(), key=lambda i: int(i[0]))]
            return {"Versions": versions}
        if operation == "list-aliases":
            return {"Aliases": [{"Name": a, **c} for a, c in fn["aliases"].items()]}
        if operation == "get-alias":
            alias = one(options, "--name")
            if alias not in fn["aliases"]:
                fail("ResourceNotFoundException", f"Alias not found: {alias}")
            return {"Name": alias, **fn["aliases"][alias]}
        if operation == "get-function-configuration":
            qualifier = one(options, "--qualifier") or "$LATEST"
            if qualifier == "$LATEST":  # the stack's code: the newest version's unless told
                newest = max(fn["versions"], key=int)
                return {"FunctionName": name, "Version": "$LATEST", **fn.get("latest", fn["versions"][newest])}
            version = fn["aliases"][qualifier]["FunctionVersion"] if qualifier in fn["aliases"] else qualifier
            if version not in fn["versions"]:
                fail("ResourceNotFoundException", f"Function not found: {name}:{qualifier}")
            return {"FunctionName": name, "Version": version, **fn["versions"][version]}
        if operation == "update-alias":
            version = one(options, "--function-version")
            if version not in fn["versions"]:
                fail("ResourceNotFoundException", f"Function not found: {name}:{version}")
            routing = one(options, "--routing-config")
            if routing not in (None, "AdditionalVersionWeights={}"):
                fail("InvalidParameterValueException", f"routing config {routing}")
            fn["aliases"][one(options, "--name")] = {"FunctionVersion": version}
            return {"Name": one(options, "--name"), "FunctionVersion": version}
        if operation == "delete-function":
            version = one(options, "--qualifier")
            served = {a["FunctionVersion"] for a in fn["aliases"].values()}
            served |= {v for a in fn["aliases"].values() for v in a.get("RoutingConfig", {}).get("AdditionalVersionWeights", {})}
            if version is None or version == "$LATEST":
                fail("InvalidParameterValueException", "the tests never delete a whole function")
            if version in served:
                fail("ResourceConflictException", f"Unable to delete version because the following aliases reference it: {version}")
            if fn["versions"].pop(version, None) is None:
                fail("ResourceNotFoundException", f"Function not found: {name}:{version}")
            return None
    if service == "deploy":
        deployments = world["deployments"]
        if operation == "list-deployments":
            statuses = options.get("--include-only-statuses") or []
            group = one(options, "--deployment-group-name")
            return {"deployments": [i for i, d in deployments.items()
                                    if d["group"] == group and (not statuses or d["status"] in statuses)]}
        if operation == "batch-get-deployments":
            ids = options["--deployment-ids"]
            if len(ids) > 25:
                fail("BatchLimitExceededException", "The maximum number of names or IDs allowed for this request (25) was exceeded")
            infos = []
            for i in ids:
                if i not in deployments:
                    continue
                d = deployments[i]
                kind = d.get("revisionType", "AppSpecContent")
                info = {"deploymentId": i, "deploymentGroupName": d["group"], "status": d["status"],
                        "createTime": d["createTime"], "computePlatform": "Lambda", "creator": d.get("creator", "user"),
                        "revision": {"revisionType": kind, KEYS[kind]: {"content": None, "sha256": sha(d["content"])}}}
                if d.get("creator") == "codeDeployRollback":
                    info["rollbackInfo"] = {"rollbackTriggeringDeploymentId": d.get("rolls back", "d-x")}
                infos.append(info)
            return {"deploymentsInfo": infos}
        if operation == "get-application-revision":
            revision = json.loads(one(options, "--revision"))
            kind = revision.get("revisionType")
            if kind not in KEYS or KEYS[kind] not in revision:
                fail("InvalidRevisionException", f"revision {revision}")
            wanted = revision[KEYS[kind]]["sha256"]
            for d in deployments.values():
                if sha(d["content"]) == wanted and d.get("revisionType", "AppSpecContent") == kind:
                    return {"applicationName": one(options, "--application-name"),
                            "revision": {"revisionType": kind, KEYS[kind]: {"content": d["content"], "sha256": wanted}}}
            fail("RevisionDoesNotExistException", "No application revision found")
    raise AssertionError((service, operation))


def sha(content):
    return hashlib.sha256(content.encode()).hexdigest()


def main():
    argv = sys.argv[1:]
    with open(os.environ["FAKE_AWS_CALLS"], "a") as calls:
        calls.write(json.dumps(argv) + "\n")
    service, operation, options = parse(argv)
    with open(os.environ["FAKE_AWS_STATE"]) as f:
        world = json.load(f)
    out = answer(world, service, operation, options)
    with open(os.environ["FAKE_AWS_STATE"], "w") as f:
        json.dump(world, f)
    if out is not None:
        print(json.dumps(out, indent=4))


main()
