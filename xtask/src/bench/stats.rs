//! Medians and percentiles of the samples.

#[derive(Clone, Copy)]
pub struct Stat {
    pub median: f64,
    /// The bad tail: the 95th percentile of times and sizes, the 5th of rates.
    pub p95: f64,
    pub n: usize,
}

impl Stat {
    pub fn of(samples: &[f64], higher_is_better: bool) -> Stat {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Stat { median: f64::NAN, p95: f64::NAN, n: 0 };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        // Nearest rank.
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Stat { median, p95: if higher_is_better { rank(0.05) } else { rank(0.95) }, n }
    }
}
