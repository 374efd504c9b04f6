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
// section whose heading names its logical id (in backticks, so `SearchErrorsAlarm` is not found
// inside `RagSearchErrorsAlarm`): a runbook of its own, not a mention inside another's; an
// alarm that wakes someone points at what to do.
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
    let headings: String = runbooks.lines().filter(|l| l.starts_with("### ")).collect::<Vec<_>>().join("\n");
    let missing: Vec<String> = alarms.iter().filter(|id| !headings.contains(&format!("`{id}`"))).cloned().collect();
    assert!(
        missing.is_empty(),
        "no runbook heading in docs/operations.md names (as `Id`) the alarms: {}",
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

/// The runbook's scripts (`infra/set-parameter.sh`, `infra/deploy.sh`, `infra/versions.py`),
/// run as written from a copy of `infra/` and `template.yaml`, with fakes first on `PATH`: `aws`
/// (tests/support/fake-aws.py, over the world in `aws.json`, which the writes change), `sam`
/// (tests/support/fake-sam.py: records the parameters it would send, decoded as the SAM CLI
/// decodes them) and `rustup` and `cargo-lambda` that only answer, so infra/sam-build.sh runs
/// too. The bundled model comes from the cache infra/test.sh fills (infra/fetch-model.sh).
struct Runbook {
    dir: tempfile::TempDir,
}

impl Runbook {
    fn new(world: serde_json::Value) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("checkout");
        std::fs::create_dir_all(copy.join("infra")).unwrap();
        std::fs::copy(root().join("template.yaml"), copy.join("template.yaml")).unwrap();
        for file in [
            "parameters.py",
            "versions.py",
            "set-parameter.sh",
            "deploy.sh",
            "sam-build.sh",
            "model-layer.sh",
            "fetch-model.sh",
            "versions.env",
            "zigcc-arm64.sh",
        ] {
            std::fs::copy(root().join("infra").join(file), copy.join("infra").join(file)).unwrap();
        }
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let support = root().join("tests/support");
        for (name, script) in [
            ("aws", format!("#!/bin/sh\nexec python3 {} \"$@\"\n", support.join("fake-aws.py").display())),
            ("sam", format!("#!/bin/sh\nexec python3 {} \"$@\"\n", support.join("fake-sam.py").display())),
            ("rustup", "#!/bin/sh\necho aarch64-unknown-linux-gnu\n".to_owned()),
            // The interpreter itself, not a version manager's shim: pyenv's puts its own
            // directories first on PATH, where a real `aws` may be.
            ("python3", format!("#!/bin/sh\nexec {} \"$@\"\n", python())),
            ("cargo-lambda", "#!/bin/sh\nexit 0\n".to_owned()),
        ] {
            std::fs::write(bin.join(name), script).unwrap();
            std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.path().join("aws.json"), world.to_string()).unwrap();
        Runbook { dir }
    }

    fn checkout(&self) -> PathBuf {
        self.dir.path().join("checkout")
    }

    /// Runs `command` (a script of the copy's infra/ and its arguments) as the on-call engineer
    /// would, with STACK=research REGION=eu-west-1 and `env`: (succeeded, stdout and stderr).
    fn run(&self, command: &[&str], env: &[(&str, &str)]) -> (bool, String) {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        let program = if command[0].ends_with(".py") { python() } else { "bash".to_owned() };
        let out = std::process::Command::new(program)
            .arg(self.checkout().join(command[0]))
            .args(&command[1..])
            .current_dir(self.dir.path())
            .env("PATH", path)
            .env("STACK", "research")
            .env("REGION", "eu-west-1")
            .env("FAKE_AWS_STATE", self.dir.path().join("aws.json"))
            .env("FAKE_AWS_CALLS", self.dir.path().join("aws.calls"))
            .env("FAKE_SAM_CALLS", self.dir.path().join("sam.calls"))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    fn world(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.path().join("aws.json")).unwrap()).unwrap()
    }

    fn calls(&self, file: &str) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.path().join(file)).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The stack's parameters in the fake world, as {name: value}.
    fn stack(&self) -> BTreeMap<String, String> {
        let world = self.world();
        let parameters = world["stacks"]["research"]["Parameters"].as_array().cloned().unwrap_or_default();
        parameters
            .iter()
            .map(|p| (p["ParameterKey"].as_str().unwrap().to_owned(), p["ParameterValue"].as_str().unwrap().to_owned()))
            .collect()
    }
}

/// The Python interpreter's own path (`sys.executable`).
fn python() -> String {
    let out = std::process::Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `n` published versions of a function, live on the last.
fn function(n: u32) -> serde_json::Value {
    let versions: serde_json::Map<String, serde_json::Value> = (1..=n)
        .map(|v| {
            let c = serde_json::json!({"Description": format!("configuration c{v}"), "CodeSha256": format!("sha{v}"),
                                       "LastModified": format!("2026-11-{:02}T10:00:00.000+0000", v)});
            (v.to_string(), c)
        })
        .collect();
    serde_json::json!({"versions": versions, "aliases": {"live": {"FunctionVersion": n.to_string()}}})
}

/// A deployed stack: an api-embedder arm64 deployment whose aliased functions have 8 versions.
fn deployed() -> serde_json::Value {
    let parameters: Vec<serde_json::Value> = [
        ("Budgets", "research=3,assistant=2,*=0"),
        ("JwtAudience", "web-app"),
        ("JwtIssuer", "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc"),
        ("QdrantUrl", "https://xyz.cloud.qdrant.io:6334"),
        ("Architecture", "arm64"),
        ("Embedder", "api"),
        ("EmbeddingApiKeySecret", "research/embeddings"),
        ("WishFacets", "off"),
        ("Prices", ""),
        ("LlmModel", "gpt-4o-mini"),
    ]
    .iter()
    .map(|(k, v)| serde_json::json!({"ParameterKey": k, "ParameterValue": v}))
    .collect();
    let mut resources = serde_json::Map::new();
    let mut functions = serde_json::Map::new();
    for name in ["SearchFunction", "ResearchFunction", "RagSearchFunction", "AssistantFunction"] {
        resources.insert(name.into(), format!("research-{name}-X1").into());
        resources.insert(format!("{name}DeploymentGroup"), format!("research-{name}DeploymentGroup-X1").into());
        functions.insert(format!("research-{name}-X1"), function(8));
    }
    resources.insert("ServerlessDeploymentApplication".into(), "research-ServerlessDeploymentApplication-X1".into());
    serde_json::json!({"stacks": {"research": {"Parameters": parameters}}, "resources": resources,
                       "functions": functions, "deployments": {}})
}

/// Issue 73: the runbook's parameter change (`infra/set-parameter.sh`, docs/operations.md) sends
/// a value with commas and `=` whole and keeps every other parameter; it refuses a name the
/// stack lacks, a price table that is not one and each parameter that changes what is built
/// (WishFacets among them: it moves four functions to x86_64), changing nothing. Then the next
/// code deploy (`infra/deploy.sh`) keeps that change though a stale samconfig.toml says
/// otherwise: the build gets the stack's values, changed only by the ones given; `sam deploy`
/// sends only those and the ones that chose the build, so a runbook change made while it builds
/// is kept too; and each aliased function keeps its newest 5 versions.
#[test]
fn a_runbooks_parameter_change_survives_the_next_deploy() {
    let runbook = Runbook::new(deployed());
    let (ok, out) =
        runbook.run(&["infra/set-parameter.sh", "Budgets=research=1,*=0", "JwtAudience=web-app,mini-app"], &[]);
    assert!(ok, "{out}");
    let update = runbook
        .calls("aws.calls")
        .into_iter()
        .find(|c| c[0] == "cloudformation" && c[1] == "update-stack")
        .expect("set-parameter.sh calls update-stack");
    let args: Vec<&str> = update.as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(args.windows(2).any(|w| w == ["--region", "eu-west-1"]) && args.contains(&"--use-previous-template"));
    let sent: serde_json::Value =
        serde_json::from_str(args[args.iter().position(|a| *a == "--parameters").unwrap() + 1]).unwrap();
    assert_eq!(sent[0], serde_json::json!({"ParameterKey": "Budgets", "ParameterValue": "research=1,*=0"}));
    assert_eq!(sent[1], serde_json::json!({"ParameterKey": "JwtAudience", "ParameterValue": "web-app,mini-app"}));
    assert!(sent.as_array().unwrap()[2..].iter().all(|p| p["UsePreviousValue"] == true), "{sent}");
    let after_update = runbook.stack();
    assert_eq!(after_update["Budgets"], "research=1,*=0");
    assert_eq!(after_update["LlmModel"], "gpt-4o-mini");

    let updates = || runbook.calls("aws.calls").iter().filter(|c| c[1] == "update-stack").count();
    for (args, expected) in [
        (["infra/set-parameter.sh", "Budget=research=3"], "not parameters of the stack: Budget"),
        (["infra/set-parameter.sh", "Architecture=x86_64"], "change what is built"),
        (
            ["infra/set-parameter.sh", "WishFacets=bundled"],
            "WishFacets change what is built: STACK=... REGION=... bash infra/deploy.sh",
        ),
        (["infra/set-parameter.sh", "Prices={\"openai/gpt-9\": {\"input_per_1k_usd\": 0.01,"], "Prices is not JSON"),
        (["infra/set-parameter.sh", "Prices={\"openai/gpt-9\": 0.01}"], "Prices must be"),
    ] {
        let (ok, out) = runbook.run(&args, &[]);
        assert!(!ok && out.contains(expected), "{args:?}: {out}");
    }
    assert_eq!(updates(), 1, "a refused change reached the stack");
    assert_eq!(runbook.stack(), after_update);

    // The on-call engineer's samconfig.toml is another deploy's: its parameters and bucket apply nowhere.
    std::fs::write(
        runbook.checkout().join("samconfig.toml"),
        "version = 0.1\n[default.deploy.parameters]\nparameter_overrides = \"Budgets=research=3,assistant=2,*=0 JwtAudience=web-app\"\ns3_bucket = \"old-bucket\"\n[default.build.parameters]\nparameter_overrides = \"Architecture=x86_64\"\n",
    )
    .unwrap();
    let prices = r#"{"openai/gpt-4o-mini": {"input_per_1k_usd": 0.00015, "output_per_1k_usd": 0.0006}}"#;
    let (ok, out) = runbook.run(&["infra/deploy.sh", "WishFacets=bundled", &format!("Prices={prices}")], &[]);
    assert!(ok, "{out}");
    let mut expected = after_update.clone();
    expected.insert("WishFacets".into(), "bundled".into());
    expected.insert("Prices".into(), prices.into());
    let built = ["Architecture", "Embedder", "EmbeddingApiKeySecret", "WishFacets"];
    let only = |all: &BTreeMap<String, String>, names: &[&str]| -> BTreeMap<String, String> {
        all.iter().filter(|(k, _)| names.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let sent = |call: &serde_json::Value| -> BTreeMap<String, String> {
        serde_json::from_value(call["parameters"].clone()).unwrap()
    };
    let sam = runbook.calls("sam.calls");
    assert_eq!(sam.iter().map(|c| c["command"].as_str().unwrap()).collect::<Vec<_>>(), ["build", "deploy"]);
    assert_eq!(sent(&sam[0]), expected, "sam build would build with other parameters");
    assert_eq!(
        sent(&sam[1]),
        only(&expected, &[&built[..], &["Prices"]].concat()),
        "sam deploy would send other parameters"
    );
    for call in &sam {
        assert_eq!(call["config_parameters"], serde_json::json!({}), "a samconfig.toml reached sam: {call}");
        assert_eq!(call["options"]["--config-file"].as_array().map(|a| a.len()), Some(1), "{call}");
    }
    let deploy = &sam[1];
    assert_eq!(deploy["options"]["--stack-name"], serde_json::json!(["research"]));
    assert_eq!(deploy["options"]["--region"], serde_json::json!(["eu-west-1"]));
    assert_eq!(runbook.stack(), expected, "the stack after the deploy");
    // The next deploy, with no change given, builds with the same values and sends only the
    // build's; a lower budget set while it builds (the spend-spike runbook) is kept.
    let (ok, out) =
        runbook.run(&["infra/deploy.sh"], &[("FAKE_SAM_DURING_BUILD", r#"{"Budgets": "research=0.5,*=0"}"#)]);
    assert!(ok, "{out}");
    let sam = runbook.calls("sam.calls");
    assert_eq!(sent(&sam[2]), expected);
    assert_eq!(sent(&sam[3]), only(&expected, &built));
    expected.insert("Budgets".into(), "research=0.5,*=0".into());
    assert_eq!(runbook.stack(), expected, "the change made during the build was undone");
    // Each aliased function kept its newest 5 versions (live's among them) and deleted 1 to 3.
    for (name, function) in runbook.world()["functions"].as_object().unwrap() {
        let kept: Vec<&String> = function["versions"].as_object().unwrap().keys().collect();
        assert_eq!(kept, ["4", "5", "6", "7", "8"], "{name}");
    }
    let (ok, out) = runbook.run(&["infra/deploy.sh", "Budgets=x\\y"], &[]);
    assert!(!ok && out.contains("backslash"), "{out}");
}

/// Issue 73: after a teardown (docs/deploy.md, "6. Tear down"), the redeploy that adopts the
/// kept table takes the torn-down stack's saved parameters and adds `ExistingTableName`,
/// instead of replacing them all (aws-sam-cli#2380): the new stack has its Qdrant URL and issuer.
#[test]
fn the_teardowns_redeploy_keeps_the_saved_parameters() {
    let runbook = Runbook::new(deployed());
    let saved = runbook.dir.path().join("research-parameters.json");
    let stacks = serde_json::json!({"Stacks": [{"StackName": "research", "Parameters": deployed()["stacks"]["research"]["Parameters"]}]});
    std::fs::write(&saved, stacks.to_string()).unwrap();
    let mut world = deployed();
    world["stacks"] = serde_json::json!({});
    std::fs::write(runbook.dir.path().join("aws.json"), world.to_string()).unwrap();
    let (ok, out) = runbook.run(
        &["infra/deploy.sh", "ExistingTableName=research-RecordsTable-ABC"],
        &[("PARAMETERS", saved.to_str().unwrap())],
    );
    assert!(ok, "{out}");
    let deploy = runbook.calls("sam.calls").pop().unwrap();
    assert_eq!(deploy["parameters"].as_object().unwrap().len(), 11, "a new stack gets every value: {deploy}");
    let stack = runbook.stack();
    assert_eq!(stack["ExistingTableName"], "research-RecordsTable-ABC");
    assert_eq!(stack["QdrantUrl"], "https://xyz.cloud.qdrant.io:6334");
    assert_eq!(stack["JwtIssuer"], "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc");
    assert_eq!(stack["JwtAudience"], "web-app");
    assert_eq!(stack.len(), 11, "{stack:?}");
}

/// Issue 73: the rollback runbook's `infra/versions.py previous` names the version `live` served
/// before (the one the latest succeeded deployment shifted away from, not a newer version whose
/// deployment failed, nor one CodeDeploy's own rollback names), across more deployments than one
/// batch read and either form of revision; `rollback` points `live` at it with no traffic split,
/// and says the stack still holds the newer code, which `set-parameter.sh` then refuses to ship
/// again; no rollback runs while a deployment splits traffic; a prune keeps the version to go back to.
#[test]
fn rollback_finds_the_version_live_served_before() {
    let mut world = deployed();
    let group = "research-AssistantFunctionDeploymentGroup-X1";
    let appspec = |from: u32, to: u32| {
        format!(
            r#"{{"version":0.0,"Resources":[{{"research-AssistantFunction-X1":{{"Type":"AWS::Lambda::Function","Properties":{{"Name":"research-AssistantFunction-X1","Alias":"live","CurrentVersion":"{from}","TargetVersion":"{to}"}}}}}}],"Hooks":[{{"BeforeAllowTraffic":"CodeDeployHook_x-assistant"}}]}}"#
        )
    };
    let mut deployments = serde_json::Map::new();
    // Thirty older deployments of versions 1 and 2 back and forth, then 5 failed, then 6 replaced 4.
    for i in 0..30u32 {
        deployments.insert(
            format!("d-old{i:02}"),
            serde_json::json!({"group": group, "status": "Succeeded", "createTime": format!("2026-10-01T00:{i:02}:00+00:00"),
                               "content": appspec(1 + i % 2, 2 - i % 2)}),
        );
    }
    // d-6 stored as the older String revision; 7 failed, and CodeDeploy's rollback of it (7 -> 6)
    // succeeded: not a release.
    for (id, status, time, from, to) in [
        ("d-3", "Succeeded", "2026-11-03T10:00:00+00:00", 2, 3),
        ("d-4", "Succeeded", "2026-11-04T10:00:00+00:00", 3, 4),
        ("d-5", "Failed", "2026-11-05T10:00:00+00:00", 4, 5),
        ("d-6", "Succeeded", "2026-11-06T10:00:00+00:00", 4, 6),
        ("d-7", "Failed", "2026-11-07T10:00:00+00:00", 6, 7),
        ("d-7r", "Succeeded", "2026-11-07T10:05:00+00:00", 7, 6),
    ] {
        let mut d =
            serde_json::json!({"group": group, "status": status, "createTime": time, "content": appspec(from, to)});
        if id == "d-6" {
            d["revisionType"] = "String".into();
        }
        if id == "d-7r" {
            d["creator"] = "codeDeployRollback".into();
        }
        deployments.insert(id.into(), d);
    }
    world["deployments"] = deployments.into();
    let mut assistant = function(7);
    assistant["aliases"]["live"]["FunctionVersion"] = "6".into();
    assistant["latest"] = assistant["versions"]["6"].clone();
    world["functions"]["research-AssistantFunction-X1"] = assistant;
    let runbook = Runbook::new(world);
    let (ok, out) = runbook.run(&["infra/versions.py", "drift"], &[]);
    assert!(ok, "{out}");
    let (ok, out) = runbook.run(&["infra/versions.py", "previous", "AssistantFunction"], &[]);
    assert!(ok, "{out}");
    assert!(out.contains("live serves version 6; before it, version 4 (configuration c4"), "{out}");
    let (ok, out) = runbook.run(&["infra/versions.py", "rollback", "AssistantFunction"], &[]);
    assert!(ok && out.contains("live now serves version 4"), "{out}");
    assert!(out.contains("the stack still deploys what version 6 runs"), "{out}");
    assert_eq!(
        runbook.world()["functions"]["research-AssistantFunction-X1"]["aliases"]["live"],
        serde_json::json!({"FunctionVersion": "4"})
    );
    // A parameter change now would publish version 6's code again: refused, nothing sent.
    let (ok, out) = runbook.run(&["infra/versions.py", "drift"], &[]);
    assert!(!ok && out.contains("AssistantFunction (live serves version 4)"), "{out}");
    let (ok, out) = runbook.run(&["infra/set-parameter.sh", "Budgets=research=1,*=0"], &[]);
    assert!(!ok && out.contains("rolled back?"), "{out}");
    assert!(!runbook.calls("aws.calls").iter().any(|c| c[1] == "update-stack"));
    // Live on 4 now: before it, 3.
    let (ok, out) = runbook.run(&["infra/versions.py", "previous", "AssistantFunction"], &[]);
    assert!(ok && out.contains("before it, version 3"), "{out}");
    let mut world = runbook.world();
    world["functions"]["research-AssistantFunction-X1"]["aliases"]["live"] =
        serde_json::json!({"FunctionVersion": "4", "RoutingConfig": {"AdditionalVersionWeights": {"6": 0.1}}});
    std::fs::write(runbook.dir.path().join("aws.json"), world.to_string()).unwrap();
    for rollback in [
        &["infra/versions.py", "rollback", "AssistantFunction"][..],
        &["infra/versions.py", "rollback", "AssistantFunction", "--to", "3"],
    ] {
        let (ok, out) = runbook.run(rollback, &[]);
        assert!(!ok && out.contains("a deployment in progress"), "{out}");
    }
    // A prune keeps its newest 2, what an alias serves (the split's version included) and the
    // version live's would roll back to (3).
    let (ok, out) = runbook.run(&["infra/versions.py", "prune", "--keep", "2"], &[]);
    assert!(ok, "{out}");
    let kept: Vec<String> = runbook.world()["functions"]["research-AssistantFunction-X1"]["versions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(kept, ["3", "4", "6", "7"]);
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
