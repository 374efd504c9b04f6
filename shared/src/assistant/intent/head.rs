//! The router's two linear heads (softmax regression over the five modes), both also reading
//! the conversation's previous mode:
//!
//! - **words**: the message's character unigrams and bigrams (lower case, spaces folded), so it
//!   needs no model and answers in microseconds, in any language its grams were seen in;
//! - **meaning**: the message's bundled-e5 vector (`query: `), for what the words head is unsure of.
//!
//! Fitted by `cargo xtask quality --intent --train` on `benches/modes/` (the training file and
//! the sealed set's tune split, never its holdout) and shipped as `heads.json`. This module
//! neither embeds nor decides: [`super::Classifier`] does.

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::Mode;

/// Messages up to this many characters are short: a follow-up's mode weighs more on them.
const SHORT_CHARS: usize = 12;
/// Features that say what the previous turn's mode was: one per mode, and one per mode for a
/// short message.
const PREVIOUS: usize = 2 * Mode::ALL.len();
/// The inverse strength of the weights' penalty (as scikit-learn's `C`).
pub const PENALTY_C: f32 = 4.0;

/// A message's features: (column, value), sparse.
pub type Features = Vec<(usize, f32)>;

/// One softmax regression: a row of weights per mode (in [`Mode::ALL`] order), a column per
/// feature, then the bias.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub weights: Vec<Vec<f32>>,
}

impl Head {
    /// The probability of each mode (in [`Mode::ALL`] order) for `x`.
    pub fn probabilities(&self, x: &[(usize, f32)]) -> [f32; 5] {
        probabilities(&self.weights, x)
    }

    /// Fits `samples` (features, index of the mode in [`Mode::ALL`]) over `dims` columns:
    /// minimises the summed cross-entropy plus `|W|² / 2c` (the bias unpenalised) by full-batch
    /// Adam from zero for a fixed number of steps, so the same data gives the same weights.
    pub fn fit(samples: &[(Features, usize)], dims: usize, c: f32) -> Head {
        const STEPS: i32 = 1500;
        const RATE: f32 = 0.05;
        let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
        let zero = || vec![vec![0f32; dims + 1]; 5];
        let (mut w, mut m, mut v) = (zero(), zero(), zero());
        for step in 1..=STEPS {
            let mut grad = zero();
            for (x, label) in samples {
                let p = probabilities(&w, x);
                for (k, row) in grad.iter_mut().enumerate() {
                    let g = p[k] - f32::from(k == *label);
                    for &(i, value) in x {
                        row[i] += g * value;
                    }
                    row[dims] += g;
                }
            }
            let (c1, c2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
            for k in 0..5 {
                for j in 0..=dims {
                    let g = grad[k][j] + if j < dims { w[k][j] / c } else { 0.0 };
                    m[k][j] = b1 * m[k][j] + (1.0 - b1) * g;
                    v[k][j] = b2 * v[k][j] + (1.0 - b2) * g * g;
                    w[k][j] -= RATE * (m[k][j] / c1) / ((v[k][j] / c2).sqrt() + eps);
                }
            }
        }
        // Five decimals are plenty, and keep heads.json small.
        for row in &mut w {
            row.iter_mut().for_each(|x| *x = (*x * 1e5).round() / 1e5);
        }
        Head { weights: w }
    }
}

fn probabilities(weights: &[Vec<f32>], x: &[(usize, f32)]) -> [f32; 5] {
    let mut logits = [0f32; 5];
    for (row, logit) in weights.iter().zip(&mut logits) {
        let bias = row.last().copied().unwrap_or(0.0);
        *logit = bias + x.iter().map(|&(i, v)| row.get(i).map_or(0.0, |w| w * v)).sum::<f32>();
    }
    let top = logits.iter().copied().fold(f32::MIN, f32::max);
    let exp = logits.map(|l| (l - top).exp());
    let sum: f32 = exp.iter().sum();
    exp.map(|e| e / sum)
}

/// Both heads and what they read, as `heads.json` holds them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Heads {
    /// The character grams the words head reads, in column order.
    pub grams: Vec<String>,
    pub words: Head,
    /// The dense vector the meaning head reads ([`crate::activities::embedder::vector_name`]).
    pub vector: String,
    pub meaning: Head,
    #[serde(skip)]
    columns: OnceLock<HashMap<String, usize>>,
}

impl Heads {
    /// Both heads fitted on `samples`: (message, previous mode, its vector, the right mode).
    pub fn fit(samples: &[(&str, Option<Mode>, &[f32], Mode)], vector: &str) -> Heads {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (message, ..) in samples {
            for gram in grams(message) {
                *seen.entry(gram).or_default() += 1;
            }
        }
        // A gram in one message only is that message's, not its mode's.
        let grams: Vec<String> =
            seen.into_iter().filter(|(_, n)| *n >= 2).map(|(g, _)| g).collect::<BTreeSet<_>>().into_iter().collect();
        let mut heads = Heads {
            grams,
            words: Head { weights: Vec::new() },
            vector: vector.to_owned(),
            meaning: Head { weights: Vec::new() },
            columns: OnceLock::new(),
        };
        let words: Vec<_> = samples.iter().map(|(t, p, _, m)| (heads.words_features(t, *p), m.index())).collect();
        heads.words = Head::fit(&words, heads.grams.len() + PREVIOUS, PENALTY_C);
        let dims = samples.first().map_or(0, |s| s.2.len());
        let meaning: Vec<_> = samples.iter().map(|(t, p, v, m)| (meaning_features(t, *p, v), m.index())).collect();
        heads.meaning = Head::fit(&meaning, dims + PREVIOUS, PENALTY_C);
        heads
    }

    /// The heads this build ships (`heads.json`), read once.
    pub fn shipped() -> &'static Heads {
        static HEADS: OnceLock<Heads> = OnceLock::new();
        HEADS.get_or_init(|| {
            serde_json::from_str(include_str!("heads.json")).expect("heads.json is valid (a unit test reads it)")
        })
    }

    /// The words head's probability of each mode for `message` after `previous`.
    pub fn words(&self, message: &str, previous: Option<Mode>) -> [f32; 5] {
        self.words.probabilities(&self.words_features(message, previous))
    }

    /// The meaning head's, from `message`'s `vector`.
    pub fn meaning(&self, message: &str, previous: Option<Mode>, vector: &[f32]) -> [f32; 5] {
        self.meaning.probabilities(&meaning_features(message, previous, vector))
    }

    fn words_features(&self, message: &str, previous: Option<Mode>) -> Features {
        let columns = self.columns.get_or_init(|| self.grams.iter().enumerate().map(|(i, g)| (g.clone(), i)).collect());
        let mut x: Features = grams(message).iter().filter_map(|g| columns.get(g)).map(|&i| (i, 1.0)).collect();
        x.extend(previous_features(message, previous, self.grams.len()));
        x
    }
}

fn meaning_features(message: &str, previous: Option<Mode>, vector: &[f32]) -> Features {
    let mut x: Features = vector.iter().copied().enumerate().collect();
    x.extend(previous_features(message, previous, vector.len()));
    x
}

/// The previous mode's columns, from `offset`: its own, and its own for a short message.
fn previous_features(message: &str, previous: Option<Mode>, offset: usize) -> Features {
    let Some(mode) = previous else { return Vec::new() };
    let k = mode.index();
    let mut x = vec![(offset + k, 1.0)];
    if message.chars().count() <= SHORT_CHARS {
        x.push((offset + Mode::ALL.len() + k, 1.0));
    }
    x
}

/// The character unigrams and bigrams of `message` in lower case, runs of white space folded
/// into one space.
pub fn grams(message: &str) -> BTreeSet<String> {
    let folded: Vec<char> = message.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    let mut grams: BTreeSet<String> = folded.iter().map(|c| c.to_string()).collect();
    grams.extend(folded.windows(2).map(|w| w.iter().collect::<String>()));
    grams
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grams_are_lower_case_unigrams_and_bigrams_with_spaces_folded() {
        let want: BTreeSet<String> = ["h", "hi", "i", "i ", " ", " 你", "你", "你好", "好"].map(String::from).into();
        assert_eq!(grams(" Hi  你好 "), want);
    }

    #[test]
    fn a_fitted_head_separates_what_it_was_fitted_on() {
        let thrice = |x: Features, mode: usize| std::iter::repeat_n((x, mode), 3);
        let samples: Vec<(Features, usize)> = thrice(vec![(0, 1.0)], 0)
            .chain(thrice(vec![(1, 1.0)], 3))
            .chain(thrice(vec![(0, 1.0), (2, 1.0)], 0))
            .collect();
        let head = Head::fit(&samples, 3, PENALTY_C);
        let (chat, partner) = (head.probabilities(&[(0, 1.0)]), head.probabilities(&[(1, 1.0)]));
        assert!(chat[0] > 0.8 && partner[3] > 0.8, "{chat:?} {partner:?}");
        let p = head.probabilities(&[]);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn the_shipped_heads_read_and_fit_their_vector() {
        let heads = Heads::shipped();
        assert!(!heads.grams.is_empty());
        assert_eq!(heads.words.weights.len(), 5);
        assert!(heads.words.weights.iter().all(|r| r.len() == heads.grams.len() + PREVIOUS + 1));
        assert_eq!(heads.vector, "local-multilingual-e5-small-384");
        assert!(heads.meaning.weights.iter().all(|r| r.len() == 384 + PREVIOUS + 1));
    }
}
