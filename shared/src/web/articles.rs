//! An article's sources (seed 000's `article_sources`): every source of the searches a backend
//! made for one article (`articleId` on a search), de-duplicated by URL, in the order first
//! cited, kept with no expiry like a request's sources. Articles are the signing backend's own:
//! the same id from another principal is another article.
//!
//! One record per (article, URL), written only if absent, so the first citation keeps its title,
//! time and place in the order; a repeat adds nothing. A write that fails is retried, then
//! logged for replay. Bounded both ways: a search adds at most [`PER_SEARCH`] sources, and a
//! listing reads at most [`LISTED`].

use std::cmp::Ordering;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore, key_part, replay};
use crate::core::validate::is_id;
use crate::web::citations::Source;

/// Refuses an `articleId` that is not 1-128 of `A-Za-z0-9_-` (400 `invalid_article_id`).
pub fn validate(id: &str) -> Result<()> {
    if is_id(id, 128) {
        return Ok(());
    }
    Err(Error::invalid("invalid_article_id", "articleId must be 1-128 characters of letters, digits, '-' or '_'"))
}

/// The most sources one search adds to an article.
pub const PER_SEARCH: usize = 50;

/// The most sources an article lists (a bounded read, whatever was written).
pub const LISTED: usize = 1_000;

fn partition(owner: &str, article: &str) -> String {
    format!("ARTICLE#{}#{article}", key_part(owner, 8))
}

/// The records of `sources` cited by `request_id` at `at`: one per URL, keyed by its hash, with
/// the place it was first cited (`firstCited`: time, request, position).
fn rows(owner: &str, article: &str, request_id: &str, sources: &[Source], at: DateTime<Utc>) -> Vec<Record> {
    let pk = partition(owner, article);
    let stamp = at.to_rfc3339_opts(SecondsFormat::Micros, true);
    sources
        .iter()
        .take(PER_SEARCH)
        .enumerate()
        .map(|(i, s)| {
            let mut body = serde_json::to_value(s).expect("a source serialises");
            body["firstCited"] = json!(format!("{stamp}#{request_id}#{i:05}"));
            Record { pk: pk.clone(), sk: format!("URL#{}", key_part(&s.url, 16)), expires_at: None, body }
        })
        .collect()
}

/// Adds `sources` (of request `request_id`) to `owner`'s `article`: URLs it already has are left
/// as they are. Whether all are stored; those that are not are logged for replay.
pub async fn keep(
    records: &dyn RecordStore,
    owner: &str,
    article: &str,
    request_id: &str,
    sources: &[Source],
    at: DateTime<Utc>,
) -> bool {
    let rows = rows(owner, article, request_id, sources, at);
    let (all, now) = (&rows, at.timestamp());
    replay::keep("article sources", &rows, replay::WRITE_TIME, |_| async move {
        futures::future::try_join_all(all.iter().map(|row| records.put_new(row, now))).await.map(|_| ())
    })
    .await
}

/// `owner`'s `article`'s sources in the order first cited (empty when it has none), at most
/// [`LISTED`] of them, and whether there were more (then which are listed is arbitrary).
pub async fn list(
    records: &dyn RecordStore,
    owner: &str,
    article: &str,
    now: DateTime<Utc>,
) -> Result<(Vec<Source>, bool)> {
    let rows = records.latest(&partition(owner, article), "URL#", "URL#~", LISTED + 1, now.timestamp()).await?;
    let truncated = rows.len() > LISTED;
    let first = |r: &Record| r.body.get("firstCited").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut rows: Vec<(String, Record)> = rows.into_iter().take(LISTED).map(|r| (first(&r), r)).collect();
    rows.sort_by(|a, b| match a.0.cmp(&b.0) {
        Ordering::Equal => a.1.sk.cmp(&b.1.sk),
        other => other,
    });
    Ok((rows.into_iter().filter_map(|(_, r)| serde_json::from_value(r.body).ok()).collect(), truncated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::records::LocalRecords;

    fn source(url: &str, title: &str) -> Source {
        Source { url: url.into(), title: Some(title.into()), accessed_at: Utc::now(), snippet: None }
    }

    #[tokio::test]
    async fn an_articles_sources_are_deduplicated_in_the_order_first_cited_and_its_owners_own() {
        let dir = std::env::temp_dir().join(format!("articles-{}", uuid::Uuid::new_v4()));
        let records = LocalRecords::open(&dir).unwrap();
        let t0 = Utc::now();
        let first = [source("https://b.example/1", "B"), source("https://a.example/2", "A")];
        assert!(keep(&records, "backend", "a-1", "req-1", &first, t0).await);
        let second = [source("https://a.example/2", "A again"), source("https://c.example/3", "C")];
        assert!(keep(&records, "backend", "a-1", "req-2", &second, t0 + chrono::Duration::seconds(1)).await);
        let (got, truncated) = list(&records, "backend", "a-1", t0).await.unwrap();
        assert!(!truncated);
        let urls: Vec<&str> = got.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["https://b.example/1", "https://a.example/2", "https://c.example/3"]);
        assert_eq!(got[1].title.as_deref(), Some("A"), "the first citation's title is kept");
        assert!(list(&records, "another-backend", "a-1", t0).await.unwrap().0.is_empty());
        assert!(list(&records, "backend", "a-2", t0).await.unwrap().0.is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
