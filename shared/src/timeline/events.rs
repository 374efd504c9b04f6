//! What the timeline research streams (seed 003): the agents' answers (milestones, skeleton
//! nodes, node details) and the events of the SSE stream.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::web::citations::Source;

/// A milestone as the milestone agent answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Milestone {
    pub date: String,
    pub title: String,
    pub description: String,
    pub significance: String,
}

/// The milestone agent's whole answer.
#[derive(Debug, Clone, Deserialize)]
pub struct Milestones {
    pub nodes: Vec<Milestone>,
}

/// A node of the skeleton event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkeletonNode {
    pub id: String,
    #[serde(flatten)]
    pub milestone: Milestone,
    pub status: &'static str,
}

/// Seed 003's `NodeDetail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDetail {
    pub key_features: Vec<String>,
    pub impact: String,
    pub key_people: Vec<String>,
    pub context: String,
    #[serde(default)]
    pub sources: Vec<String>,
}

/// One event of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Progress {
        phase: &'static str,
        message: &'static str,
        percent: u8,
    },
    Skeleton {
        nodes: Vec<SkeletonNode>,
        mock: bool,
    },
    /// `sources` carries the node's citations in full (validated, with titles).
    NodeDetail {
        node_id: String,
        details: NodeDetail,
        sources: Vec<Source>,
    },
    /// The end: how many nodes there are, and how many got their detail by the deadline.
    Complete {
        total_nodes: usize,
        detailed_nodes: usize,
    },
    Error {
        message: String,
    },
    /// The research stopped before its end (an addition to seed 003's events): its owner asked
    /// (`abandoned: false`), or nobody read it for `RESEARCH_ABANDON_AFTER_S`.
    Cancelled {
        abandoned: bool,
    },
}

impl Event {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Progress { .. } => "progress",
            Self::Skeleton { .. } => "skeleton",
            Self::NodeDetail { .. } => "node_detail",
            Self::Complete { .. } => "complete",
            Self::Error { .. } => "error",
            Self::Cancelled { .. } => "cancelled",
        }
    }

    pub fn data(&self) -> Value {
        match self {
            Self::Progress { phase, message, percent } => {
                json!({"phase": phase, "message": message, "percent": percent})
            }
            Self::Skeleton { nodes, mock } => {
                let mut v = json!({"nodes": nodes});
                if *mock {
                    v["mock"] = json!(true);
                }
                v
            }
            Self::NodeDetail { node_id, details, sources } => {
                json!({"node_id": node_id, "details": details, "sources": sources})
            }
            Self::Complete { total_nodes, detailed_nodes } => {
                json!({"total_nodes": total_nodes, "detailed_nodes": detailed_nodes})
            }
            Self::Error { message } => json!({"error": "research_failed", "message": message}),
            Self::Cancelled { abandoned: false } => {
                json!({"cancelled": true, "message": "the research was stopped by its owner"})
            }
            Self::Cancelled { abandoned: true } => json!({"cancelled": true, "abandoned": true,
                "message": "nobody read the research for a while, so it stopped; start it with \"background\": true to keep it running unread"}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::progress_message;

    #[test]
    fn events_are_seed_003s() {
        let e = Event::Progress { phase: "skeleton", message: progress_message("skeleton", "zh"), percent: 0 };
        assert_eq!(e.name(), "progress");
        assert!(!e.data().to_string().contains('\n'), "one line of data");
        assert_eq!(e.data(), json!({"message": "正在构建时间线骨架...", "percent": 0, "phase": "skeleton"}));
        let complete = Event::Complete { total_nodes: 20, detailed_nodes: 18 };
        assert_eq!(complete.name(), "complete");
        assert_eq!(complete.data(), json!({"total_nodes": 20, "detailed_nodes": 18}));
        let err = Event::Error { message: "m".into() }.data();
        assert_eq!(err, json!({"error": "research_failed", "message": "m"}));
        assert_eq!(progress_message("detail", "ja"), "タイムラインの詳細を補充中...");
        assert_eq!(progress_message("detail", "en"), "Enriching timeline details...");
    }
}
