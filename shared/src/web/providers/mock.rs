//! Predefined answers for when no upstream can answer: no key configured, or every attempt
//! failed. Every answer is labelled (`"mock": true`, `"dataSource": "模擬資料"` in responses),
//! carries `content` and `citations`, and is never cached.

use serde_json::json;

use super::Answer;
use crate::web::query::{Kind, Query};

/// How mock answers are labelled in responses (seed 000: 標註資料來源為「模擬資料」).
pub const DATA_SOURCE: &str = "模擬資料";

/// A predefined answer of the right shape for `query`.
pub fn answer(query: &Query) -> Answer {
    let t = &query.text;
    let content = match &query.kind {
        Kind::Search => format!(
            "【模擬資料】這是「{t}」的範例搜尋結果，並非即時網路資料。設定 PERPLEXITY_API_KEY 後即可取得真實結果 [1][2]。\n\n\
             [1]: https://example.com/mock/search-overview\n[2]: https://example.org/mock/market-report"
        ),
        Kind::Competitors { .. } => json!({
            "topCompetitors": [{
                "domain": "example.com",
                "title": format!("【模擬資料】{t} 完整指南"),
                "description": "範例競爭對手，並非真實分析。",
                "strengths": ["內容完整", "更新頻繁"],
            }],
            "contentGaps": ["【模擬資料】缺少在地案例"],
            "recommendations": ["【模擬資料】設定 PERPLEXITY_API_KEY 以取得真實分析"],
        })
        .to_string(),
        Kind::Trends { .. } => json!({
            "trends": [{"topic": format!("【模擬資料】{t}"), "description": "範例趨勢，並非即時資料。", "relevance": 0.5}],
            "insights": ["【模擬資料】設定 PERPLEXITY_API_KEY 以取得真實趨勢"],
        })
        .to_string(),
        Kind::Topic { .. } => json!({
            "summary": format!("【模擬資料】「{t}」的範例研究摘要，並非即時網路資料。"),
            "keyPoints": ["【模擬資料】範例重點"],
            "statistics": [{"stat": "【模擬資料】範例統計 42%", "source": "https://example.org/mock/market-report"}],
            "expertOpinions": ["【模擬資料】範例專家意見"],
            "relatedTopics": [format!("{t} 趨勢")],
        })
        .to_string(),
        Kind::Research { topic_count } => json!({
            "query": t.lines().next().unwrap_or_default(),
            "results": (1..=*topic_count).map(|i| json!({
                "title": format!("【模擬資料】トピック{i}"),
                "content": "リサーチ結果のサンプルです。実際の運用では検索プロバイダーまたは Codex CLI の結果が入ります。",
                "source": "https://example.com/mock/search-overview",
            })).collect::<Vec<_>>(),
            "summary": "【模擬資料】サンプルのリサーチ結果です。",
        })
        .to_string(),
    };
    Answer {
        model: "mock".into(),
        content,
        citations: vec![
            "https://example.com/mock/search-overview".into(),
            "https://example.org/mock/market-report".into(),
        ],
        ..Answer::default()
    }
}
