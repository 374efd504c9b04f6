//! Topic history and similarity for the research node (seed 001): which topics a pipeline
//! covered recently, and whether a new title is the same topic.
//!
//! Similarity is Jaccard over tokens: words for space-separated text, character bigrams for
//! runs of CJK characters (Chinese and Japanese titles have no spaces, so the seed's
//! whitespace split would make each of them one word and never match a reworded title).

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::core::error::Result;
use crate::core::records::{Record, RecordStore};
use crate::core::script::is_cjk;

/// Titles more similar than this (or equal, ignoring case) are the same topic.
pub const SIMILARITY_THRESHOLD: f64 = 0.7;

/// The tokens of `text`: lower-case words of letters and digits, and bigrams of CJK runs (a
/// lone CJK character is its own token).
pub fn tokens(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let flush_run = |run: &mut Vec<char>, out: &mut HashSet<String>| {
        match run.len() {
            0 => {}
            1 => {
                out.insert(run[0].to_string());
            }
            _ => out.extend(run.windows(2).map(|w| w.iter().collect::<String>())),
        }
        run.clear();
    };
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_cjk(c) {
            if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
            run.push(c);
        } else {
            flush_run(&mut run, &mut out);
            if c.is_alphanumeric() {
                word.push(c);
            } else if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
        }
    }
    flush_run(&mut run, &mut out);
    if !word.is_empty() {
        out.insert(word);
    }
    out
}

/// Jaccard similarity of the tokens of `a` and `b`, 0 to 1.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (ta, tb) = (tokens(a), tokens(b));
    let union = ta.union(&tb).count();
    if union == 0 {
        return 0.0;
    }
    ta.intersection(&tb).count() as f64 / union as f64
}

/// Whether `title` is a topic already in `previous`.
pub fn is_duplicate(title: &str, previous: &[String]) -> bool {
    let lower = title.to_lowercase();
    previous.iter().any(|p| p.to_lowercase() == lower || similarity(title, p) > SIMILARITY_THRESHOLD)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    date: String,
    topics: Vec<String>,
}

/// Most titles one run records.
pub const MAX_TITLES_PER_ROW: usize = 20;
/// Longest title recorded, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Most runs a run reads back (the newest): the read is bounded whatever the history holds.
pub const MAX_ROWS_READ: usize = 50;

/// A pipeline's history belongs to whoever runs it: the partition is the signed caller's
/// (hashed: no ARN in a key) and the pipeline id, so one caller never reads or writes another's.
fn partition(owner: &str, pipeline: &str) -> String {
    format!("TOPICS#{}#{pipeline}", crate::core::records::key_part(owner, 8))
}

/// Topics `owner`'s `pipeline` recorded in the last `days` days (by UTC date, today
/// included), newest first, from at most [`MAX_ROWS_READ`] runs.
pub async fn recent(
    records: &dyn RecordStore,
    owner: &str,
    pipeline: &str,
    days: u32,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let cutoff = (now - Duration::days(i64::from(days))).format("%Y-%m-%d").to_string();
    let rows = records.latest(&partition(owner, pipeline), &cutoff, "~", MAX_ROWS_READ, now.timestamp()).await?;
    Ok(rows.into_iter().filter_map(|r| serde_json::from_value::<Entry>(r.body).ok()).flat_map(|e| e.topics).collect())
}

/// Records today's `topics` of `owner`'s `pipeline` (at most [`MAX_TITLES_PER_ROW`], each cut
/// to [`MAX_TITLE_CHARS`]), kept for `retention_days` (the store's TTL).
pub async fn save(
    records: &dyn RecordStore,
    owner: &str,
    pipeline: &str,
    request_id: &str,
    topics: &[String],
    retention_days: u32,
    now: DateTime<Utc>,
) -> Result<()> {
    let date = now.format("%Y-%m-%d").to_string();
    let topics = topics.iter().take(MAX_TITLES_PER_ROW).map(|t| t.chars().take(MAX_TITLE_CHARS).collect()).collect();
    records
        .put(&Record {
            pk: partition(owner, pipeline),
            sk: format!("{date}#{request_id}"),
            expires_at: Some((now + Duration::days(i64::from(retention_days))).timestamp()),
            body: serde_json::to_value(Entry { date, topics }).expect("entries serialise"),
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_titles_compare_by_words() {
        assert!(similarity("OpenAI releases GPT-5 today", "openai releases gpt-5 today!") > 0.99);
        assert!(similarity("OpenAI releases GPT-5", "Google ships Gemini 3") < 0.1);
        assert!(is_duplicate("OpenAI Releases GPT-5 Today", &["OpenAI releases GPT-5 today".into()]));
    }

    #[test]
    fn cjk_titles_compare_by_character_bigrams() {
        // The seed's whitespace split scores this pair 1/3; bigrams see the same topic.
        let a = "Google、Gemini Proを一般公開";
        let b = "GoogleがGemini Proを一般公開";
        assert!(similarity(a, b) > SIMILARITY_THRESHOLD, "{}", similarity(a, b));
        assert!(is_duplicate("台湾发布人工智能新规定草案", &["台湾正式发布人工智能新规定草案".into()]));
        assert!(!is_duplicate("台湾发布人工智能新规定草案", &["日本央行宣布加息".into()]));
        assert!(similarity("東京の桜が満開", "大阪の新しい空港") < 0.2);
    }

    #[test]
    fn tokens_split_scripts_and_punctuation() {
        let t = tokens("AI新規制、EU发布");
        for expected in ["ai", "新規", "規制", "eu", "发布"] {
            assert!(t.contains(expected), "{expected} in {t:?}");
        }
    }
}
