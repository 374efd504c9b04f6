"""The aliased functions' versions: which one `live` served before, going back to it, and
keeping a few (docs/operations.md, "Releases and rollback").

    python3 infra/versions.py previous <Function>    the version `live` pointed at before its
                                                      current one, from CodeDeploy's history
    python3 infra/versions.py rollback <Function> [--to N]   points `live` at it (or at N),
                                                      with no traffic split left
    python3 infra/versions.py prune [--keep N]       on every aliased function, deletes the
                                                      versions older than its newest N (default
                                                      5) but those an alias serves and the one
                                                      `previous` names
    python3 infra/versions.py drift                   exits 1 when `live` of an aliased function
                                                      runs other code than the stack's (after a
                                                      rollback): a stack update would ship it again

<Function> is a logical id (SearchFunction, ResearchFunction, RagSearchFunction,
AssistantFunction). STACK and REGION say which stack. The previous version is the one the
latest succeeded deployment to `live`'s version shifted traffic away from: a version whose
deployment failed, published after it, is never the answer. Every call is the AWS CLI's, by
argv; exit 1 says what could not be done.
"""
import json
import os
import re
import subprocess
import sys

ALIASED = ("SearchFunction", "ResearchFunction", "RagSearchFunction", "AssistantFunction")
STACK, REGION = os.environ.get("STACK"), os.environ.get("REGION")


def aws(*args):
    """The AWS CLI's JSON answer to `args` (in the stack's region)."""
    run = subprocess.run(["aws", *args, "--region", REGION, "--output", "json"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"aws {' '.join(args[:2])} failed: {run.stderr.strip()}")
    return json.loads(run.stdout or "{}")


def physical(logical_id):
    answer = aws("cloudformation", "describe-stack-resource", "--stack-name", STACK, "--logical-resource-id", logical_id)
    return answer["StackResourceDetail"]["PhysicalResourceId"]


def versions(function):
    """The function's published versions (not $LATEST), oldest first (the CLI pages for us)."""
    listed = aws("lambda", "list-versions-by-function", "--function-name", function)["Versions"]
    return sorted((v for v in listed if v["Version"] != "$LATEST"), key=lambda v: int(v["Version"]))


def aliased(logical_id, function):
    """Every version an alias of the function routes to, its traffic split included, and the
    one `live`'s would roll back to ([`before`]), however old."""
    kept = set()
    for alias in aws("lambda", "list-aliases", "--function-name", function)["Aliases"]:
        kept.add(alias["FunctionVersion"])
        kept.update((alias.get("RoutingConfig") or {}).get("AdditionalVersionWeights", {}))
        if alias["Name"] == "live":
            kept.add(before(logical_id, alias["FunctionVersion"]))
    return kept


def shift(content):
    """(from, to) versions of a Lambda AppSpec (JSON or YAML: the same two keys)."""
    found = {k: re.search(rf"{k}\W+(\d+)", content) for k in ("CurrentVersion", "TargetVersion")}
    return tuple(m.group(1) if m else None for m in found.values())


def live_alias(logical_id, function):
    """The `live` alias; refused while a deployment splits its traffic (CodeDeploy's next step
    would overwrite a change made by hand)."""
    live = aws("lambda", "get-alias", "--function-name", function, "--name", "live")
    if (live.get("RoutingConfig") or {}).get("AdditionalVersionWeights"):
        sys.exit(f"{logical_id}: live is splitting traffic (a deployment in progress): stop it first, "
                 "aws deploy stop-deployment --deployment-id <id> --auto-rollback-enabled")
    return live


def before(logical_id, version):
    """The version the latest succeeded deployment to `version` shifted traffic away from, or
    None. CodeDeploy's own rollbacks are not deployments of a release, so they are passed over;
    the revision is read back in whichever form it was stored (AppSpecContent, or String)."""
    application, group = physical("ServerlessDeploymentApplication"), physical(f"{logical_id}DeploymentGroup")
    ids = aws("deploy", "list-deployments", "--application-name", application, "--deployment-group-name", group,
              "--include-only-statuses", "Succeeded")["deployments"]
    infos = []
    for start in range(0, len(ids), 25):  # batch-get-deployments takes at most 25
        infos += aws("deploy", "batch-get-deployments", "--deployment-ids", *ids[start:start + 25])["deploymentsInfo"]
    for info in sorted(infos, key=lambda d: d["createTime"], reverse=True):
        if info.get("creator") == "codeDeployRollback" or (info.get("rollbackInfo") or {}).get("rollbackTriggeringDeploymentId"):
            continue
        kind = info["revision"]["revisionType"]
        key = {"AppSpecContent": "appSpecContent", "String": "string"}.get(kind)
        if key is None:
            continue
        wanted = {"revisionType": kind, key: {"sha256": info["revision"][key]["sha256"]}}
        revision = aws("deploy", "get-application-revision", "--application-name", application, "--revision",
                       json.dumps(wanted))["revision"]
        was, became = shift(revision[key]["content"])
        if became == version and was and was != version:
            return was
    return None


def previous(logical_id):
    """(function, live's version, the version before it)."""
    function = physical(logical_id)
    live = live_alias(logical_id, function)["FunctionVersion"]
    found = before(logical_id, live)
    if found is None:
        sys.exit(f"{logical_id}: no succeeded deployment shifted live to version {live} "
                 f"(pointed by hand?): choose one of {[v['Version'] for v in versions(function)][-5:]}, then --to N")
    return function, live, found


def describe(function, version):
    v = aws("lambda", "get-function-configuration", "--function-name", function, "--qualifier", version)
    return f"version {version} ({v.get('Description', '')}, published {v.get('LastModified', '?')})"


def main(args):
    if not (STACK and REGION):
        sys.exit("set STACK and REGION")
    command = args[0] if args else ""
    if command in ("previous", "rollback") and len(args) >= 2 and args[1] in ALIASED:
        if command == "rollback" and len(args) == 4 and args[2] == "--to":
            function = physical(args[1])
            live, target = live_alias(args[1], function)["FunctionVersion"], args[3]
        elif len(args) == 2:
            function, live, target = previous(args[1])
        else:
            sys.exit(__doc__)
        if command == "previous":
            print(f"{args[1]}: live serves version {live}; before it, {describe(function, target)}")
            return
        aws("lambda", "update-alias", "--function-name", function, "--name", "live", "--function-version", target,
            "--routing-config", "AdditionalVersionWeights={}")
        print(f"{args[1]}: live now serves {describe(function, target)}, instead of version {live}")
        # The stack still holds the code and settings rolled away from: the next stack update
        # publishes them again (infra/set-parameter.sh refuses until then).
        print(f"{args[1]}: the stack still deploys what version {live} runs: make the rollback stick with "
              "infra/deploy.sh of the commit before it (docs/operations.md, \"Releases and rollback\")")
    elif command == "prune" and (len(args) == 1 or (len(args) == 3 and args[1] == "--keep" and args[2].isdigit())):
        keep = int(args[2]) if len(args) == 3 else 5
        if keep < 1:
            sys.exit("--keep 1 at least")
        for logical_id in ALIASED:
            function = physical(logical_id)
            kept = aliased(logical_id, function)
            published = [v["Version"] for v in versions(function)]
            old = [v for v in published[:-keep] if v not in kept]
            for version in old:
                aws("lambda", "delete-function", "--function-name", function, "--qualifier", version)
            print(f"{logical_id}: {len(published) - len(old)} versions kept, {len(old)} deleted "
                  f"({', '.join(old) or 'none'})")
    elif command == "drift" and len(args) == 1:
        drifted = []
        for logical_id in ALIASED:
            function = physical(logical_id)
            live, latest = (aws("lambda", "get-function-configuration", "--function-name", function, "--qualifier", q)
                            for q in ("live", "$LATEST"))
            if live["CodeSha256"] != latest["CodeSha256"]:
                drifted.append(f"{logical_id} (live serves version {live['Version']})")
        if drifted:
            sys.exit(f"live runs other code than the stack holds on {', '.join(drifted)}: rolled back? A stack "
                     "update would publish the stack's code again. Make the rollback stick first with "
                     "infra/deploy.sh of the commit live runs (docs/operations.md, \"Releases and rollback\")")
        print("live runs the stack's code on every aliased function")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
