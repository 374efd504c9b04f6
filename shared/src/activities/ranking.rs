//! The ranking maths of activity retrieval, free of any store: weighted reciprocal rank
//! fusion, cosine similarity, MaxSim against a user's interest vectors and its bounded boost,
//! and great-circle distance.

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

#[cfg(test)]
mod tests {
    use super::*;

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
