//! The ranking maths of activity retrieval, free of any store: weighted reciprocal rank
//! fusion, cosine similarity, MaxSim against a user's interest vectors and its bounded boost,
//! the push-down of what resembles a user's dislikes, maximal marginal relevance over
//! near-copies, and great-circle distance.

use std::collections::HashMap;

use uuid::Uuid;

use crate::activities::index::Hit;

/// Reciprocal rank fusion constant.
const RRF_K: f32 = 60.0;
/// The largest boost MaxSim gives a score (20 %).
pub const MAX_BOOST: f32 = 0.2;

/// Weighted reciprocal rank fusion of ranked lists: Σ weight / (k + rank), best first.
pub fn rrf(lists: &[(&[Hit], f32)]) -> Vec<Hit> {
    let mut scores: HashMap<Uuid, f32> = HashMap::new();
    let mut first_seen: Vec<Uuid> = Vec::new();
    for (list, weight) in lists {
        for (rank, hit) in list.iter().enumerate() {
            let entry = scores.entry(hit.id).or_insert_with(|| {
                first_seen.push(hit.id);
                0.0
            });
            *entry += weight / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<Hit> = first_seen.into_iter().map(|id| Hit { id, score: scores[&id] }).collect();
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// Specificity from which a query is fused with its lexical hits ([`specificity`]).
pub const SPECIFIC: f32 = 0.8;

/// How specific a query is to the lexical channel: its best BM25 score (`top`, IDF applied)
/// per query term (`terms`), over the largest IDF a term can have among `documents` (a term in
/// one). Names, places and rare terms score above 1 on the quality sets; descriptions of a
/// wish, whose words are common or absent, below 0.6.
pub fn specificity(top: f32, terms: usize, documents: usize) -> f32 {
    let n = documents.max(2) as f32;
    let rarest = (1.0 + (n - 0.5) / 1.5).ln();
    top / terms.max(1) as f32 / rarest
}

/// Routed fusion: a query at or above [`SPECIFIC`] fuses both lists by [`rrf`], the lexical one
/// at `lexical_weight`; any other (a wish) is the dense list as it is, by cosine: its BM25-only
/// hits are under the similarity floor, and a wish returns nothing under it (seed 004 R3.3).
pub fn routed(dense: &[Hit], lexical: &[Hit], lexical_weight: f32, specificity: f32) -> Vec<Hit> {
    if specificity >= SPECIFIC { rrf(&[(dense, 1.0), (lexical, lexical_weight)]) } else { dense.to_vec() }
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// The unit vector along the sum of `vectors` (zero when they cancel): an activity's dense
/// vector from its views' vectors.
pub fn normalised_sum(vectors: &[Vec<f32>]) -> Vec<f32> {
    let mut sum = vectors.first().cloned().unwrap_or_default();
    for v in &vectors[1.min(vectors.len())..] {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sum
}

/// Great-circle distance in km (haversine, mean Earth radius).
pub fn distance_km(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lng2 - lng1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * 6371.0088 * h.sqrt().asin()
}

/// The highest cosine of `candidate` to any of `kept`.
pub fn max_sim(candidate: &[f32], kept: &[Vec<f32>]) -> Option<f32> {
    kept.iter().map(|v| cosine(candidate, v)).reduce(f32::max)
}

/// `score` boosted by `max_sim`: at most +20 %, never lowered.
pub fn boost(score: f32, max_sim: f32) -> f32 {
    score * (1.0 + MAX_BOOST * max_sim.clamp(0.0, 1.0))
}

/// How nearness, soonness, variety and a user's dislikes move a ranking (`RAG_NEAR_WEIGHT`,
/// `RAG_NEAR_SCALE_KM`, `RAG_SOON_WEIGHT`, `RAG_SOON_SCALE_HOURS`, `RAG_DIVERSITY`,
/// `RAG_DISLIKE_WEIGHT`; docs/retrieval.md, "Nearer, sooner, varied, not for me").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shaping {
    /// Largest lift of nearness (`index::Lift`): a result at the searcher's place scores
    /// `1 + near_weight` times one far away.
    pub near_weight: f32,
    /// The distance at which the nearness lift is half its largest.
    pub near_scale_km: f64,
    /// Largest lift of soonness: a result starting now scores `1 + soon_weight` times one
    /// months away.
    pub soon_weight: f32,
    /// The time before the start at which the soonness lift is half its largest.
    pub soon_scale_hours: f64,
    /// Maximal marginal relevance's λ over a wish's results: 0 ranks by score alone.
    pub diversity: f32,
    /// The most a result like one the user turned down (or stated a dislike of) is lowered:
    /// its score times `1 - dislike_weight` at a cosine of 1.
    pub dislike_weight: f32,
}

impl Shaping {
    /// Nothing moves the ranking but its scores.
    pub const OFF: Self = Self {
        near_weight: 0.0,
        near_scale_km: 3.0,
        soon_weight: 0.0,
        soon_scale_hours: 72.0,
        diversity: 0.0,
        dislike_weight: 0.0,
    };
    /// The deployed default, chosen on the tune split of `benches/nearby/` (docs/retrieval.md).
    pub const DEFAULT: Self = Self {
        near_weight: 0.3,
        near_scale_km: 3.0,
        soon_weight: 0.2,
        soon_scale_hours: 72.0,
        diversity: 0.15,
        dislike_weight: 0.3,
    };
}

/// Each of `scores` as a share of their range: the best 1, the least [`RANGE_FLOOR`], the rest
/// linearly between (all 1 when alike). What a lift multiplies: it moves a result past those
/// within its share of the range, whatever the scale of the scores (cosines, RRF sums).
pub fn within_range(scores: &[f32]) -> Vec<f32> {
    let hi = scores.iter().copied().fold(f32::MIN, f32::max);
    let lo = scores.iter().copied().fold(f32::MAX, f32::min);
    if hi - lo <= f32::EPSILON * hi.abs().max(1.0) {
        return vec![1.0; scores.len()];
    }
    scores.iter().map(|s| RANGE_FLOOR + (1.0 - RANGE_FLOOR) * (s - lo) / (hi - lo)).collect()
}

/// Where the least relevant candidate stands in [`within_range`]: above 0, so a lift still
/// moves it.
pub const RANGE_FLOOR: f32 = 0.1;

/// `score` lowered by how like a dislike the candidate is: `neg` its highest cosine to the
/// user's dislikes, `floor` the embedder's similarity floor (a cosine at or under it is no
/// likeness). At most by `weight` (at a cosine of 1).
pub fn pushed_down(score: f32, neg: f32, floor: f32, weight: f32) -> f32 {
    let likeness = ((neg - floor) / (1.0 - floor).max(1e-6)).clamp(0.0, 1.0);
    score * (1.0 - weight.clamp(0.0, 1.0) * likeness)
}

/// Cosine at or above which two results anywhere are one thing twice (a series' sessions).
pub const NEAR_COPY_COSINE: f32 = 0.95;
/// Two results closer than this, of the same type, are one venue's sessions.
pub const SAME_VENUE_KM: f64 = 0.2;

/// What [`mmr`] compares of a candidate.
#[derive(Clone, Copy)]
pub struct Candidate<'a> {
    pub score: f32,
    pub dense: Option<&'a [f32]>,
    pub kind: &'a str,
    pub lat: f64,
    pub lng: f64,
}

/// How alike two candidates are for [`mmr`], 0 to 1: 1 for near-copies (the same venue and
/// type, or a cosine of [`NEAR_COPY_COSINE`] or more), else their cosine above the embedder's
/// similarity `floor`, as a share of what is above it (0 without vectors).
pub fn likeness(a: &Candidate<'_>, b: &Candidate<'_>, floor: f32) -> f32 {
    let same_venue = a.kind == b.kind && distance_km(a.lat, a.lng, b.lat, b.lng) < SAME_VENUE_KM;
    let cos = match (a.dense, b.dense) {
        (Some(x), Some(y)) => cosine(x, y),
        _ => return if same_venue { 1.0 } else { 0.0 },
    };
    if same_venue || cos >= NEAR_COPY_COSINE { 1.0 } else { ((cos - floor) / (1.0 - floor).max(1e-6)).clamp(0.0, 1.0) }
}

/// Maximal marginal relevance: the order in which to show `candidates` (best first, as given),
/// the first `limit` picked one by one by `(1 - λ) × score / best - λ × likeness to the
/// likest already picked` ([`likeness`] above `floor`); the rest follow in their order. λ = 0
/// keeps the order.
pub fn mmr(candidates: &[Candidate<'_>], limit: usize, lambda: f32, floor: f32) -> Vec<usize> {
    let n = candidates.len();
    if lambda <= 0.0 || n < 2 {
        return (0..n).collect();
    }
    let best = candidates.iter().map(|c| c.score).fold(f32::MIN, f32::max).max(1e-6);
    let mut picked: Vec<usize> = Vec::with_capacity(limit.min(n));
    let mut redundancy = vec![0.0f32; n];
    let mut left: Vec<usize> = (0..n).collect();
    while picked.len() < limit && !left.is_empty() {
        let value = |i: usize| (1.0 - lambda) * candidates[i].score / best - lambda * redundancy[i];
        // The first of the highest: ties keep the given order.
        let (at, &chosen) = left
            .iter()
            .enumerate()
            .reduce(|a, b| if value(*b.1) > value(*a.1) { b } else { a })
            .expect("left is not empty");
        left.remove(at);
        picked.push(chosen);
        for &i in &left {
            redundancy[i] = redundancy[i].max(likeness(&candidates[i], &candidates[chosen], floor));
        }
    }
    picked.extend(left);
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(score: f32, dense: &[f32], kind: &'static str, lat: f64) -> (f32, Vec<f32>, &'static str, f64) {
        (score, dense.to_vec(), kind, lat)
    }

    #[test]
    fn mmr_shows_one_of_a_series_before_the_next_different_thing() {
        // Three sessions of one series at one venue, then two different activities.
        let rows = [
            at(1.0, &[1.0, 0.0, 0.0], "跑步", 31.20),
            at(0.99, &[1.0, 0.01, 0.0], "跑步", 31.20),
            at(0.98, &[1.0, 0.0, 0.01], "跑步", 31.20),
            at(0.7, &[0.3, 1.0, 0.0], "音乐", 31.30),
            at(0.6, &[0.2, 0.0, 1.0], "展览", 31.40),
        ];
        let cands: Vec<Candidate<'_>> = rows
            .iter()
            .map(|(score, d, kind, lat)| Candidate { score: *score, dense: Some(d), kind, lat: *lat, lng: 121.4 })
            .collect();
        assert_eq!(mmr(&cands, 5, 0.0, 0.0), vec![0, 1, 2, 3, 4], "λ = 0 keeps the order");
        let order = mmr(&cands, 3, 0.5, 0.0);
        assert_eq!(order, vec![0, 3, 4, 1, 2], "one of the series, the two others, then the rest in order");
        // A near-copy at another venue (the same text) counts as one too; unlike things by
        // their cosine above the floor.
        assert_eq!(likeness(&cands[0], &Candidate { lat: 31.9, ..cands[1] }, 0.8), 1.0);
        assert_eq!(likeness(&cands[0], &cands[3], 0.8), 0.0, "a cosine of 0.29 is under the floor");
    }

    #[test]
    fn scores_are_shares_of_their_range() {
        let shares = within_range(&[0.92, 0.95, 0.935]);
        assert!((shares[0] - 0.1).abs() < 1e-5 && (shares[1] - 1.0).abs() < 1e-5 && (shares[2] - 0.55).abs() < 1e-4);
        assert_eq!(within_range(&[0.5, 0.5]), vec![1.0, 1.0]);
        assert!(within_range(&[]).is_empty());
    }

    #[test]
    fn a_dislike_lowers_only_what_is_like_it() {
        assert_eq!(pushed_down(1.0, 0.8, 0.8, 0.6), 1.0, "at the floor: no likeness");
        assert_eq!(pushed_down(1.0, 0.5, 0.8, 0.6), 1.0);
        assert!((pushed_down(1.0, 1.0, 0.8, 0.6) - 0.4).abs() < 1e-6, "a copy: lowered by the weight");
        assert!((pushed_down(2.0, 0.9, 0.8, 0.6) - 1.4).abs() < 1e-5);
    }

    #[test]
    fn max_sim_takes_the_best_match_and_the_boost_is_capped() {
        let kept = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_eq!(max_sim(&[1.0, 0.0], &kept), Some(1.0));
        assert_eq!(max_sim(&[0.0, 1.0], &kept), Some(1.0));
        let middle = max_sim(&[1.0, 1.0], &kept).unwrap();
        assert!((middle - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(max_sim(&[1.0, 0.0], &[]), None);
        assert!((boost(0.5, 1.0) - 0.6).abs() < 1e-6);
        assert!((boost(0.5, 7.0) - 0.6).abs() < 1e-6, "at most 20 %");
        assert_eq!(boost(0.5, -0.4), 0.5, "never lowered");
    }

    #[test]
    fn rrf_rewards_agreement_between_channels() {
        let [a, b, c] = [Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3)];
        let dense = [Hit { id: a, score: 0.9 }, Hit { id: b, score: 0.8 }];
        let lexical = [Hit { id: b, score: 7.0 }, Hit { id: c, score: 5.0 }];
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical, 1.0)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [b, a, c]);
        // A light lexical list adds to agreement but cannot outrank the dense leader alone.
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical, 0.3)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [b, a, c]);
        let lexical_first = [Hit { id: c, score: 9.0 }];
        let fused: Vec<Uuid> = rrf(&[(&dense, 1.0), (&lexical_first, 0.3)]).into_iter().map(|h| h.id).collect();
        assert_eq!(fused, [a, b, c]);
    }

    #[test]
    fn distances_and_cosines_are_right() {
        // People's Square to the Bund, Shanghai: about 1.6 km.
        let d = distance_km(31.2304, 121.4737, 31.2400, 121.4900);
        assert!((1.5..1.9).contains(&d), "{d}");
        assert!((cosine(&[1.0, 0.0], &[1.0, 1.0]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
