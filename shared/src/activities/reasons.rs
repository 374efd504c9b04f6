//! Why each result was recommended (seed 004 Requirement 5): `matchReason`.
//!
//! `RAG_MATCH_REASON=template` (default) writes it from what matched (the query's words found
//! in the activity's vibes, tags, type or title), the similarity, the time (周几 + part of the
//! day in `ACTIVITY_TIMEZONE`) and the distance, with no model. `llm` asks the chat model once
//! per request for all results, in the query's language, from the query, each activity and
//! its similarity (a cost record of agent `rag`); any failure, a reply past the time box, or a
//! result the reply leaves out gets the template reason. `off` omits the field.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{Datelike, Timelike};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::json;

use crate::activities::activity::{self, Activity};
use crate::core::retry::RetryPolicy;
use crate::core::upstream::ProviderError;
use crate::costs::ledger::Ledger;
use crate::llm::ChatModel;
use crate::llm::agent::{self, AgentError, AgentSpec, NoTools};

/// Who pays for users' searches: their query embeddings and these reasons (`indexing` pays for
/// indexing, so users cannot stop it).
pub const AGENT: &str = "rag";

/// What a reason is written from.
pub struct Facts<'a> {
    pub activity: &'a Activity,
    pub similarity: Option<f32>,
    pub distance_km: Option<f64>,
    /// Nearness lifted it (it is within the nearness scale of the searcher).
    pub near: bool,
    /// Soonness lifted it (it starts within the soonness scale).
    pub soon: bool,
}

/// Whether `text` is Chinese or Japanese (CJK reasons), else English.
fn cjk(text: &str) -> bool {
    matches!(crate::core::script::language(text), "zh" | "ja")
}

/// The activity's features that the query names: vibes, tags, type, words of the title.
fn matched(query: &str, a: &Activity) -> Vec<String> {
    let vibe = a.implied_vibe();
    let mut features: Vec<String> = vibe.split('、').map(str::to_owned).collect();
    features.extend(a.tags.iter().cloned());
    features.push(a.kind.clone());
    let query = query.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for f in features {
        if !f.is_empty() && query.contains(&f.to_lowercase()) && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// The reason written without a model.
pub fn template(query: &str, facts: &Facts<'_>, zone: Tz) -> String {
    let a = facts.activity;
    let local = a.start_at.with_timezone(&zone);
    let words = matched(query, a);
    if cjk(query) {
        let mut parts = Vec::new();
        if !words.is_empty() {
            parts.push(format!("你想找「{}」，它正是{}", query, words.join("、")));
        } else if let Some(s) = facts.similarity {
            parts.push(format!("和「{query}」语义相近（相似度 {s:.2}）"));
        } else {
            parts.push(format!("描述与「{query}」相关"));
        }
        let when = format!("{}{}开始", activity::day_of_week(local.weekday()), activity::time_of_day(local.hour()));
        parts.push(if facts.soon { format!("很快就开始：{when}") } else { when });
        if let Some(d) = facts.distance_km {
            parts.push(if facts.near {
                format!("就在附近，离你 {d:.1} 公里")
            } else {
                format!("离你 {d:.1} 公里")
            });
        }
        parts.push(format!("还剩 {} 个名额", a.spots_left()));
        format!("推荐「{}」：{}。", a.title, parts.join("，"))
    } else {
        let mut parts = Vec::new();
        if !words.is_empty() {
            parts.push(format!("it is {} as you asked", words.join(", ")));
        } else if let Some(s) = facts.similarity {
            parts.push(format!("it is close in meaning to \"{query}\" (similarity {s:.2})"));
        } else {
            parts.push(format!("its description relates to \"{query}\""));
        }
        let when = format!("{} at {:02}:{:02}", local.format("%A"), local.hour(), local.minute());
        parts.push(if facts.soon { format!("starts soon, {when}") } else { format!("starts {when}") });
        if let Some(d) = facts.distance_km {
            parts.push(if facts.near { format!("close by, {d:.1} km away") } else { format!("{d:.1} km away") });
        }
        parts.push(format!("{} places left", a.spots_left()));
        format!("Recommended \"{}\": {}.", a.title, parts.join(", "))
    }
}

const INSTRUCTIONS: &str = "You explain activity recommendations. For each activity, write one \
sentence (at most 60 characters in Chinese, 30 words otherwise) in the same language as the user's \
query, saying why it matches the query: name the concrete detail in the activity that fits \
(a word of its description, its vibe, time or place). Do not invent facts. Answer with JSON \
{\"reasons\": [{\"id\": \"...\", \"reason\": \"...\"}]} covering every activity id given.";

#[derive(Deserialize)]
struct Reasons {
    reasons: Vec<Reason>,
}

#[derive(Deserialize)]
struct Reason {
    id: String,
    reason: String,
}

/// The chat model's reasons by activity id; empty on any failure or past `timeout`.
#[allow(clippy::too_many_arguments)]
pub async fn from_llm(
    llm: &dyn ChatModel,
    model: &str,
    ledger: &Ledger,
    retry: RetryPolicy,
    timeout: Duration,
    query: &str,
    facts: &[Facts<'_>],
    request_id: &str,
) -> HashMap<String, String> {
    let mut prompt = format!("用户查询 / query: {query}\n");
    for f in facts {
        let a = f.activity;
        prompt.push_str(&format!(
            "\nid: {}\ntitle: {}\ntype: {}\ntags: {}\ndescription: {}\nsimilarity: {}\n",
            a.id,
            a.title,
            a.kind,
            a.tags.join(", "),
            a.description,
            f.similarity.map_or("-".to_owned(), |s| format!("{s:.2}")),
        ));
    }
    let spec = AgentSpec {
        name: AGENT,
        model,
        instructions: INSTRUCTIONS,
        output: Some(("match_reasons", schema())),
        request_limit: 1,
        tool_limit: 0,
        output_retries: 0,
        deadline: Some(tokio::time::Instant::now() + timeout),
    };
    let check = |_: &Reasons| Ok(());
    match agent::run(llm, ledger, retry, &spec, prompt, &NoTools, check, request_id).await {
        Ok(answer) => answer
            .reasons
            .into_iter()
            .filter(|r| !r.reason.trim().is_empty())
            .map(|r| (r.id, r.reason.trim().to_owned()))
            .collect(),
        Err(AgentError::Model(ProviderError::OutOfTime)) => {
            tracing::warn!(timeout_ms = timeout.as_millis() as u64, "match reasons timed out: template reasons");
            HashMap::new()
        }
        Err(e) => {
            tracing::warn!(error = %e, "match reasons from the model failed: template reasons");
            HashMap::new()
        }
    }
}

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"reasons": {"type": "array", "items": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "reason": {"type": "string"}},
            "required": ["id", "reason"], "additionalProperties": false
        }}},
        "required": ["reasons"], "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beer() -> Activity {
        Activity::from_json(json!({
            "id": "beer", "title": "周五大排档啤酒局", "description": "下班来撸串喝啤酒，人多热闹", "type": "美食",
            "tags": ["夜宵"], "startAt": "2026-11-27T12:30:00Z", "locationName": "上海",
            "location": {"lat": 31.2, "lng": 121.4}, "status": "active",
            "currentParticipants": 2, "maxParticipants": 20
        }))
        .unwrap()
    }

    #[test]
    fn template_reasons_name_the_match_time_distance_and_places() {
        let a = beer();
        let facts = Facts { activity: &a, similarity: Some(0.83), distance_km: Some(1.24), near: false, soon: false };
        let r = template("周五晚上热闹的地方", &facts, chrono_tz::Asia::Shanghai);
        assert_eq!(
            r,
            "推荐「周五大排档啤酒局」：你想找「周五晚上热闹的地方」，它正是热闹，周五晚上开始，离你 1.2 公里，还剩 18 个名额。"
        );
        let r = template("somewhere quiet", &facts, chrono_tz::Asia::Shanghai);
        assert!(
            r.starts_with("Recommended \"周五大排档啤酒局\": it is close in meaning") && r.contains("1.2 km away"),
            "{r}"
        );
        let no_words = Facts { activity: &a, similarity: None, distance_km: None, near: false, soon: false };
        assert!(template("想喝一杯", &no_words, chrono_tz::Asia::Shanghai).contains("描述与「想喝一杯」相关"));
    }

    #[test]
    fn template_reasons_say_when_nearness_or_soonness_lifted_it() {
        let a = beer();
        let lifted = Facts { activity: &a, similarity: Some(0.83), distance_km: Some(0.4), near: true, soon: true };
        let r = template("周五晚上热闹的地方", &lifted, chrono_tz::Asia::Shanghai);
        assert!(r.contains("很快就开始：周五晚上开始") && r.contains("就在附近，离你 0.4 公里"), "{r}");
        let r = template("somewhere lively", &lifted, chrono_tz::Asia::Shanghai);
        assert!(r.contains("starts soon, Friday at 20:30") && r.contains("close by, 0.4 km away"), "{r}");
    }
}
