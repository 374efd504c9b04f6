//! Usage an app reports for calls it made itself (`POST /costs/usage`, seed 000's own model calls:
//! research, strategy and writing on deepseek-reasoner), so the report shows each agent's model
//! line beside its search line.
//!
//! A report names the agent (one of `AGENTS`), the provider and model, and its tokens, its cost,
//! or both: the cost, when given, is the provider's own figure; otherwise the price table prices
//! the tokens, and a model it does not price is refused (a $0 line would be a lie). It is
//! idempotent by the client's `id`, each backend's own: the first report of an id claims it
//! (`USAGE#<backend>#<id>`, holding who reported it and the cost record) and records the cost
//! under a key derived from the id; a report of an id already claimed stores that same record
//! if it is missing (so a crash between the two leaves nothing owed) and answers with it, and
//! one that differs from it is refused.

use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::core::error::{Error, Result};
use crate::core::json::typed_body;
use crate::core::records::{Record, RecordStore, key_part};
use crate::core::upstream::Usage;
use crate::core::validate::is_id;
use crate::costs::ledger::{CallKind, Charge, CostRecord, CostSource, Ledger, Outcome, RETENTION_DAYS};
use crate::costs::rollup;

/// The largest token count one report may carry.
pub const MAX_TOKENS: u64 = 100_000_000;
/// The largest cost one report may carry, in USD.
pub const MAX_COST_USD: f64 = 1_000.0;

/// The body of `POST /costs/usage`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reported {
    /// The client's id for this call: reporting it again records nothing new.
    pub id: String,
    pub agent: String,
    /// `llm` (default) or `embedding`.
    #[serde(default)]
    pub kind: Option<CallKind>,
    pub provider: String,
    pub model: String,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// What the provider said the call cost; wins over the price table.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Whether `name` may be a provider or model name: 1-100 of `[A-Za-z0-9._:/-]`.
fn is_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 100 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
}

impl Reported {
    /// Parses and validates a request body; `agents` are those a caller may bill (`AGENTS`).
    pub fn parse(body: &[u8], agents: &[String]) -> Result<Self> {
        let mut r: Self = typed_body(body, "invalid_usage")?;
        if !is_id(&r.id, 128) {
            return Err(Error::invalid("invalid_id", "id must be 1-128 characters of A-Z, a-z, 0-9, '-' or '_'"));
        }
        r.agent = r.agent.to_ascii_lowercase();
        if !agents.contains(&r.agent) {
            return Err(Error::invalid(
                "invalid_agent",
                format!("agent {:?} is not one of AGENTS: {}", r.agent, agents.join(", ")),
            ));
        }
        for (field, value) in [("provider", &r.provider), ("model", &r.model)] {
            if !is_name(value) {
                return Err(Error::invalid(
                    "invalid_usage",
                    format!("{field} must be 1-100 characters of A-Z, a-z, 0-9, '.', '_', ':', '/' or '-'"),
                ));
            }
        }
        r.provider = r.provider.to_ascii_lowercase();
        match r.kind {
            None | Some(CallKind::Llm) | Some(CallKind::Embedding) => {}
            Some(CallKind::Search) => {
                return Err(Error::invalid(
                    "invalid_usage",
                    "kind must be llm or embedding: searches go through /search",
                ));
            }
        }
        if r.input_tokens > MAX_TOKENS || r.output_tokens > MAX_TOKENS {
            return Err(Error::invalid("invalid_usage", format!("token counts must be at most {MAX_TOKENS}")));
        }
        if r.cost_usd.is_some_and(|c| !(c.is_finite() && (0.0..=MAX_COST_USD).contains(&c))) {
            return Err(Error::invalid("invalid_usage", format!("costUsd must be from 0 to {MAX_COST_USD}")));
        }
        if r.cost_usd.is_none() && r.input_tokens + r.output_tokens == 0 {
            return Err(Error::invalid("invalid_usage", "give the call's tokens, its costUsd, or both"));
        }
        Ok(r)
    }

    /// The cost record of this report, priced by `ledger` and stamped now.
    fn bill(&self, ledger: &Ledger) -> Result<CostRecord> {
        let usage = Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            provider_cost_usd: self.cost_usd,
            ..Usage::default()
        };
        let cost = ledger.bill(&Charge {
            request_id: &self.id,
            agent: &self.agent,
            kind: self.kind.unwrap_or(CallKind::Llm),
            provider: &self.provider,
            model: &self.model,
            usage: &usage,
            outcome: Outcome::Live,
            saved_usd: 0.0,
            upstream_id: None,
        });
        if cost.cost_usd > MAX_COST_USD {
            return Err(Error::invalid(
                "invalid_usage",
                format!("the call is priced at {} USD; one report may carry at most {MAX_COST_USD}", cost.cost_usd),
            ));
        }
        if cost.cost_source == CostSource::Unpriced {
            return Err(Error::invalid(
                "unpriced_model",
                format!(
                    "{}/{} is not in the price table: report its costUsd, or price it (PRICES)",
                    self.provider, self.model
                ),
            ));
        }
        Ok(cost)
    }

    /// Whether `stored` records this same report (all but its price and time).
    fn same_as(&self, stored: &CostRecord) -> bool {
        stored.agent == self.agent
            && stored.kind == self.kind.unwrap_or(CallKind::Llm)
            && stored.provider == self.provider
            && stored.model == self.model
            && stored.input_tokens == self.input_tokens
            && stored.output_tokens == self.output_tokens
            && self.cost_usd.is_none_or(|c| c == stored.cost_usd)
    }
}

/// The key of the claim of `owner`'s report `id`: ids are each backend's own.
pub fn claim_key(owner: &str, id: &str) -> (String, &'static str) {
    (format!("USAGE#{}#{id}", key_part(owner, 8)), "usage")
}

/// The id `owner`'s report `id` is stored under: the same for every repeat of it.
fn record_id(owner: &str, id: &str) -> u128 {
    let digest = Sha256::digest(format!("usage:{}:{id}", key_part(owner, 8)).as_bytes());
    u128::from_be_bytes(digest[..16].try_into().expect("16 bytes"))
}

/// The cost record a claim holds.
fn claimed(record: Record, id: &str) -> Result<CostRecord> {
    serde_json::from_value(record.body["cost"].clone())
        .map_err(|e| Error::Store(format!("the claim of usage {id} is unreadable: {e}")))
}

/// Records `owner`'s `report` once: `(201, body)` the first time, `(200, body)` for a repeat,
/// 400 `id_reused` for a different report under an id already used. The claim (who reported
/// it, and its cost record) is stored first, then the cost record, under a key derived from
/// the id; a repeat stores the record if it is missing (a crash between the two) and otherwise
/// writes nothing. A store fault is a 503: the client reports again.
pub async fn record(
    ledger: &Ledger,
    records: &dyn RecordStore,
    owner: &str,
    report: &Reported,
) -> Result<(u16, Value)> {
    let (pk, sk) = claim_key(owner, &report.id);
    let now = ledger.now();
    let existing = records.get(&pk, sk, now.timestamp()).await?;
    let (cost, repeated) = match existing {
        Some(claim) => (claimed(claim, &report.id)?, true),
        None => {
            let cost = report.bill(ledger)?;
            let claim = Record {
                pk: pk.clone(),
                sk: sk.into(),
                expires_at: Some(now.timestamp() + RETENTION_DAYS * 86_400),
                body: json!({"reportedBy": owner, "cost": cost}),
            };
            if records.put_new(&claim, now.timestamp()).await? {
                (cost, false)
            } else {
                // Another report of this id claimed it first.
                let claim = records.get(&pk, sk, now.timestamp()).await?.ok_or_else(|| {
                    Error::Store(format!("usage {} is claimed but its claim could not be read", report.id))
                })?;
                (claimed(claim, &report.id)?, true)
            }
        }
    };
    if repeated && !report.same_as(&cost) {
        return Err(Error::invalid(
            "id_reused",
            format!("usage {} was already reported with other values; use a new id", report.id),
        ));
    }
    let written = ledger.record_once(&cost, record_id(owner, &report.id)).await?;
    let day = cost.timestamp.date_naive();
    if written && repeated && rollup::Day::closed(day, now) {
        rollup::revise(records, day).await?;
    }
    Ok(if repeated { (200, answer(&cost, true)) } else { (201, answer(&cost, false)) })
}

fn answer(cost: &CostRecord, repeated: bool) -> Value {
    json!({
        "id": cost.request_id,
        "repeated": repeated,
        "agent": cost.agent,
        "kind": cost.kind,
        "provider": cost.provider,
        "model": cost.model,
        "inputTokens": cost.input_tokens,
        "outputTokens": cost.output_tokens,
        "costUsd": cost.cost_usd,
        "costSource": cost.cost_source,
        "recordedAt": crate::core::time::format(&cost.timestamp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agents() -> Vec<String> {
        ["research", "writing"].map(String::from).to_vec()
    }

    #[test]
    fn a_report_is_validated_field_by_field() {
        let ok = json!({"id": "call-1", "agent": "Research", "provider": "DeepSeek", "model": "deepseek-reasoner",
                        "inputTokens": 1200, "outputTokens": 800});
        let r = Reported::parse(ok.to_string().as_bytes(), &agents()).unwrap();
        assert_eq!((r.agent.as_str(), r.provider.as_str(), r.kind), ("research", "deepseek", None));
        for (change, code) in [
            (json!({"id": "a b"}), "invalid_id"),
            (json!({"agent": "marketing"}), "invalid_agent"),
            (json!({"model": "deep seek"}), "invalid_usage"),
            (json!({"kind": "search"}), "invalid_usage"),
            (json!({"kind": "video"}), "invalid_usage"),
            (json!({"inputTokens": MAX_TOKENS + 1}), "invalid_usage"),
            (json!({"inputTokens": -1}), "invalid_usage"),
            (json!({"costUsd": -0.5}), "invalid_usage"),
            (json!({"inputTokens": 0, "outputTokens": 0}), "invalid_usage"),
            (json!({"tokens": 5}), "unknown_field"),
        ] {
            let mut body = ok.clone();
            body.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
            let e = Reported::parse(body.to_string().as_bytes(), &agents()).unwrap_err();
            assert_eq!((e.status(), e.code()), (400, code), "{change}: {e}");
        }
        let mut missing = ok.clone();
        missing.as_object_mut().unwrap().remove("model");
        assert!(Reported::parse(missing.to_string().as_bytes(), &agents()).unwrap_err().to_string().contains("model"));
    }

    #[test]
    fn repeats_of_an_id_share_one_record_id_and_each_backend_has_its_own_ids() {
        assert_eq!(record_id("backend", "a"), record_id("backend", "a"));
        assert_ne!(record_id("backend", "a"), record_id("backend", "b"));
        assert_ne!(record_id("backend", "a"), record_id("other", "a"));
        assert_ne!(claim_key("backend", "a"), claim_key("other", "a"));
    }
}
