//! Medians and percentiles of the samples.

#[derive(Clone, Copy)]
pub struct Stat {
    pub median: f64,
    /// The bad tail: the 95th percentile of times and sizes, the 5th of rates.
    pub p95: f64,
    /// The far tail, the same way round: the 99th percentile (the 1st of rates). With fewer than
    /// 100 samples it is the worst or next to worst, which is what it should show.
    pub p99: f64,
    pub n: usize,
}

impl Stat {
    pub fn of(samples: &[f64], higher_is_better: bool) -> Stat {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Stat { median: f64::NAN, p95: f64::NAN, p99: f64::NAN, n: 0 };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        // Nearest rank.
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        let tail = |high: f64, low: f64| if higher_is_better { rank(low) } else { rank(high) };
        Stat { median, p95: tail(0.95, 0.05), p99: tail(0.99, 0.01), n }
    }
}

#[cfg(test)]
mod tests {
    use super::Stat;

    #[test]
    fn tails_are_the_bad_end() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let t = Stat::of(&v, false);
        assert_eq!((t.median, t.p95, t.p99, t.n), (50.5, 95.0, 99.0, 100));
        let r = Stat::of(&v, true);
        assert_eq!((r.p95, r.p99), (5.0, 1.0));
        // Fewer than 100 samples: p99 is the worst one.
        let few = Stat::of(&[3.0, 1.0, 2.0, f64::NAN], false);
        assert_eq!((few.median, few.p95, few.p99, few.n), (2.0, 3.0, 3.0, 3));
    }
}
