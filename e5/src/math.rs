//! `exp` and `erf` as straight-line float code, so the compiler vectorises the loops that call
//! them (softmax, GELU); libm's versions are calls with branches.

/// e^x, relative error < 2e-7 over the range of f32 (Cephes' `expf` polynomial).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    let x = x.clamp(-87.3, 88.7);
    // `shifted` holds round(x·log2 e) in its low mantissa bits (1.5·2²³ + k).
    let shifted = x * LOG2E + ROUND;
    let k = shifted - ROUND;
    let r = x - k * LN2_HI - k * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 5e-1;
    let e = p * r * r + r + 1.0;
    // 2^k from the integer in `shifted`'s bits, integer ops only (no float-to-int cast, so the
    // loop vectorises): k + 127 into the exponent field; k ∈ [-126, 128] after the clamp.
    let k_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    e * f32::from_bits(k_bits.wrapping_add(127) << 23)
}

/// erf(x), absolute error < 2e-7 (Abramowitz & Stegun 7.1.26).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t * (0.254_829_6 + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    if x < 0.0 { -y } else { y }
}

/// The larger of two floats, without NaN handling (so loops using it vectorise).
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exp_and_erf_match_libm() {
        let mut x = -30.0f32;
        while x < 30.0 {
            let (want, got) = (x.exp(), super::exp(x));
            assert!(((got - want) / want).abs() < 1e-6, "exp({x}) = {got}, want {want}");
            let (want, got) = (libm::erff(x / 4.0), super::erf(x / 4.0));
            assert!((got - want).abs() < 1e-6, "erf({}) = {got}, want {want}", x / 4.0);
            x += 0.013;
        }
        assert!(super::exp(-200.0) < 1e-37, "underflows to (almost) zero");
    }
}
