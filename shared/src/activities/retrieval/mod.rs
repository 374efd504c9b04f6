//! Activity retrieval (seed 004 Requirements 3, 4, 15): a hard filter inside the index, then a
//! soft rank. One code path serves `POST /rag/search` (and the assistant's tool).
//!
//! 1. Hard filter: `status = active`, `startAt > now`, `spotsLeft > 0`, and the request's
//!    radius, type and time window ([`HardFilter`]), counted exactly in the index.
//! 2. At most [`DIRECT_MAX`] pass: they are returned as they are, no embedding (`filter_only`).
//! 3. No `semanticQuery`: nearest first when a location is given (`distance`), else soonest
//!    first (`start_time`).
//! 4. A `semanticQuery`: the query is embedded within a time box; dense hits with cosine
//!    ≥ the model's floor (`RAG_MIN_SIMILARITY` overrides it) and BM25 hits (`hybrid`) are
//!    routed per query ([`routed`]): fused by weighted reciprocal rank (k = 60, the lexical
//!    list weighted `RAG_LEXICAL_WEIGHT` against the dense list's 1) when the query is specific
//!    to BM25, else (a wish) the dense hits alone, by cosine: nothing under the floor.
//!    `RAG_FUSION=rrf` fuses every query; `RAG_FUSION=dense` ranks by meaning alone
//!    (`dense`, the wish's facets included). When the embedder is absent, failing or slow, the lexical
//!    hits are ranked alone (`lexical`, `degraded`). A time the query names ("周五晚上",
//!    [`Wanted`]) lifts candidates starting then by up to [`TIME_BOOST`]; a `userId` lifts them
//!    by MaxSim to the user's interests. The dense channel embeds the query without its time
//!    words ([`without_time`]): the lift and BM25 read them. A wish ranked by meaning is ranked
//!    again by what it wants: its candidates (the same ones) by their cosine plus how well the
//!    facets each has meet the query's desire ([`crate::activities::facets`], read by the
//!    bundled e5 whatever embedder ranks; `RAG_WISH_WEIGHT`); `similarity` stays the cosine.
//!
//! Results of a search with a `semanticQuery` carry `matchReason` ([`crate::activities::reasons`]), the
//! model's within what is left of the 3 s budget, else the template's.
//!
//! `score` is what the results are ordered by (higher first): the RRF sum, the cosine (a
//! routed wish, or any query under `dense`: plus its facets' match, so `similarity` need not
//! fall with the order), the BM25 score,
//! `1 / (1 + distanceKm)`, or `1 / rank` for start-time order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::activities::embedder::{EmbeddingService, Input};
use crate::activities::facets::Facets;
use crate::activities::index::bm25::Bm25;
use crate::activities::index::{HardFilter, Lift, Near, Order, Stored, VectorIndex, one_turn};
use crate::activities::indexing::activity_of;
use crate::activities::interests::{Interests, Personal, Source};
use crate::activities::ranking::{Shaping, distance_km};
use crate::activities::reasons::{self, AGENT, Facts};
use crate::activities::request::{Ranked, SearchRequest, SearchResponse, Strategy};
use crate::activities::settings::Fusion;
use crate::activities::when::Wanted;
use crate::core::clock::Clock;
use crate::core::error::Result;
use crate::core::records::{HOT_PATH, bounded};
use crate::core::retry::RetryPolicy;
use crate::costs::ledger::Ledger;
use crate::llm::ChatModel;
use chrono_tz::Tz;

mod semantic;
mod users;

/// With this many or fewer activities through the hard filter, they are returned directly.
pub const DIRECT_MAX: usize = 3;
/// Seed 004's response-time budget for a search (Requirement 8).
pub const BUDGET: Duration = Duration::from_secs(3);
/// The most a search waits on its cost records (embeddings, match reasons); past it they go to
/// the replay log, so a slow record store never costs the search its budget.
pub const LEDGER_WRITE_TIME: Duration = Duration::from_millis(200);
/// Time kept back from the budget for reading the results and answering.
const BUDGET_MARGIN: Duration = Duration::from_millis(300);
/// How many times `limit` a personalised search ranks before the cut.
const PERSONAL_DEPTH: usize = 3;
/// Above this estimate, `candidates` is the index's estimate, not an exact count.
pub const EXACT_COUNT_MAX: usize = 1000;
/// A distance search ranks at most this many times `limit` matches (see [`Retrieval::nearest`]).
const RING_POOL: usize = 4;
/// Counts a distance search may make to find its circle.
const RING_STEPS: usize = 12;
/// Time a distance search may spend finding its circle; then it ranks the best one found.
const RING_TIME: Duration = Duration::from_millis(500);
/// Candidates each channel contributes to fusion.
const CHANNEL_DEPTH: usize = 100;
/// Score multiplier `1 + TIME_BOOST × fit` for a candidate starting when the query asks
/// ("周五晚上": fit 1 on a Friday evening, 0.5 on a Friday morning): tuned on the dev set.
pub const TIME_BOOST: f32 = 0.5;

/// Who writes `matchReason` (see [`crate::activities::reasons`]).
#[derive(Clone)]
pub enum Reasons {
    Off,
    Template,
    /// One call to `model` per search, at most `timeout` (and what is left of the 3 s), retried
    /// under `retry`, accounted in `ledger`.
    Llm {
        llm: Arc<dyn ChatModel>,
        model: String,
        timeout: Duration,
        ledger: Ledger,
        retry: RetryPolicy,
    },
}

/// How retrieval ranks (`RAG_*`, `ACTIVITY_TIMEZONE`).
#[derive(Debug, Clone, Copy)]
pub struct Ranking {
    /// Cosine floor of a dense match (`RAG_MIN_SIMILARITY`); `None`: the embedder's own.
    pub min_similarity: Option<f32>,
    pub fusion: Fusion,
    /// Weight of the lexical list in the fusion (`RAG_LEXICAL_WEIGHT`; the dense list's is 1).
    pub lexical_weight: f32,
    /// How far a wish's facets move the query vector (`RAG_WISH_WEIGHT`; 0: not at all).
    pub wish_weight: f32,
    /// Nearness, soonness, variety and dislikes ([`Shaping`]).
    pub shaping: Shaping,
    /// Zone of times in queries and template reasons.
    pub zone: Tz,
}

/// Activity retrieval (seed 004): hard filter, hybrid ranking, personalisation, match reasons;
/// and what users tell it (feedback, preferences).
#[derive(Clone)]
pub struct Retrieval {
    index: Arc<dyn VectorIndex>,
    embedding: EmbeddingService,
    bm25: Arc<Bm25>,
    interests: Interests,
    reasons: Reasons,
    ranking: Ranking,
    facets: Facets,
    clock: Arc<dyn Clock>,
}

impl Retrieval {
    /// Retrieval over `index`, embedding queries with `embedding`, personalised by `interests`.
    pub fn new(
        index: Arc<dyn VectorIndex>,
        embedding: EmbeddingService,
        interests: Interests,
        reasons: Reasons,
        ranking: Ranking,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let facets = Facets::new(&embedding, None);
        Self { index, embedding, bm25: Arc::new(Bm25::new()), interests, reasons, ranking, facets, clock }
    }

    /// Who reads the wish facets.
    pub fn facets(&self) -> &Facets {
        &self.facets
    }

    /// The same retrieval with `facets` reading what a wish wants.
    pub fn with_facets(mut self, facets: Facets) -> Self {
        self.facets = facets;
        self
    }

    /// How this retrieval ranks.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// The same retrieval ranking by `ranking`.
    pub fn ranked_by(mut self, ranking: Ranking) -> Self {
        self.ranking = ranking;
        self
    }

    /// The same retrieval without an embedder, for `reason`: lexical ranking only.
    pub fn without_embedder(mut self, reason: &str) -> Self {
        self.embedding = self.embedding.without(reason);
        self
    }

    /// The vector index searched.
    pub fn index(&self) -> &Arc<dyn VectorIndex> {
        &self.index
    }

    /// Runs `req` within seed 004's [`BUDGET`]. Index faults are errors (a 503 in time when the
    /// index hangs); embedder faults degrade to lexical ranking.
    pub async fn search(&self, req: &SearchRequest, request_id: &str) -> Result<SearchResponse> {
        crate::activities::index::bm25::warm();
        bounded(BUDGET, "the search", one_turn(self.search_now(req, request_id))).await
    }

    async fn search_now(&self, req: &SearchRequest, request_id: &str) -> Result<SearchResponse> {
        let started = Instant::now();
        let filter = HardFilter { after: self.clock.now(), near: req.near, kind: req.kind.clone(), window: req.window };
        // Counted exactly only when few: an exact count reads every match.
        let estimate = self.index.estimate(&filter).await?;
        let (candidates, candidates_estimated) =
            if estimate <= EXACT_COUNT_MAX { (self.index.count(&filter).await?, false) } else { (estimate, true) };
        let mut degraded_reason = None;
        // A search needs no record store: interests it cannot read in time are left out.
        let personal = match &req.user_id {
            Some(user) => Some(match bounded(HOT_PATH, "the user's interests", self.interests.vectors(user)).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(error = %e, "interests unavailable; ranked without personalisation");
                    Personal::none(Source::Unavailable)
                }
            }),
            None => None,
        };
        // What the user turned down is never recommended: read that many more to make up for it.
        let turned_down = personal.as_ref().map_or(&[][..], |p| p.turned_down.as_slice());
        let (strategy, mut results) = if candidates <= DIRECT_MAX {
            let stored = self.index.scroll(&filter, Order::StartAt, DIRECT_MAX).await?;
            (Strategy::FilterOnly, self.by_place_or_time(req, stored, turned_down)?)
        } else if let Some(query) = &req.semantic_query {
            self.semantic(req, query, (&filter, candidates), personal.as_ref(), request_id, &mut degraded_reason)
                .await?
        } else if let Some(near) = req.near {
            let wanted = req.limit + turned_down.len();
            let stored = self.nearest(&filter, near, (candidates, candidates_estimated), wanted).await?;
            (Strategy::Distance, self.by_place_or_time(req, stored, turned_down)?)
        } else {
            let stored = self.index.scroll(&filter, Order::StartAt, req.limit + turned_down.len()).await?;
            (Strategy::StartTime, self.by_place_or_time(req, stored, turned_down)?)
        };
        if let Some(query) = &req.semantic_query {
            // The lift as the ranking gave it: no soonness where the query named a time.
            let named = !Wanted::parse(query, self.clock.now(), self.ranking.zone).is_empty();
            let lift = self.lift(req, named);
            self.explain(query, &mut results, &lift, started, request_id).await;
        }
        if degraded_reason.is_some() {
            crate::core::metrics::count("DegradedAnswer", &[], 1.0);
        }
        Ok(SearchResponse {
            results,
            strategy,
            degraded: degraded_reason.is_some(),
            degraded_reason,
            candidates,
            candidates_estimated,
            personalization: personal.map(|p| p.source),
            took_ms: started.elapsed().as_millis() as u64,
        })
    }

    /// The `limit` matches of `filter` nearest `near`, of `candidates` in all (perhaps
    /// `estimated`), reading about as many as the answer needs. Circles grow from the centre,
    /// each sized by the density the last count showed (the first by `candidates`) to hold ~2 ×
    /// `limit`, until one holds `limit`; one holding more than [`RING_POOL`] × `limit` is
    /// narrowed by halving the area between it and the last short one. A count reads only its
    /// circle's matches, so the cost follows the answer, not the collection; at most
    /// [`RING_STEPS`] counts inside [`RING_TIME`], then the best circle found. The index ranks
    /// that circle's matches by distance: every match outside it is farther than all inside, so
    /// the answer is exact.
    async fn nearest(
        &self,
        filter: &HardFilter,
        near: Near,
        (candidates, estimated): (usize, bool),
        limit: usize,
    ) -> Result<Vec<Stored>> {
        let limit = limit.max(1);
        let started = Instant::now();
        let whole = near.radius_km;
        // The largest circle known to hold fewer than `limit`; the smallest known to hold enough
        // (radius, matches).
        let (mut short, mut enough) = (0.0_f64, None::<(f64, usize)>);
        let mut radius = whole * ((2 * limit) as f64 / candidates.max(1) as f64).sqrt();
        let mut narrowed = filter.clone();
        for _ in 0..RING_STEPS {
            if radius >= whole || started.elapsed() > RING_TIME {
                break;
            }
            narrowed.near = Some(Near { radius_km: radius, ..near });
            let held = self.index.count(&narrowed).await?;
            if held >= limit {
                enough = Some((radius, held));
                if held <= RING_POOL * limit {
                    break;
                }
            } else {
                short = radius;
            }
            // The radius of the circle whose area is halfway between `short` and `outer`.
            let halfway = |outer: f64| ((short * short + outer * outer) / 2.0).sqrt();
            radius = match enough {
                Some((r, _)) => halfway(r),
                None => {
                    let grown = radius * ((2 * limit) as f64 / held.max(1) as f64).sqrt().clamp(1.25, 4.0);
                    // Never the whole circle while steps remain: it may hold every match.
                    if grown >= whole { halfway(whole) } else { grown }
                }
            };
        }
        let (radius, held) = match enough {
            Some(found) => found,
            // No smaller circle holds `limit`: the whole one, counted exactly.
            None if estimated => (whole, self.index.count(filter).await?),
            None => (whole, candidates),
        };
        let narrowed = HardFilter { near: Some(Near { radius_km: radius, ..near }), ..filter.clone() };
        // A write between the count and the read may add a few: read a little more than counted.
        self.index.nearest(&narrowed, held + limit, limit).await
    }

    /// Nearest first with a location, else soonest first; top `limit`, none `turned_down`.
    fn by_place_or_time(
        &self,
        req: &SearchRequest,
        stored: Vec<Stored>,
        turned_down: &[String],
    ) -> Result<Vec<Ranked>> {
        let mut ranked = stored
            .iter()
            .filter(|s| {
                s.payload.get("id").and_then(|v| v.as_str()).is_none_or(|id| !turned_down.iter().any(|t| t == id))
            })
            .map(|s| {
                let activity = activity_of(&s.payload)?;
                let distance_km =
                    req.near.map(|n| distance_km(n.lat, n.lng, activity.location.lat, activity.location.lng));
                Ok(Ranked {
                    activity,
                    similarity: None,
                    score: 0.0,
                    distance_km,
                    max_sim: None,
                    boost: None,
                    lift: None,
                    match_reason: None,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if req.near.is_some() {
            ranked.sort_by(|a, b| a.distance_km.partial_cmp(&b.distance_km).unwrap_or(std::cmp::Ordering::Equal));
        } else {
            ranked.sort_by_key(|r| r.activity.start_at);
        }
        ranked.truncate(req.limit);
        for (rank, r) in ranked.iter_mut().enumerate() {
            r.score = match r.distance_km {
                Some(d) => (1.0 / (1.0 + d)) as f32,
                None => 1.0 / (rank + 1) as f32,
            };
        }
        Ok(ranked)
    }

    /// The query embedding service (the assistant's meaning head embeds through it too).
    pub fn embedding(&self) -> &EmbeddingService {
        &self.embedding
    }

    /// Fills in `matchReason`: the model's where it answered in time, else the template's.
    async fn explain(&self, query: &str, results: &mut [Ranked], lift: &Lift, started: Instant, request_id: &str) {
        if results.is_empty() {
            return;
        }
        let now = self.clock.now();
        let facts: Vec<Facts<'_>> = results
            .iter()
            .map(|r| {
                // Lifted: within the scale, where the lift is at least half its largest.
                let hours = (r.activity.start_at - now).num_seconds() as f64 / 3600.0;
                let (near, soon) = match r.lift {
                    Some(_) => lift.terms(r.distance_km, hours),
                    None => (0.0, 0.0),
                };
                Facts {
                    activity: &r.activity,
                    similarity: r.similarity,
                    distance_km: r.distance_km,
                    near: near >= 0.5,
                    soon: soon >= 0.5,
                }
            })
            .collect();
        let mut from_model = match &self.reasons {
            Reasons::Off => return,
            Reasons::Template => Default::default(),
            Reasons::Llm { llm, model, timeout, ledger, retry } => {
                // What is left of seed 004's 3 s, less a margin for the answer to go out.
                let left = BUDGET.saturating_sub(started.elapsed() + BUDGET_MARGIN);
                reasons::from_llm(&**llm, model, ledger, *retry, (*timeout).min(left), query, &facts, request_id).await
            }
        };
        let written: Vec<String> = facts
            .iter()
            .map(|f| {
                from_model.remove(&f.activity.id).unwrap_or_else(|| reasons::template(query, f, self.ranking.zone))
            })
            .collect();
        for (r, reason) in results.iter_mut().zip(written) {
            r.match_reason = Some(reason);
        }
    }

    /// Query-side vectors of `inputs` (a query, stated preferences) within the time box, or why
    /// there are none.
    async fn embed(&self, inputs: &[String], request_id: &str) -> std::result::Result<Vec<Vec<f32>>, String> {
        self.embedding.vectors(AGENT, request_id, inputs, Input::Query).await
    }
}
