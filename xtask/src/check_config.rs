//! `cargo xtask check-config [--template FILE] [Name=Value ...]`: finds bad configuration before
//! a deploy. The template is read as CloudFormation would (its parameters' defaults with the
//! given overrides, the same syntax as `sam deploy --parameter-overrides`), each function's
//! environment is worked out (the globals, then its own; `!Ref`, `!If`, `!Sub` and the
//! conditions evaluated) and read by the same `compose::Config` the function reads at start (each
//! capability's settings checking its own variables).
//! What only the deploy can know (a secret resolved from Secrets Manager, a resource's name or
//! ARN) stands in as a placeholder. Prints one line per function; exits 1 if any is misconfigured.

use std::collections::BTreeMap;

use serde_yaml::Value;
use serde_yaml::value::TaggedValue;

/// What stands in for a value only the deploy knows (a secret, a resource's name): long enough
/// for any minimum, plain enough for any name.
const DEPLOY_TIME: &str = "resolved-at-deploy-time-0123456789abcdef";

/// The template's parameters and conditions, evaluated.
struct Stack {
    parameters: BTreeMap<String, String>,
    conditions: BTreeMap<String, Value>,
}

impl Stack {
    fn read(template: &Value, overrides: &BTreeMap<String, String>) -> crate::Result<Self> {
        let mut parameters = BTreeMap::new();
        let mut required = Vec::new();
        if let Some(map) = template.get("Parameters").and_then(Value::as_mapping) {
            for (name, spec) in map {
                let name = name.as_str().unwrap_or_default().to_owned();
                match spec.get("Default") {
                    Some(default) => parameters.insert(name, scalar(default)),
                    None => {
                        required.push(name.clone());
                        parameters.insert(name, String::new())
                    }
                };
            }
        }
        for (name, value) in overrides {
            if !parameters.contains_key(name) {
                return Err(format!("{name}: no such parameter in the template").into());
            }
            parameters.insert(name.clone(), value.clone());
        }
        required.retain(|name| !overrides.contains_key(name));
        if !required.is_empty() {
            return Err(format!("parameters without a default need a value: {}", required.join(", ")).into());
        }
        let conditions = template
            .get("Conditions")
            .and_then(Value::as_mapping)
            .map(|m| m.iter().map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), v.clone())).collect())
            .unwrap_or_default();
        Ok(Self { parameters, conditions })
    }

    /// `value` with its intrinsic functions evaluated; `None` for `AWS::NoValue`.
    fn eval(&self, value: &Value) -> Option<String> {
        match value {
            Value::Tagged(tagged) => self.intrinsic(tagged),
            other => Some(scalar(other)),
        }
    }

    fn intrinsic(&self, tagged: &TaggedValue) -> Option<String> {
        let args = &tagged.value;
        match tagged.tag.to_string().as_str() {
            "!Ref" => match args.as_str().unwrap_or_default() {
                "AWS::NoValue" => None,
                name => Some(self.parameters.get(name).cloned().unwrap_or_else(|| DEPLOY_TIME.to_owned())),
            },
            "!If" => {
                let list = args.as_sequence()?;
                let branch = if self.condition(list.first()?.as_str()?) { list.get(1)? } else { list.get(2)? };
                self.eval(branch)
            }
            "!Sub" => {
                let text = args.as_str().or_else(|| args.as_sequence()?.first()?.as_str())?;
                if text.contains("{{resolve:") {
                    return Some(DEPLOY_TIME.to_owned());
                }
                let mut out = text.to_owned();
                for (name, value) in &self.parameters {
                    out = out.replace(&format!("${{{name}}}"), value);
                }
                Some(out)
            }
            _ => Some(DEPLOY_TIME.to_owned()),
        }
    }

    fn condition(&self, name: &str) -> bool {
        self.conditions.get(name).is_some_and(|c| self.truth(c))
    }

    fn truth(&self, value: &Value) -> bool {
        let Value::Tagged(tagged) = value else { return false };
        let args = tagged.value.as_sequence();
        let arg = |i: usize| args.and_then(|a| a.get(i));
        match tagged.tag.to_string().as_str() {
            "!Not" => !arg(0).is_some_and(|v| self.truth(v)),
            "!Equals" => {
                let side = |i| arg(i).and_then(|v| self.eval(v)).unwrap_or_default();
                side(0) == side(1)
            }
            "!Or" => args.is_some_and(|a| a.iter().any(|v| self.truth(v))),
            "!And" => args.is_some_and(|a| a.iter().all(|v| self.truth(v))),
            "!Condition" => self.condition(tagged.value.as_str().unwrap_or_default()),
            _ => false,
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// Each function of `template` (its binary's name) and its environment under `overrides`.
pub fn environments(
    template: &str,
    overrides: &BTreeMap<String, String>,
) -> crate::Result<Vec<(String, BTreeMap<String, String>)>> {
    let template: Value = serde_yaml::from_str(template)?;
    let stack = Stack::read(&template, overrides)?;
    // The template's own rules, as CloudFormation checks them before it changes anything.
    for (name, rule) in template.get("Rules").and_then(Value::as_mapping).into_iter().flatten() {
        if rule.get("RuleCondition").is_some_and(|c| !stack.truth(c)) {
            continue;
        }
        for assertion in rule.get("Assertions").and_then(Value::as_sequence).into_iter().flatten() {
            if !assertion.get("Assert").is_some_and(|a| stack.truth(a)) {
                let why = assertion.get("AssertDescription").map(scalar).unwrap_or_default();
                return Err(format!("rule {}: {why}", name.as_str().unwrap_or_default()).into());
            }
        }
    }
    // What CloudFormation cannot compare: users' research streams stay below the function's
    // reserved executions, so the backend's routes always find one.
    let number = |name: &str| stack.parameters.get(name).and_then(|v| v.parse::<u64>().ok());
    if let (Some(reserved @ 1..), Some(users)) = (number("ResearchConcurrency"), number("ResearchUsersStreams"))
        && users >= reserved
    {
        return Err(format!(
            "ResearchUsersStreams ({users}) must stay below ResearchConcurrency ({reserved}): the backend's \
             research routes need executions of their own"
        )
        .into());
    }
    let variables = |function: &Value| -> BTreeMap<String, String> {
        let map = function.get("Environment").and_then(|e| e.get("Variables")).and_then(Value::as_mapping);
        map.into_iter().flatten().filter_map(|(k, v)| Some((k.as_str()?.to_owned(), stack.eval(v)?))).collect()
    };
    let globals = template.get("Globals").and_then(|g| g.get("Function")).map(variables).unwrap_or_default();
    let mut out = Vec::new();
    for (_, resource) in template.get("Resources").and_then(Value::as_mapping).into_iter().flatten() {
        if resource.get("Type").and_then(Value::as_str) != Some("AWS::Serverless::Function") {
            continue;
        }
        let binary = resource["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap_or("?").to_owned();
        let mut env = globals.clone();
        if let Some(properties) = resource.get("Properties") {
            env.extend(variables(properties));
        }
        out.push((binary, env));
    }
    Ok(out)
}

/// `cargo xtask check-config`.
pub fn run(args: &[String]) -> crate::Result {
    let mut template = crate::root().join("template.yaml");
    let mut overrides = BTreeMap::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--template" {
            template = args.next().ok_or("--template needs a file")?.into();
        } else {
            let (name, value) = arg.split_once('=').ok_or_else(|| format!("{arg}: expected Name=Value"))?;
            overrides.insert(name.to_owned(), value.to_owned());
        }
    }
    let text = std::fs::read_to_string(&template).map_err(|e| format!("{}: {e}", template.display()))?;
    let mut bad = 0;
    for (function, env) in environments(&text, &overrides)? {
        match shared::compose::Config::from_lookup(|key| env.get(key).cloned()) {
            Ok(_) => println!("{function}: ok ({} variables)", env.len()),
            Err(e) => {
                bad += 1;
                println!("{function}: misconfigured: {e}");
            }
        }
    }
    if bad > 0 {
        return Err(format!("{bad} function(s) misconfigured").into());
    }
    println!("every function's configuration reads");
    if let Some(warning) = readers_key(&overrides) {
        println!("warning: {warning}");
    }
    Ok(())
}

/// What is wrong with the Qdrant keys `overrides` give the functions that only read the index,
/// if anything: with a read-write key and no read-only one, they would read the read-write key.
fn readers_key(overrides: &BTreeMap<String, String>) -> Option<String> {
    let given = |name: &str| overrides.get(name).is_some_and(|v| !v.trim().is_empty());
    (given("QdrantApiKeySecret") && !given("QdrantReadOnlyApiKeySecret")).then(|| {
        "rag-search and the assistant only read the index but would get the read-write Qdrant key: \
         create the server's read-only key's secret and pass QdrantReadOnlyApiKeySecret (docs/deploy.md)"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deploy guide's required answers.
    fn answers(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        [
            ("QdrantUrl", "https://xyz.cloud.qdrant.io:6334"),
            ("JwtIssuer", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc"),
            ("JwtAudience", "web-app"),
        ]
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn template() -> String {
        std::fs::read_to_string(crate::root().join("template.yaml")).unwrap()
    }

    fn misconfigured(overrides: &BTreeMap<String, String>) -> Vec<(String, String)> {
        environments(&template(), overrides)
            .unwrap()
            .into_iter()
            .filter_map(|(f, env)| {
                shared::compose::Config::from_lookup(|k| env.get(k).cloned()).err().map(|e| (f, e.to_string()))
            })
            .collect()
    }

    // Issue 43: the deploy guide's `cargo xtask check-config` line, as written, passes.
    #[test]
    fn the_deploy_guides_check_passes_as_written() {
        let guide = std::fs::read_to_string(crate::root().join("docs/deploy.md")).unwrap();
        let line = guide.lines().find_map(|l| l.strip_prefix("cargo xtask check-config ")).expect("the guide runs it");
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        run(&args).expect("the guide's check passes");
        let given: BTreeMap<String, String> =
            args.iter().filter_map(|a| a.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
        assert_eq!(misconfigured(&given), []);
        // Issue 62 item 4: the guide's path gives the index's readers the read-only key.
        assert_eq!(given.get("QdrantReadOnlyApiKeySecret").map(String::as_str), Some("research/qdrant-read"));
        assert_eq!(readers_key(&given), None);
        let read_write_only = answers(&[("QdrantApiKeySecret", "research/qdrant")]);
        assert!(readers_key(&read_write_only).is_some_and(|w| w.contains("QdrantReadOnlyApiKeySecret")));
    }

    // Issue 43: the template's defaults with the deploy guide's answers read for every function,
    // each with the environment the template gives it.
    #[test]
    fn the_template_with_the_guides_answers_reads_for_every_function() {
        let envs = environments(&template(), &answers(&[])).unwrap();
        let names: Vec<&str> = envs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            names,
            ["search", "cost-report", "research", "index-activity", "rag-search", "assistant", "backfill"]
        );
        assert_eq!(misconfigured(&answers(&[])), []);
        let rag = &envs.iter().find(|(f, _)| f == "rag-search").unwrap().1;
        assert_eq!(rag.get("QDRANT_URL").map(String::as_str), Some("https://xyz.cloud.qdrant.io:6334"));
        assert_eq!(rag.get("QDRANT_READ_ONLY").map(String::as_str), Some("false"), "no read-only key given");
        assert!(!rag.contains_key("QDRANT_API_KEY_SECRET"), "no key secret: AWS::NoValue");
        let with_key = environments(&template(), &answers(&[("QdrantReadOnlyApiKeySecret", "ro")])).unwrap();
        let rag = &with_key.iter().find(|(f, _)| f == "rag-search").unwrap().1;
        assert_eq!(rag.get("QDRANT_READ_ONLY").map(String::as_str), Some("true"));
        assert_eq!(rag.get("QDRANT_API_KEY_SECRET").map(String::as_str), Some("ro"), "read at run time");
        // No function is given a key's value: every key is read from Secrets Manager at run time.
        for (function, env) in &with_key {
            assert!(env.keys().all(|k| !k.ends_with("_API_KEY") && k != "STREAM_TOKEN_KEY"), "{function}: {env:?}");
        }
    }

    // Issue 43: a bad parameter is found before the deploy, naming the variable; a missing
    // required one and an unknown one are refused.
    #[test]
    fn bad_parameters_are_found_before_a_deploy() {
        let bad = misconfigured(&answers(&[("AssistantTools", r#"[{"name": "createDraft"}]"#)]));
        assert!(bad.iter().any(|(f, e)| f == "assistant" && e.contains("ASSISTANT_TOOLS")), "{bad:?}");
        let bad = misconfigured(&answers(&[("Budgets", "research=lots")]));
        assert_eq!(bad.len(), 7, "every function reads BUDGETS: {bad:?}");
        assert!(bad.iter().all(|(_, e)| e.contains("BUDGETS")), "{bad:?}");
        let missing = environments(&template(), &BTreeMap::new()).err().unwrap().to_string();
        assert!(missing.contains("QdrantUrl") && missing.contains("JwtIssuer"), "{missing}");
        let unknown = environments(&template(), &answers(&[("QdrantURL", "x")])).err().unwrap().to_string();
        assert!(unknown.contains("QdrantURL"), "{unknown}");
        let starved = environments(&template(), &answers(&[("ResearchConcurrency", "10")])).err().unwrap().to_string();
        assert!(starved.contains("ResearchUsersStreams (40) must stay below ResearchConcurrency (10)"), "{starved}");
        let rule = environments(&template(), &answers(&[("Embedder", "api")])).err().unwrap().to_string();
        assert!(rule.contains("Embedder=api needs EmbeddingApiKeySecret"), "{rule}");
        let envs = environments(&template(), &answers(&[("Embedder", "api"), ("EmbeddingApiKeySecret", "k")])).unwrap();
        let rag = &envs.iter().find(|(f, _)| f == "rag-search").unwrap().1;
        assert_eq!(rag.get("EMBEDDING_PROVIDER").map(String::as_str), Some("openai"));
        assert_eq!(rag.get("EMBEDDING_MODEL").map(String::as_str), Some("embedding-3"));
        // Issue 63: the bundled model reads the wish facets beside the API embedder when asked.
        assert_eq!((rag.get("WISH_FACETS").map(String::as_str), rag.get("EMBEDDING_MODEL_PATH")), (Some("off"), None));
        let beside = [("Embedder", "api"), ("EmbeddingApiKeySecret", "k"), ("WishFacets", "bundled")];
        let envs = environments(&template(), &answers(&beside)).unwrap();
        let rag = &envs.iter().find(|(f, _)| f == "rag-search").unwrap().1;
        assert_eq!(rag.get("WISH_FACETS").map(String::as_str), Some("bundled"));
        assert_eq!(rag.get("EMBEDDING_MODEL_PATH").map(String::as_str), Some("/opt/models/e5-small-q4.bin"));
        // Issue 60 item 2: a model the table lacks is found before the deploy, naming PRICES;
        // priced there it passes, and a bad price is refused naming the variable too.
        let other = [("LlmApiKeySecret", "research/llm"), ("LlmProvider", "openai"), ("LlmModel", "gpt-9")];
        let bad = misconfigured(&answers(&other));
        let readers: Vec<&str> = bad.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(readers, ["research", "rag-search", "assistant"], "the chat model's functions: {bad:?}");
        assert!(bad.iter().all(|(_, e)| e.contains("\"openai/gpt-9\"") && e.contains("PRICES")), "{bad:?}");
        let priced = r#"{"openai/gpt-9": {"input_per_1k_usd": 0.01, "output_per_1k_usd": 0.03}}"#;
        assert_eq!(misconfigured(&answers(&[other[0], other[1], other[2], ("Prices", priced)])), []);
        let per_million = r#"{"openai/gpt-9": {"input_per_1k_usd": 10, "output_per_1k_usd": 30}}"#;
        let bad = misconfigured(&answers(&[("Prices", per_million)]));
        assert_eq!(bad.len(), 7, "every function reads PRICES: {bad:?}");
        assert!(bad.iter().all(|(_, e)| e.contains("PRICES: openai/gpt-9 input_per_1k_usd is 10")), "{bad:?}");
    }

    // Issue 53 item 1: route throttles count every caller together (and AWS does not say the
    // JWT authorizer's refusals are kept out of the count), so they are sized for availability:
    // every route that may spend has the paid throttle, at or above what the spending functions'
    // reserved concurrency serves at 100 ms answers (a cache hit), with a burst of twice that, so
    // a few users at once, or a dozen anonymous requests a second, never close a route for
    // everyone (before: 5 a second, burst 10). Each user's quota and budget bound spend inside.
    #[test]
    fn route_throttles_are_sized_for_availability() {
        let template: Value = serde_yaml::from_str(&template()).unwrap();
        let default = |name: &str| -> f64 {
            scalar(&template["Parameters"][name]["Default"]).parse().unwrap_or_else(|_| panic!("{name}"))
        };
        let (rate, burst) = (default("PaidRateLimit"), default("PaidBurstLimit"));
        assert!(rate >= default("SpendingConcurrency") / 0.1, "PaidRateLimit {rate}");
        assert!(burst >= 2.0 * rate, "PaidBurstLimit {burst}");
        assert!(default("ApiRateLimit") >= rate, "the free routes' throttle is no lower");
        let api = &template["Resources"]["HttpApi"]["Properties"];
        let routes = api["RouteSettings"].as_mapping().unwrap();
        let spending = ["/search", "/tools/", "/me/tools/", "/research", "/chat"];
        let events =
            template["Resources"].as_mapping().unwrap().values().filter_map(|r| r["Properties"]["Events"].as_mapping());
        let mut checked = 0;
        for event in events.flat_map(|e| e.values()) {
            let props = &event["Properties"];
            let (Some(path), Some(method)) = (props["Path"].as_str(), props["Method"].as_str()) else { continue };
            if method.eq_ignore_ascii_case("post")
                && spending.iter().any(|s| path.starts_with(s) || path.starts_with(&format!("/api{s}")))
            {
                let key = format!("{} {path}", method.to_ascii_uppercase());
                let set = routes.get(Value::from(key.clone())).unwrap_or_else(|| panic!("{key} has no route throttle"));
                let reference = match &set["ThrottlingRateLimit"] {
                    Value::Tagged(t) => format!("{} {}", t.tag, scalar(&t.value)),
                    other => scalar(other),
                };
                assert_eq!(reference, "!Ref PaidRateLimit", "{key}");
                checked += 1;
            }
        }
        assert!(checked >= 8, "read {checked} spending routes from the template");
    }

    // Issue 53 item 4: a paid model the price table does not price is refused before a deploy
    // by every function that would call it (at start-up too: the same `Config::read`), naming
    // its variable; the template's default model is priced.
    #[test]
    fn an_unpriced_model_is_refused_before_a_deploy() {
        assert_eq!(misconfigured(&answers(&[("LlmApiKeySecret", "k")])), []);
        let bad = misconfigured(&answers(&[("LlmApiKeySecret", "k"), ("LlmModel", "anthropic/claude-opus-9")]));
        let functions: Vec<&str> = bad.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(functions, ["research", "rag-search", "assistant"], "{bad:?}");
        for (_, e) in &bad {
            assert!(e.contains("LLM_") && e.contains("\"openrouter/anthropic/claude-opus-9\""), "{e}");
        }
    }
}

#[cfg(test)]
mod drift {
    use super::*;

    // Issue 43: docs/configuration.md names, for each variable, the functions that read it; every
    // variable the template sets on one function (beyond the globals every function gets) is
    // listed with that function (or "all").
    #[test]
    fn configuration_md_names_the_functions_the_template_configures() {
        let root = crate::root();
        let template = std::fs::read_to_string(root.join("template.yaml")).unwrap();
        let docs = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap();
        // Every key's secret named, so that each *_SECRET variable is set where it is read.
        let keys = ["Perplexity", "Tavily", "Llm", "Embedding", "Qdrant", "QdrantReadOnly"]
            .map(|k| format!("{k}ApiKeySecret"));
        let answers: BTreeMap<String, String> =
            [("QdrantUrl", "https://q.example.com:6334"), ("JwtIssuer", "https://i.example.com"), ("JwtAudience", "a")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .chain(keys.into_iter().chain(["AppToolTokenSecret".to_owned()]).map(|k| (k, "research/k".to_owned())))
                .collect();
        let envs = environments(&template, &answers).unwrap();
        let global: Vec<&String> =
            envs[0].1.keys().filter(|k| envs.iter().all(|(_, env)| env.contains_key(*k))).collect();
        let mut problems = Vec::new();
        for (function, env) in &envs {
            for var in env.keys().filter(|k| !global.contains(k)) {
                let row = docs.lines().find(|l| l.starts_with(&format!("| `{var}` |")));
                let Some(row) = row else {
                    problems.push(format!("{var} (set on {function}): no row in docs/configuration.md"));
                    continue;
                };
                let readers = row.split(" | ").nth(2).unwrap_or_default();
                let named = readers.split([',', ' ']).any(|w| w == function);
                if !named && !readers.contains("all") {
                    problems.push(format!("{var}: the template sets it on {function}; the docs say {readers:?}"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
