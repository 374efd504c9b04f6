//! The typed bodies of `POST /search/{method}` (one struct per method, unknown fields
//! refused, the failing field's path in every 400) and what they share once read ([`Raw`]),
//! checked and normalised into a [`Query`].

use serde::Deserialize;
use serde_json::Value;

use super::{Kind, MAX_ASPECTS, MAX_DOMAINS, MAX_QUERY_CHARS, Model, Query, Recency, day, domain_entry};
use crate::core::error::{Error, Result};
use crate::core::json::typed_by;
use crate::core::validate::agent_name;

/// What a body says, method aside: checked and normalised by [`Raw::validate`].
pub(super) struct Raw {
    kind: Kind,
    /// Which field holds the text (`query`, `keyword`, `topic`), for messages.
    text_field: &'static str,
    text: Option<String>,
    dates: Dates,
    common: Common,
}

/// The date filters of the methods that take them.
#[derive(Default)]
struct Dates {
    recency: Option<Recency>,
    published_after: Option<String>,
    published_before: Option<String>,
}

/// The fields every method accepts.
struct Common {
    region: Option<String>,
    model: Option<Model>,
    domains: Vec<String>,
    agent: Option<String>,
    over_budget: Option<OverBudget>,
    article_id: Option<String>,
}

/// What a search does when its agent's daily budget is spent (`overBudget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum OverBudget {
    /// 429 `budget_exceeded` (the default).
    Refuse,
    /// Labelled mock data, with `fallbackReason` `budget_exceeded: ...`.
    Mock,
}

/// The 400 code of a failing field: its own for a value out of a closed set, else
/// `invalid_field` (unknown fields are `unknown_field`).
fn code(path: &str) -> &'static str {
    match path.split(['.', '[']).next().unwrap_or_default() {
        "model" => "unknown_model",
        "recency" => "unknown_recency",
        "timeframe" => "unknown_timeframe",
        "overBudget" => "invalid_over_budget",
        _ => "invalid_field",
    }
}

/// Declares a method's body: its own fields, then the fields every method accepts.
macro_rules! body {
    ($name:ident { $($(#[$attr:meta])* $field:ident: $ty:ty),* $(,)? }) => {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub(super) struct $name {
            $($(#[$attr])* $field: $ty,)*
            region: Option<String>,
            model: Option<Model>,
            #[serde(default)]
            domains: Vec<String>,
            agent: Option<String>,
            over_budget: Option<OverBudget>,
            article_id: Option<String>,
        }

        impl $name {
            /// The fields every method accepts, taken out.
            fn common(&mut self) -> Common {
                Common {
                    region: self.region.take(),
                    model: self.model.take(),
                    domains: std::mem::take(&mut self.domains),
                    agent: self.agent.take(),
                    over_budget: self.over_budget.take(),
                    article_id: self.article_id.take(),
                }
            }
        }
    };
}

body!(Search { query: Option<String>, recency: Option<Recency>, published_after: Option<String>, published_before: Option<String> });
body!(Competitors {
    keyword: Option<String>,
    domain: Option<String>,
    recency: Option<Recency>,
    published_after: Option<String>,
    published_before: Option<String>,
});
body!(Trends { topic: Option<String>, timeframe: Option<Recency> });
body!(Topic {
    topic: Option<String>,
    #[serde(default)]
    aspects: Vec<String>,
    recency: Option<Recency>,
    published_after: Option<String>,
    published_before: Option<String>,
});

impl Search {
    pub fn read(value: &Value) -> Result<Raw> {
        let mut b: Self = typed_by(value, code)?;
        let common = b.common();
        let dates =
            Dates { recency: b.recency, published_after: b.published_after, published_before: b.published_before };
        Ok(Raw { kind: Kind::Search, text_field: "query", text: b.query, dates, common })
    }
}

impl Competitors {
    pub fn read(value: &Value) -> Result<Raw> {
        let mut b: Self = typed_by(value, code)?;
        let common = b.common();
        let kind = Kind::Competitors { domain: b.domain.map(|d| domain_entry("domain", &d)).transpose()? };
        let dates =
            Dates { recency: b.recency, published_after: b.published_after, published_before: b.published_before };
        Ok(Raw { kind, text_field: "keyword", text: b.keyword, dates, common })
    }
}

impl Trends {
    pub fn read(value: &Value) -> Result<Raw> {
        let mut b: Self = typed_by(value, code)?;
        let common = b.common();
        let timeframe = match b.timeframe {
            None => Recency::Week,
            Some(t) => t.as_timeframe()?,
        };
        Ok(Raw {
            kind: Kind::Trends { timeframe },
            text_field: "topic",
            text: b.topic,
            dates: Dates::default(),
            common,
        })
    }
}

impl Topic {
    pub fn read(value: &Value) -> Result<Raw> {
        let mut b: Self = typed_by(value, code)?;
        let common = b.common();
        if b.aspects.len() > MAX_ASPECTS {
            return Err(Error::invalid("invalid_field", format!("aspects has more than {MAX_ASPECTS} entries")));
        }
        let aspects = b
            .aspects
            .into_iter()
            .map(|a| {
                let a = a.trim().to_owned();
                if a.is_empty() || a.chars().count() > 200 {
                    Err(Error::invalid("invalid_aspects", "each aspect must be 1-200 characters"))
                } else {
                    Ok(a)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let dates =
            Dates { recency: b.recency, published_after: b.published_after, published_before: b.published_before };
        Ok(Raw { kind: Kind::Topic { aspects }, text_field: "topic", text: b.topic, dates, common })
    }
}

impl Raw {
    /// The [`Query`] this body asks: text present and bounded, region an ISO code, domains all
    /// include or all exclude, dates real and in order, no recency beside dates.
    pub(super) fn validate(self) -> Result<Query> {
        let text_field = self.text_field;
        let text = self
            .text
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Error::invalid("missing_query", format!("{text_field} is required and must not be empty"))
            })?;
        let chars = text.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(Error::invalid(
                "query_too_long",
                format!("{text_field} has {chars} characters; at most {MAX_QUERY_CHARS} are accepted"),
            ));
        }
        let region = self
            .common
            .region
            .map(|r| {
                let r = r.trim().to_ascii_uppercase();
                if r.len() == 2 && r.bytes().all(|b| b.is_ascii_uppercase()) {
                    Ok(r)
                } else {
                    Err(Error::invalid(
                        "invalid_region",
                        format!("region {r:?} must be an ISO 3166-1 alpha-2 code such as \"TW\""),
                    ))
                }
            })
            .transpose()?;
        let recency = self.dates.recency;
        if self.common.domains.len() > MAX_DOMAINS {
            return Err(Error::invalid("invalid_field", format!("domains has more than {MAX_DOMAINS} entries")));
        }
        let mut domains = self.common.domains.iter().map(|d| domain_entry("domains", d)).collect::<Result<Vec<_>>>()?;
        domains.sort();
        domains.dedup();
        if domains.iter().any(|d| d.starts_with('-')) && domains.iter().any(|d| !d.starts_with('-')) {
            return Err(Error::invalid(
                "invalid_domains",
                "domains must all include or all exclude (\"-example.com\"), not both",
            ));
        }
        let published_after = self.dates.published_after.map(|d| day("publishedAfter", &d)).transpose()?;
        let published_before = self.dates.published_before.map(|d| day("publishedBefore", &d)).transpose()?;
        if let (Some(a), Some(b)) = (published_after, published_before)
            && a > b
        {
            return Err(Error::invalid("invalid_date", "publishedAfter is later than publishedBefore"));
        }
        if recency.is_some() && (published_after.is_some() || published_before.is_some()) {
            return Err(Error::invalid(
                "conflicting_filters",
                "recency cannot be combined with publishedAfter / publishedBefore; use one or the other",
            ));
        }
        let agent = agent_name(self.common.agent.as_deref(), "research")?;
        if let Some(id) = &self.common.article_id {
            crate::web::articles::validate(id)?;
        }
        Ok(Query {
            kind: self.kind,
            text,
            region,
            model: self.common.model.unwrap_or(Model::Sonar),
            recency,
            domains,
            published_after,
            published_before,
            agent,
            mock_over_budget: self.common.over_budget == Some(OverBudget::Mock),
            article_id: self.common.article_id,
        })
    }
}
