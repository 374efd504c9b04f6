//! The docs cannot drift from the code: every variable the code reads is in
//! `docs/configuration.md` and `.env.example` with the code's default; every HTTP route of
//! `template.yaml` is in the README's table with who may call it; every alarm on the bundle's
//! metrics watches one the code emits; every alarm has a runbook in `docs/operations.md` that
//! names it; the deploy guide names every function and output; every relative link in the README
//! and `docs/` resolves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The template's routes as `cargo xtask serve` reads them (its matcher is tested in routes.rs).
#[path = "../xtask/src/template_routes.rs"]
#[allow(dead_code)]
mod template_routes;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file under `dir`, depth first.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

fn read(path: impl AsRef<Path>) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Variables set by the platform or the shell: documented, but not in `.env.example`.
const PLATFORM: [&str; 11] = [
    "HOME",
    "AWS_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "RESEARCH_BUNDLE_CACHE",
    "AWS_LAMBDA_LOG_LEVEL",
    "RUST_LOG",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_RUNTIME_API",
];

fn is_name(s: &str) -> bool {
    s.len() > 1 && s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The string literal at the start of `s` (after its opening quote), if any.
fn literal(s: &str) -> Option<String> {
    Some(s.strip_prefix('"')?.split('"').next()?.to_owned())
}

/// Every `<call>("NAME"` in `src` where `call` is a whole word (a line break may follow the
/// parenthesis): each name and the rest of `src` after its closing quote.
fn calls<'a>(src: &'a str, call: &str) -> Vec<(String, &'a str)> {
    let needle = format!("{call}(");
    let mut out = Vec::new();
    for (at, _) in src.match_indices(&needle) {
        let word_start = src[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let Some(rest) = src[at + needle.len()..].trim_start().strip_prefix('"') else { continue };
        let Some(end) = rest.find('"') else { continue };
        if word_start && is_name(&rest[..end]) {
            out.push((rest[..end].to_owned(), &rest[end + 1..]));
        }
    }
    out
}

/// Every variable the settings read (`shared/src/core/config.rs`, `core/secrets.rs` and each
/// capability's `settings.rs`), with its default where the code states it as a literal (`number("X", 30)`,
/// `base_url("X", "https://…")`, `choice("X", "v", …)`, `get("X")…unwrap_or("v")`).
fn config_vars() -> BTreeMap<String, Option<String>> {
    let text: String = rust_files()
        .into_iter()
        .filter(|f| {
            f.ends_with("core/config.rs")
                || f.ends_with("core/secrets.rs")
                || f.file_name().is_some_and(|n| n == "settings.rs")
        })
        .map(|f| std::fs::read_to_string(f).unwrap().split("#[cfg(test)]").next().unwrap().to_owned())
        .collect();
    let src = text.as_str();
    let mut vars = BTreeMap::new();
    for call in ["number", "millis", "secs", "usd"] {
        for (name, rest) in calls(src, call) {
            let n: String = rest
                .trim_start_matches(", ")
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '_' || *c == '.')
                .collect();
            vars.insert(name, Some(n.replace('_', "")).filter(|n| !n.is_empty()));
        }
    }
    for call in ["base_url", "choice", "agents"] {
        for (name, rest) in calls(src, call) {
            vars.insert(name, literal(rest.trim_start_matches(", ")));
        }
    }
    // Any other variable named in a settings file (`A_B`, read through a helper of its own):
    // listed, so that it is checked to be documented, its default not parsed.
    for (at, _) in src.match_indices('"') {
        let name: String = src[at + 1..].chars().take_while(|c| *c != '"').collect();
        let whole = name.contains('_') && !name.ends_with('_'); // not a prefix (`APP_TOOL_`)
        if is_name(&name) && whole && src[at + 1 + name.len()..].starts_with('"') {
            vars.entry(name).or_insert(None);
        }
    }
    for (name, rest) in calls(src, "get") {
        let rest = rest.trim_start_matches(')').trim_start_matches(".as_deref()").trim_start();
        let default =
            rest.strip_prefix(".unwrap_or(").or_else(|| rest.strip_prefix(".unwrap_or_else(|| ")).and_then(literal);
        let entry = vars.entry(name).or_insert(None);
        if entry.is_none() {
            *entry = default;
        }
    }
    vars
}

/// The Rust source files of the library and of the functions.
fn rust_files() -> Vec<PathBuf> {
    let mut files = integration::rust_files(&root().join("shared/src"));
    files.extend(integration::rust_files(&root().join("functions")));
    files
}

/// Every variable read with `std::env::var` outside the settings (logging, metrics, binaries).
fn other_vars() -> Vec<String> {
    let mut names = Vec::new();
    for file in rust_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for call in ["env::var", "env::var_os"] {
            names.extend(calls(&text, call).into_iter().map(|(name, _)| name));
        }
    }
    // What cargo gives a build script (functions/link.rs) is not the product's configuration.
    names.retain(|name| !name.starts_with("CARGO_CFG_"));
    names
}

/// The default cell of `name`'s row in `docs/configuration.md`.
fn documented_default(configuration: &str, name: &str) -> Option<String> {
    let row = configuration.lines().find(|l| l.starts_with(&format!("| `{name}` |")))?;
    Some(row.split('|').nth(2)?.trim().to_owned())
}

/// The comment block of `name` in `.env.example`: the lines above `NAME=` up to a blank line.
fn example_block(example: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = example.lines().collect();
    let at = lines.iter().position(|l| l.starts_with(&format!("{name}=")))?;
    let start = lines[..at].iter().rposition(|l| l.trim().is_empty()).map_or(0, |i| i + 1);
    Some(lines[start..at].join("\n"))
}

// Given the code's configuration, then every variable it reads is documented with its default
// in docs/configuration.md and (unless the platform sets it) in .env.example.
#[test]
fn every_variable_the_code_reads_is_documented_with_its_default() {
    let (configuration, example) = (read("docs/configuration.md"), read(".env.example"));
    let vars = config_vars();
    assert!(vars.len() > 50, "the settings read as {} variables: the parser lost them", vars.len());
    let mut problems = Vec::new();
    let everything =
        vars.iter().map(|(n, d)| (n.clone(), d.clone())).chain(other_vars().into_iter().map(|n| (n, None)));
    for (name, default) in everything {
        if !configuration.contains(&format!("`{name}`")) {
            problems.push(format!("{name}: not in docs/configuration.md"));
        }
        if PLATFORM.contains(&name.as_str()) {
            continue;
        }
        let Some(block) = example_block(&example, &name) else {
            problems.push(format!("{name}: no `{name}=` line in .env.example"));
            continue;
        };
        if let Some(default) = default {
            if documented_default(&configuration, &name).as_deref() != Some(default.as_str()) {
                problems.push(format!(
                    "{name}: the code's default is {default:?}; docs/configuration.md's row says otherwise"
                ));
            }
            if !block.contains(&format!("[{default}]")) {
                problems
                    .push(format!("{name}: the code's default is {default:?}; .env.example does not say [{default}]"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// Given template.yaml's HTTP routes, then each is in the README's route table, on a row that
// names who may call it (IAM, JWT or public) as its authorizer says.
#[test]
fn every_route_is_in_the_readme_with_its_authorizer() {
    let readme = read("README.md");
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| ")).collect();
    let routes = template_routes::parse(&read("template.yaml"));
    let mut problems = Vec::new();
    for r in &routes {
        let who = match r.authorizer {
            template_routes::Authorizer::Iam => "IAM",
            template_routes::Authorizer::UserJwt => "JWT",
            template_routes::Authorizer::None => "public",
        };
        let route = format!("`{} {}`", r.method, r.path);
        match rows.iter().find(|row| row.contains(&route)) {
            None => problems.push(format!("{route}: not in the README's route table")),
            Some(row) if !row.contains(who) => problems.push(format!("{route}: its row does not say {who}")),
            Some(_) => {}
        }
    }
    assert!(routes.len() >= 12, "template.yaml read as {} routes: the parser lost them", routes.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// Given the README, ARCHITECTURE.md and docs/, then every relative link points at a file of the
// repository.
#[test]
fn every_relative_link_resolves() {
    let mut pages = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    pages.extend(
        std::fs::read_dir(root().join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (at, _) in text.match_indices("](") {
            let target = text[at + 2..].split(')').next().unwrap_or_default();
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", page.strip_prefix(root()).unwrap_or(page).display()));
            }
        }
    }
    assert!(pages.len() >= 8, "docs/ has {} pages", pages.len());
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The Rust sources of the functions and the library, as one text.
fn sources() -> String {
    rust_files().iter().map(|path| std::fs::read_to_string(path).unwrap()).collect()
}

// Issue 43: every alarm on the bundle's own metrics (namespace ResearchBundle) watches a metric
// the code emits, split by a dimension value the code uses: an alarm on a renamed metric would
// stay silent for ever.
#[test]
fn every_alarm_watches_a_metric_the_code_emits() {
    let (template, code) = (read("template.yaml"), sources());
    let lines: Vec<&str> = template.lines().map(str::trim).collect();
    let mut watched = 0;
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if *line != "Namespace: ResearchBundle" {
            continue;
        }
        let metric = lines[i + 1].strip_prefix("MetricName: ").expect("MetricName follows the namespace");
        watched += 1;
        if !code.contains(&format!("\"{metric}\"")) {
            problems.push(format!("metric {metric}: the code emits no such metric"));
        }
        if lines.get(i + 2) == Some(&"Dimensions:") {
            let (name, value) =
                (lines[i + 3].trim_start_matches("- Name: "), lines[i + 4].trim_start_matches("Value: "));
            // A value the deploy fills in (`!Ref`, `!GetAtt`: a function's name, a version) is
            // not the code's; its name is.
            let valued = value.starts_with('!') || code.contains(&format!("\"{value}\""));
            if !code.contains(&format!("(\"{name}\"")) || !valued {
                problems.push(format!("metric {metric}: the code has no dimension {name} = {value}"));
            }
        }
    }
    assert!(watched >= 5, "template.yaml read as {watched} alarms on the bundle's metrics");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// Issue 54: every alarm of template.yaml has a runbook in docs/operations.md's "## Runbooks"
// section that names its logical id (in backticks, so `SearchErrorsAlarm` is not found inside
// `RagSearchErrorsAlarm`): an alarm that wakes someone points at what to do.
#[test]
fn every_alarm_has_a_runbook_that_names_it() {
    let (template, operations) = (read("template.yaml"), read("docs/operations.md"));
    let start = operations.find("\n## Runbooks\n").expect("docs/operations.md has a `## Runbooks` section");
    // From the heading to the next `## ` heading (`### ` runbooks stay inside it).
    let runbooks = operations[start + 1..].split("\n## ").next().unwrap_or_default();
    let lines: Vec<&str> = template.lines().collect();
    let mut alarms: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let kind = line.trim().strip_prefix("Type:").map(|t| t.trim().trim_matches('"').trim_matches('\''));
        if !matches!(kind, Some("AWS::CloudWatch::Alarm" | "AWS::CloudWatch::CompositeAlarm")) {
            continue;
        }
        // The resource's logical id: the nearest line above it at two spaces' indent (`  Name:`).
        let id = lines[..i]
            .iter()
            .rev()
            .find(|l| {
                l.starts_with("  ")
                    && !l.starts_with("   ")
                    && !l.trim().starts_with('#')
                    && l.trim_end().ends_with(':')
            })
            .map(|l| l.trim().trim_end_matches(':').to_owned())
            .expect("an alarm's Type sits under its logical id");
        alarms.push(id);
    }
    assert!(alarms.len() >= 30, "template.yaml read as {} alarms: the parser lost them", alarms.len());
    let missing: Vec<String> = alarms.iter().filter(|id| !runbooks.contains(&format!("`{id}`"))).cloned().collect();
    assert!(
        missing.is_empty(),
        "docs/operations.md's Runbooks section does not name (as `Id`) the alarms: {}",
        missing.join(", ")
    );
}

// Issue 43: the deploy guide names every function the template builds and every output the
// stack gives.
#[test]
fn the_deploy_guide_names_every_function_and_output() {
    let (template, deploy) = (read("template.yaml"), read("docs/deploy.md"));
    let binaries: Vec<&str> = template.lines().filter_map(|l| l.trim().strip_prefix("Binary: ")).collect();
    let outputs_at = template.find("\nOutputs:\n").expect("template.yaml has outputs");
    let outputs: Vec<&str> = template[outputs_at..]
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    assert!(binaries.len() >= 7 && outputs.len() >= 6, "read {binaries:?} and {outputs:?}");
    let missing: Vec<String> = binaries
        .iter()
        .map(|b| format!("`{b}`"))
        .chain(outputs.iter().map(|o| format!("`{o}`")))
        .filter(|name| !deploy.contains(name.as_str()))
        .collect();
    assert!(missing.is_empty(), "docs/deploy.md does not name: {}", missing.join(", "));
}

// Issue 41: the functions' table rights are exactly what the record store's DynamoDB adapter
// calls (no Scan, no DeleteItem): an adapter that starts calling another operation fails here,
// not with AccessDenied in production. Which partitions each function may write is checked on
// the SAM transform's output (infra/sam-check.py) against docs/access.md's table; here, that
// every partition the table names is one the code writes.
#[test]
fn the_table_rights_are_what_the_record_store_calls() {
    let (adapter, template) = (read("shared/src/core/records/dynamodb/mod.rs"), read("template.yaml"));
    // Item operations and queries; the table's set-up (`create_table`, `update_time_to_live`, for
    // DynamoDB Local in tests) is no function's business.
    let mut called: Vec<String> = Vec::new();
    for (at, _) in adapter.match_indices("()\n").chain(adapter.match_indices("()\r\n")) {
        let start = adapter[..at].rfind('.').unwrap_or(at) + 1;
        let call = &adapter[start..at];
        if call.chars().all(|c| c.is_ascii_lowercase() || c == '_') && (call.ends_with("_item") || call == "query") {
            let action: String = call.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect();
            if !called.contains(&action) {
                called.push(action);
            }
        }
    }
    called.sort();
    assert!(called.len() >= 5, "read the adapter's calls as {called:?}");
    let mut granted: Vec<String> = template
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Action: "))
        .flat_map(|l| l.trim_matches(['[', ']']).split(", ").map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|a| a.strip_prefix("dynamodb:").map(str::to_owned))
        .collect();
    granted.sort();
    granted.dedup();
    assert_eq!(granted, called, "the table rights and the adapter's calls differ");
    assert!(
        !["DynamoDBCrudPolicy", "DynamoDBReadPolicy", "DynamoDBWritePolicy"].iter().any(|p| template.contains(p)),
        "a SAM policy template grants the whole table (Scan, or writes without dynamodb:LeadingKeys)"
    );

    let access = read("docs/access.md");
    let table = access.split("## Which records each function may write").nth(1).expect("docs/access.md's table");
    let code: String = [
        "shared/src/web",
        "shared/src/costs",
        "shared/src/timeline",
        "shared/src/activities",
        "shared/src/assistant",
        "shared/src/pipeline",
    ]
    .iter()
    .flat_map(|dir| walk(&root().join(dir)))
    .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    .map(|p| std::fs::read_to_string(p).unwrap())
    .collect();
    let mut prefixes: Vec<&str> = table
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| function"))
        .flat_map(|l| l.split('`').skip(1).step_by(2))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    assert!(prefixes.len() >= 15, "read docs/access.md's prefixes as {prefixes:?}");
    let unwritten: Vec<&&str> =
        prefixes.iter().filter(|p| !code.contains(&format!("\"{}", p.trim_end_matches('*')))).collect();
    assert!(unwritten.is_empty(), "docs/access.md lets functions write partitions no code names: {unwritten:?}");
}

/// The text between `// #region name` and `// #endregion` in `source`, without the common
/// indent.
fn region(source: &str, name: &str) -> Option<String> {
    let start = source.lines().position(|l| l.trim() == format!("// #region {name}"))?;
    let lines: Vec<&str> = source.lines().skip(start + 1).take_while(|l| l.trim() != "// #endregion").collect();
    let indent = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min()?;
    Some(lines.iter().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect::<Vec<_>>().join("\n"))
}

// Issue 55: the code the docs give a front end to copy is the playground's own (which a headless
// Chromium runs in tests/clients/playground.test.mjs): every block marked
// `<!-- from playground/src/<file>#<region> -->` is that region of that file, exactly.
#[test]
fn front_end_samples_are_the_playgrounds_code() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let mark = line.trim_start().strip_prefix("<!-- from ").and_then(|l| l.strip_suffix(" -->"));
            let Some(mark) = mark else { continue };
            let (file, name) = mark.split_once('#').expect("<!-- from <file>#<region> -->");
            let wanted = region(&read(file), name).unwrap_or_else(|| panic!("{file} has no region {name}"));
            // The block may sit in a list item: its lines carry the mark's indent.
            let indent = line.len() - line.trim_start().len();
            let unindented = |l: &&str| l.get(indent..).unwrap_or("").to_owned();
            let fence = lines.get(at + 1).map(unindented).is_some_and(|l| l.starts_with("```"));
            let block: Vec<String> =
                lines[at + 2..].iter().map(unindented).take_while(|l| !l.starts_with("```")).collect();
            if !fence || block.join("\n") != wanted {
                problems.push(format!("{}: the block from {mark} is not that region as it is", path.display()));
            }
            checked += 1;
        }
    }
    assert!(checked >= 7, "only {checked} blocks are taken from the playground");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The runbook's parameter update (`infra/set-parameter.sh`, docs/operations.md) under a fake
/// `aws` that records its arguments: a value with commas and `=` reaches `update-stack` whole,
/// every other parameter keeps its previous value, and a name the stack lacks, or a price
/// table that is not one, changes nothing.
#[test]
fn the_runbooks_parameter_update_passes_values_with_commas_whole() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let aws = dir.path().join("aws");
    std::fs::write(
        &aws,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> {calls}\necho ---- >> {calls}\n\
             case \"$*\" in *describe-stacks*) echo '[\"Budgets\", \"JwtAudience\", \"LlmModel\", \"Prices\"]';; esac\n",
            calls = calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&aws, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |args: &[&str]| {
        let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
        let out = std::process::Command::new("bash")
            .arg(root().join("infra/set-parameter.sh"))
            .args(args)
            .env("PATH", path)
            .env("STACK", "research")
            .env("REGION", "eu-west-1")
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (ok, stderr) = run(&["Budgets=research=3,assistant=2,*=0", "JwtAudience=web-app,mini-app"]);
    assert!(ok, "{stderr}");
    let recorded = std::fs::read_to_string(&calls).unwrap();
    let update: Vec<&str> =
        recorded.split("----\n").find(|c| c.starts_with("cloudformation\nupdate-stack")).unwrap().lines().collect();
    assert!(update.windows(2).any(|w| w == ["--region", "eu-west-1"]) && update.contains(&"--use-previous-template"));
    let json = update[update.iter().position(|a| *a == "--parameters").unwrap() + 1];
    let parameters: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(
        parameters,
        serde_json::json!([
            {"ParameterKey": "Budgets", "ParameterValue": "research=3,assistant=2,*=0"},
            {"ParameterKey": "JwtAudience", "ParameterValue": "web-app,mini-app"},
            {"ParameterKey": "LlmModel", "UsePreviousValue": true},
            {"ParameterKey": "Prices", "UsePreviousValue": true},
        ])
    );
    std::fs::remove_file(&calls).unwrap();
    let (ok, stderr) = run(&["Budget=research=3"]);
    assert!(!ok && stderr.contains("not parameters of the stack: Budget"), "{stderr}");
    let (ok, stderr) = run(&["Architecture=x86_64"]);
    assert!(!ok && stderr.contains("change what is built"), "{stderr}");
    let (ok, stderr) = run(&["Prices={\"openai/gpt-9\": {\"input_per_1k_usd\": 0.01,"]);
    assert!(!ok && stderr.contains("Prices is not JSON"), "{stderr}");
    let (ok, stderr) = run(&["Prices={\"openai/gpt-9\": 0.01}"]);
    assert!(!ok && stderr.contains("Prices must be"), "{stderr}");
    let recorded = std::fs::read_to_string(&calls).unwrap();
    assert!(!recorded.contains("update-stack"), "a refused update reached the stack: {recorded}");
}

// Given ARCHITECTURE.md's code map, then it has a row for every module of `shared` and every
// function crate, and none for one that is not there.
#[test]
fn the_code_map_names_every_module() {
    let src = root().join("shared/src");
    let files = integration::rust_files(&src);
    let mut modules: std::collections::BTreeSet<String> = files
        .iter()
        .map(|f| {
            let path = f.strip_prefix(&src).unwrap().with_extension("");
            let path = path.to_string_lossy().replace('/', "::");
            format!("shared::{}", path.strip_suffix("::mod").unwrap_or(&path))
        })
        .collect();
    for entry in std::fs::read_dir(root().join("functions")).unwrap() {
        modules.insert(format!("functions/{}", entry.unwrap().file_name().to_string_lossy()));
    }
    let map = read("ARCHITECTURE.md");
    let named: std::collections::BTreeSet<String> = map
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|m| m.starts_with("shared::") || m.starts_with("functions/"))
        .map(str::to_owned)
        .collect();
    let missing: Vec<&String> = modules.difference(&named).collect();
    let gone: Vec<&String> = named.difference(&modules).collect();
    assert!(modules.len() > 100, "only {} modules found", modules.len());
    assert!(
        missing.is_empty() && gone.is_empty(),
        "ARCHITECTURE.md's code map lacks {missing:?}; names what is not there: {gone:?}"
    );
}
