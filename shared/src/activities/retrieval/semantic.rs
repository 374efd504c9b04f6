//! The ranking of a search with a `semanticQuery` (see the parent module's steps 4 and on):
//! the channels fused or routed, a wish ranked again by what it wants, then the lifts of
//! personalisation, a named time, nearness and soonness, the push-down of dislikes, and a
//! wish's variety.

use std::collections::HashMap;

use uuid::Uuid;

use super::{CHANNEL_DEPTH, PERSONAL_DEPTH, Retrieval, TIME_BOOST};
use crate::activities::index::{HardFilter, Hit, Lift, NearLift, SoonLift, Stored};
use crate::activities::indexing::activity_of;
use crate::activities::interests::{Personal, Source};
use crate::activities::ranking::{
    self, Candidate, MAX_BOOST, SPECIFIC, boost, cosine, distance_km, max_sim, mmr, pushed_down, routed, rrf,
    specificity,
};
use crate::activities::request::{Ranked, SearchRequest, Strategy};
use crate::activities::settings::Fusion;
use crate::activities::when::{Wanted, without_time};
use crate::core::error::Result;

impl Retrieval {
    pub(super) async fn semantic(
        &self,
        req: &SearchRequest,
        query: &str,
        (filter, candidates): (&HardFilter, usize),
        personal: Option<&Personal>,
        request_id: &str,
        degraded_reason: &mut Option<String>,
    ) -> Result<(Strategy, Vec<Ranked>)> {
        let none = Personal::none(Source::None);
        let personal = personal.unwrap_or(&none);
        let kept = personal.likes.as_slice();
        let sparse = self.bm25.query(query);
        // The time a query names is read by the lift below and by BM25 (the `时间` line); the
        // dense channel embeds what it wants besides ("周六晚上热闹点的" → "热闹点的").
        let inputs = [without_time(query)];
        let embedded = async { self.embed(&inputs, request_id).await?.pop().ok_or_else(|| "no vector".to_owned()) };
        // A wish's desire is read only where the query may be ranked by meaning.
        let may_wish = self.ranking.wish_weight > 0.0 && self.ranking.fusion != Fusion::Rrf;
        let (vector, desire) = self.facets.with_desire(&inputs[0], request_id, may_wish, embedded).await;
        let vector = match vector {
            Ok(v) => Some(v),
            Err(reason) => {
                tracing::warn!(%reason, "query embedding unavailable: lexical ranking only");
                *degraded_reason = Some(reason);
                None
            }
        };
        // Whether the fused list is ranked by meaning alone (by cosine): a wish, under routed
        // fusion, or every query under `dense`.
        let mut by_meaning = false;
        let floor = self.ranking.min_similarity.or(self.embedding.min_similarity()).unwrap_or(0.5);
        let (strategy, fused) = match &vector {
            None => (Strategy::Lexical, self.index.search_sparse(&sparse, filter, CHANNEL_DEPTH).await?),
            Some(v) => {
                match self.ranking.fusion {
                    Fusion::Dense => {
                        by_meaning = true;
                        (Strategy::Dense, self.index.search_dense(v, filter, CHANNEL_DEPTH, floor).await?)
                    }
                    Fusion::Rrf => {
                        let (dense, lexical) = self.index.search_both(v, floor, &sparse, filter, CHANNEL_DEPTH).await?;
                        (Strategy::Hybrid, rrf(&[(&dense, 1.0), (&lexical, self.ranking.lexical_weight)]))
                    }
                    Fusion::Routed => {
                        let (dense, lexical) = self.index.search_both(v, floor, &sparse, filter, CHANNEL_DEPTH).await?;
                        // IDF is over the whole collection: every bookable activity stands in for
                        // it (the index's estimate, which reads no point, when the filter narrows).
                        let bookable = HardFilter::bookable(filter.after);
                        let documents = if *filter == bookable {
                            candidates
                        } else {
                            self.index.estimate(&bookable).await?.max(candidates)
                        };
                        let top = lexical.first().map_or(0.0, |h| h.score);
                        let specific = specificity(top, sparse.indices.len(), documents);
                        by_meaning = specific < SPECIFIC;
                        (Strategy::Hybrid, routed(&dense, &lexical, self.ranking.lexical_weight, specific))
                    }
                }
            }
        };
        // A wish ranked by meaning is ranked again by what it wants: its candidates (the same
        // ones, at or above the floor) by their cosine plus their facets' match to its desire.
        let wish = match by_meaning && vector.is_some() {
            true => desire.get().await.map(|d| self.facets.wish(d)),
            false => {
                drop(desire); // its reading, if any, stops now
                None
            }
        };
        // Personalising, a time in the query, nearness and soonness, dislikes or variety may
        // lift a candidate from below the cut: rank a deeper list then.
        let wanted = Wanted::parse(query, self.clock.now(), self.ranking.zone);
        let shaping = self.ranking.shaping;
        // Only a wish is lifted and varied: a name or a rare term asks for what bears it, every
        // session, in the order it matches (measured: lifting them loses exact-term queries).
        // A time the query names is its own lift (`wanted`): soonness then stays out of it.
        let lift = match by_meaning {
            true => self.lift(req, !wanted.is_empty()),
            false => Lift { near: None, soon: None },
        };
        let (dislikes, turned_down) = (personal.dislikes.as_slice(), personal.turned_down.as_slice());
        let varied = by_meaning && shaping.diversity > 0.0;
        let disliking = !dislikes.is_empty() && shaping.dislike_weight > 0.0;
        let rerank = !kept.is_empty()
            || !wanted.is_empty()
            || wish.is_some()
            || !lift.is_none()
            || disliking
            || !turned_down.is_empty()
            || varied;
        let depth = match (&wish, rerank) {
            (Some(_), _) => CHANNEL_DEPTH,
            (None, true) => (req.limit * PERSONAL_DEPTH + turned_down.len()).min(CHANNEL_DEPTH),
            (None, false) => req.limit,
        };
        let top: Vec<Hit> = fused.into_iter().take(depth).collect();
        let ids: Vec<Uuid> = top.iter().map(|h| h.id).collect();
        let with_dense = vector.is_some() || !kept.is_empty() || disliking || varied;
        // Nearness and soonness are scored by the index's formula, with the points' reading.
        let mut stored: HashMap<Uuid, (Stored, f32)> = match lift.is_none() {
            true => self.index.get(&ids, with_dense).await?.into_iter().map(|s| (s.id, (s, 1.0))).collect(),
            false => {
                self.index.get_lifted(&ids, with_dense, &lift).await?.into_iter().map(|(s, f)| (s.id, (s, f))).collect()
            }
        };
        let mut ranked = Vec::with_capacity(top.len());
        let mut dense = Vec::with_capacity(top.len());
        // Each candidate's lift and likeness to a dislike, applied once the list's range is known.
        let mut shape: Vec<(f32, Option<f32>)> = Vec::with_capacity(top.len());
        for hit in top {
            // A point deleted between the two reads is skipped.
            let Some((s, factor)) = stored.remove(&hit.id).filter(|(s, _)| !s.is_tombstone()) else { continue };
            // One unreadable point costs its place, not the search.
            let activity = match activity_of(&s.payload) {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(id = %hit.id, error = %e, "an unreadable stored activity was left out");
                    continue;
                }
            };
            if turned_down.contains(&activity.id) {
                continue;
            }
            let similarity = vector.as_deref().zip(s.dense.as_deref()).map(|(q, d)| cosine(q, d));
            let distance_km = req.near.map(|n| distance_km(n.lat, n.lng, activity.location.lat, activity.location.lng));
            let max_sim = s.dense.as_deref().and_then(|d| max_sim(d, kept));
            // The lifts below multiply: a score under 0 would be lowered by them.
            let base = match (&wish, similarity) {
                (Some(wish), Some(cos)) => (cos + self.ranking.wish_weight * wish.met_by(&s).unwrap_or(0.0)).max(0.0),
                (Some(_), None) => 0.0,
                (None, _) => hit.score,
            };
            let (score, boost) = match max_sim {
                Some(m) => (boost(base, m), Some(1.0 + MAX_BOOST * m.clamp(0.0, 1.0))),
                None => (base, None),
            };
            let score = score * (1.0 + TIME_BOOST * wanted.fit(activity.start_at, self.ranking.zone));
            let neg = s.dense.as_deref().filter(|_| disliking).and_then(|d| ranking::max_sim(d, dislikes));
            shape.push((factor, neg));
            let lifted = (!lift.is_none()).then_some(factor);
            ranked.push(Ranked {
                activity,
                similarity,
                score,
                distance_km,
                max_sim,
                boost,
                lift: lifted,
                match_reason: None,
            });
            dense.push(s.dense);
        }
        // Nearness, soonness and dislikes move a result within the list's range of relevance,
        // not by its raw scale: a wish's cosines differ by hundredths, where a lift of a tenth
        // would outweigh what it asked for ([`ranking::within_range`]).
        if !lift.is_none() || disliking || varied {
            let scores: Vec<f32> = ranked.iter().map(|r| r.score).collect();
            for ((r, relevance), (factor, neg)) in ranked.iter_mut().zip(ranking::within_range(&scores)).zip(shape) {
                r.score = relevance * factor;
                if let Some(neg) = neg {
                    r.score = pushed_down(r.score, neg, floor, shaping.dislike_weight);
                }
            }
        }
        if rerank {
            let mut order: Vec<usize> = (0..ranked.len()).collect();
            order.sort_by(|&a, &b| ranked[b].score.total_cmp(&ranked[a].score));
            if varied {
                let candidates: Vec<Candidate<'_>> = order
                    .iter()
                    .map(|&i| Candidate {
                        score: ranked[i].score,
                        dense: dense[i].as_deref(),
                        kind: &ranked[i].activity.kind,
                        lat: ranked[i].activity.location.lat,
                        lng: ranked[i].activity.location.lng,
                    })
                    .collect();
                order = mmr(&candidates, req.limit, shaping.diversity, floor).into_iter().map(|k| order[k]).collect();
            }
            let mut slots: Vec<Option<Ranked>> = ranked.into_iter().map(Some).collect();
            ranked = order.into_iter().take(req.limit).filter_map(|i| slots[i].take()).collect();
        }
        Ok((strategy, ranked))
    }

    /// The lift of nearness (from the request's place) and soonness (from now) a wish gets:
    /// none where its weights are 0, and no soonness where the query names a time (`named`:
    /// that time lifts by its own fit).
    pub(super) fn lift(&self, req: &SearchRequest, named: bool) -> Lift {
        let shaping = self.ranking.shaping;
        let near = req.near.filter(|_| shaping.near_weight > 0.0).map(|n| NearLift {
            lat: n.lat,
            lng: n.lng,
            scale_km: shaping.near_scale_km,
            weight: shaping.near_weight,
        });
        let soon = (shaping.soon_weight > 0.0 && !named).then(|| SoonLift {
            now: self.clock.now(),
            scale_hours: shaping.soon_scale_hours,
            weight: shaping.soon_weight,
        });
        Lift { near, soon }
    }
}
