//! What a wish wants of an activity (issue 52): the query-side understanding of "压力大想发呆",
//! "适合社恐的活动", as facets, and the query vector moved toward activities that have them.
//!
//! Two linear heads over the bundled e5's vectors, fitted by ridge regression on written
//! training data (`benches/facets/`: wishes labelled with the facets they want and avoid, and
//! activities labelled with the facets they have), never on a quality set:
//!
//! - **desire** (query side): the query's vector → one number per facet in [-1, 1], +1 wanted,
//!   -1 avoided ("别让我跟人搭话": `mingle` -1, `solo_ok` +1);
//! - **has** (activity side): an activity's vector → whether it has each facet. Only its
//!   weights' directions are shipped: the direction in which activities with the facet lie.
//!
//! Both heads read the bundled e5's vectors, whatever embedder ranks (`activities::facets`):
//! an activity's facets ([`Wishes::has`]) are stored with it at indexing, a query's desire is
//! read once per search, and retrieval ranks a wish's candidates (found with the query's own
//! vector, at or above the floor) by their cosine plus [`Wishes::matched`]: those that have
//! what it wants and lack what it avoids come first, whatever their words. `RAG_WISH_WEIGHT`
//! sets the weight (0: off). The model is `wish.json`, fitted by
//! `cargo xtask quality --fit-wishes`.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The facets, in the heads' column order (`benches/facets/README.md` defines each).
pub const FACETS: [&str; 28] = [
    "quiet",
    "lively",
    "relaxing",
    "active",
    "sweaty",
    "intense",
    "thrill",
    "mingle",
    "solo_ok",
    "small_group",
    "outdoor",
    "indoor",
    "nature",
    "food",
    "alcohol",
    "learn",
    "creative",
    "culture",
    "music",
    "night",
    "daytime",
    "family_kids",
    "romantic",
    "professional",
    "cheap",
    "animals",
    "games",
    "volunteer",
];

/// The ridge penalty of the desire head (chosen on the quality sets' tune splits).
pub const DESIRE_PENALTY: f64 = 0.3;
/// The ridge penalty of the activity head.
pub const HAS_PENALTY: f64 = 0.2;
/// How far a wish moves its query vector (`RAG_WISH_WEIGHT`'s default): the middle of the
/// plateau (0.2 to 0.8) the tune splits showed.
pub const DEFAULT_WEIGHT: f32 = 0.4;

/// The shipped model, as `wish.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wishes {
    /// The dense vector both heads read ([`crate::activities::embedder::vector_name`]).
    pub vector: String,
    /// Per facet: the desire head's weights over the query vector, then its bias.
    pub desire: Vec<Vec<f32>>,
    /// Per facet: the unit direction of the activity head's weights.
    pub directions: Vec<Vec<f32>>,
}

impl Wishes {
    /// The model this build ships (`wish.json`), read once.
    pub fn shipped() -> &'static Wishes {
        static WISHES: OnceLock<Wishes> = OnceLock::new();
        WISHES.get_or_init(|| {
            serde_json::from_str(include_str!("wish.json")).expect("wish.json is valid (a unit test reads it)")
        })
    }

    /// The shipped model's id: the first 12 hex digits of `wish.json`'s SHA-256 (stored with
    /// facets it made, so a refitted model never reads another's).
    pub fn shipped_id() -> &'static str {
        static ID: OnceLock<String> = OnceLock::new();
        ID.get_or_init(|| {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(include_str!("wish.json").as_bytes());
            digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
        })
    }

    /// Fits both heads: `wishes` (a query vector, its desire per facet in -1, 0, 1) and
    /// `activities` (an activity vector, 1 or 0 per facet), for vectors named `vector`.
    pub fn fit(wishes: &[(Vec<f32>, Vec<f32>)], activities: &[(Vec<f32>, Vec<f32>)], vector: &str) -> Wishes {
        let round = |w: Vec<f32>| w.into_iter().map(|x| (x * 1e5).round() / 1e5).collect::<Vec<f32>>();
        let desire = ridge(wishes, DESIRE_PENALTY).into_iter().map(round).collect();
        let directions = ridge(activities, HAS_PENALTY)
            .into_iter()
            .map(|mut w| {
                w.pop();
                round(unit(w))
            })
            .collect();
        Wishes { vector: vector.to_owned(), desire, directions }
    }

    /// The desire for each facet ([`FACETS`] order) of a query with `vector`, in [-1, 1].
    pub fn desire(&self, vector: &[f32]) -> Vec<f32> {
        self.desire
            .iter()
            .map(|w| {
                let bias = w.last().copied().unwrap_or(0.0);
                (bias + w.iter().zip(vector).map(|(a, b)| a * b).sum::<f32>()).clamp(-1.0, 1.0)
            })
            .collect()
    }

    /// What an activity with `vector` has of each facet ([`FACETS`] order): the projection of
    /// its unit vector on each facet's direction. Read by the bundled e5 whatever embedder ranks
    /// ([`crate::activities::facets`]).
    pub fn has(&self, vector: &[f32]) -> Option<Vec<f32>> {
        if vector.len() != self.directions.first().map_or(0, Vec::len) {
            return None;
        }
        let v = unit(vector.to_vec());
        Some(self.directions.iter().map(|u| u.iter().zip(&v).map(|(a, b)| a * b).sum()).collect())
    }

    /// How well what an activity `has` meets a query's `desire`: Σ desire × facet. Weighed and
    /// added to the cosine between query and activity, it ranks as the cosine to the query
    /// vector moved along each facet's direction times its desire (a constant factor apart).
    pub fn matched(desire: &[f32], has: &[f32]) -> f32 {
        desire.iter().zip(has).map(|(d, h)| d * h).sum()
    }

    /// The direction of a `desire`: Σ desire × facet direction. Its product with an activity's
    /// unit vector is [`Wishes::matched`] of that activity's [`Wishes::has`], in one product.
    pub fn direction(&self, desire: &[f32]) -> Vec<f32> {
        let mut sum = vec![0.0; self.directions.first().map_or(0, Vec::len)];
        for (d, u) in desire.iter().zip(&self.directions) {
            sum.iter_mut().zip(u).for_each(|(s, x)| *s += d * x);
        }
        sum
    }

    /// The facets a query with `vector` clearly wants (desire ≥ 0.5) and avoids (≤ -0.5).
    pub fn clear(&self, vector: &[f32]) -> (Vec<&'static str>, Vec<&'static str>) {
        let desire = self.desire(vector);
        let pick = |keep: &dyn Fn(f32) -> bool| {
            FACETS.iter().zip(&desire).filter(|(_, d)| keep(**d)).map(|(f, _)| *f).collect()
        };
        (pick(&|d| d >= 0.5), pick(&|d| d <= -0.5))
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Ridge regression of every target column on the features, with an unpenalised bias:
/// solves `(XᵀX + λI) W = XᵀY` (in f64, by Cholesky). Returns per target its weights, then the
/// bias. Deterministic: the same samples give the same weights.
pub fn ridge(samples: &[(Vec<f32>, Vec<f32>)], penalty: f64) -> Vec<Vec<f32>> {
    let Some((x0, y0)) = samples.first() else { return Vec::new() };
    let (d, k) = (x0.len() + 1, y0.len());
    let mut a = vec![0f64; d * d];
    let mut b = vec![0f64; d * k];
    let mut row = vec![0f64; d];
    for (x, y) in samples {
        for (r, v) in row.iter_mut().zip(x.iter().map(|v| f64::from(*v)).chain([1.0])) {
            *r = v;
        }
        for i in 0..d {
            let ri = row[i];
            if ri == 0.0 {
                continue;
            }
            for j in i..d {
                a[i * d + j] += ri * row[j];
            }
            for (t, yt) in y.iter().enumerate() {
                b[i * k + t] += ri * f64::from(*yt);
            }
        }
    }
    for i in 0..d {
        for j in 0..i {
            a[i * d + j] = a[j * d + i];
        }
        if i + 1 < d {
            a[i * d + i] += penalty;
        }
    }
    // Cholesky: a = L Lᵀ (a is positive definite: the penalty, and the bias's column of ones).
    let mut l = vec![0f64; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|m| l[i * d + m] * l[j * d + m]).sum();
            l[i * d + j] =
                if i == j { (a[i * d + i] - s).max(1e-12).sqrt() } else { (a[i * d + j] - s) / l[j * d + j] };
        }
    }
    (0..k)
        .map(|t| {
            let mut z = vec![0f64; d];
            for i in 0..d {
                let s: f64 = (0..i).map(|m| l[i * d + m] * z[m]).sum();
                z[i] = (b[i * k + t] - s) / l[i * d + i];
            }
            let mut w = vec![0f64; d];
            for i in (0..d).rev() {
                let s: f64 = (i + 1..d).map(|m| l[m * d + i] * w[m]).sum();
                w[i] = (z[i] - s) / l[i * d + i];
            }
            w.into_iter().map(|v| v as f32).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_recovers_a_linear_rule_and_its_bias() {
        // y0 = 2 x0 - x1 + 0.5, y1 = x1; a small penalty barely shrinks them.
        let samples: Vec<(Vec<f32>, Vec<f32>)> =
            [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (1.0, 3.0)]
                .into_iter()
                .map(|(a, b)| (vec![a, b], vec![2.0 * a - b + 0.5, b]))
                .collect();
        let w = ridge(&samples, 1e-6);
        for (got, want) in w[0].iter().zip([2.0, -1.0, 0.5]).chain(w[1].iter().zip([0.0, 1.0, 0.0])) {
            assert!((got - want).abs() < 1e-3, "{w:?}");
        }
        let shrunk = ridge(&samples, 10.0);
        assert!(shrunk[0][0].abs() < 2.0, "a penalty shrinks the weights: {shrunk:?}");
    }

    #[test]
    fn a_wish_ranks_as_its_query_moved_toward_what_it_wants() {
        // Two facets on a 3-d space: the desire reads axis 0 (+ wants facet 0, - avoids it).
        let wishes = Wishes {
            vector: "v".into(),
            desire: vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 0.0]],
            directions: vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]],
        };
        assert_eq!(wishes.clear(&[0.8, 0.0, 0.6]), (vec!["quiet"], vec![]));
        assert_eq!(wishes.has(&[0.0, 2.0, 0.0]), Some(vec![1.0, 0.0]), "projections of the unit vector");
        assert_eq!(wishes.has(&[1.0, 0.0]), None, "another model's vector is not read");
        // The field-to-field score orders activities as the cosine to the moved query does.
        let cos = |a: &[f32], b: &[f32]| {
            let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            dot / (a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt())
        };
        let activities = [[0.6, 0.8, 0.0], [0.9, 0.0, 0.43589], [0.5, 0.5, 0.7], [1.0, 0.0, 0.0]];
        for (query, weight) in [([0.8, 0.0, 0.6], 0.5), ([-0.8, 0.0, 0.6], 0.5), ([0.6, 0.8, 0.0], 1.5)] {
            let desire = wishes.desire(&query);
            let mut moved = query.to_vec();
            for (d, u) in desire.iter().zip(&wishes.directions) {
                moved.iter_mut().zip(u).for_each(|(m, x)| *m += weight * d * x);
            }
            let order = |score: &dyn Fn(&[f32]) -> f32| {
                let mut ids: Vec<usize> = (0..activities.len()).collect();
                ids.sort_by(|&a, &b| score(&activities[b]).total_cmp(&score(&activities[a])));
                ids
            };
            let field_to_field =
                order(&|a| cos(&query, a) + weight * Wishes::matched(&desire, &wishes.has(a).unwrap()));
            assert_eq!(field_to_field, order(&|a| cos(&moved, a)), "{query:?} at {weight}");
            // One product with the desire's direction is the same number.
            let direction = wishes.direction(&desire);
            for a in &activities {
                let norm = a.iter().map(|x| x * x).sum::<f32>().sqrt();
                let product = direction.iter().zip(a).map(|(d, x)| d * x).sum::<f32>() / norm;
                assert!((product - Wishes::matched(&desire, &wishes.has(a).unwrap())).abs() < 1e-5, "{a:?}");
            }
        }
    }

    #[test]
    fn the_shipped_model_reads_and_fits_its_vector() {
        let wishes = Wishes::shipped();
        assert_eq!(wishes.vector, "local-multilingual-e5-small-384");
        assert_eq!((wishes.desire.len(), wishes.directions.len()), (FACETS.len(), FACETS.len()));
        assert!(wishes.desire.iter().all(|w| w.len() == 385));
        assert!(wishes.directions.iter().all(|u| (u.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-3));
    }
}
