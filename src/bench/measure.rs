//! Statistics over repeated measurements: median/min/max across runs, and p50/p95/max over
//! many samples (pipeline phases).

use std::time::Duration;

use serde::Serialize;

/// Median, minimum and maximum of one figure across the measured runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` when there are no values (e.g. a figure that was not measured).
    pub fn of(values: &[f64]) -> Option<Spread> {
        let sorted = sorted(values)?;
        Some(Spread {
            median: median_of_sorted(&sorted),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }

    /// How many times `other`'s median this one's is.
    pub(crate) fn ratio_to(&self, other: &Spread) -> f64 {
        self.median / other.median.max(f64::MIN_POSITIVE)
    }
}

/// p50, p95 and maximum of many samples, with the count behind them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: usize,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(values: &[f64]) -> Option<Percentiles> {
        let sorted = sorted(values)?;
        Some(Percentiles {
            count: sorted.len(),
            p50: nearest_rank(&sorted, 50.0),
            p95: nearest_rank(&sorted, 95.0),
            max: sorted[sorted.len() - 1],
        })
    }
}

/// Milliseconds as a float: every figure in the report uses this unit.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn median(values: &[f64]) -> Option<f64> {
    sorted(values).map(|s| median_of_sorted(&s))
}

fn sorted(values: &[f64]) -> Option<Vec<f64>> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// The nearest-rank `percent` percentile of `values`; `None` when there are none.
pub(crate) fn percentile(values: &[f64], percent: f64) -> Option<f64> {
    sorted(values).map(|s| nearest_rank(&s, percent))
}

/// A memory figure of a live process from `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in MiB;
/// 0 when it cannot be read.
pub(crate) fn status_mb(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|l| {
                l.strip_prefix(field)?
                    .strip_prefix(':')?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The nearest-rank percentile: always one of the samples, never an interpolation, so a p95
/// of a few samples is an observed value.
fn nearest_rank(sorted: &[f64], percent: f64) -> f64 {
    let rank = (percent / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_odd_and_even_counts() {
        let odd = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (2.0, 1.0, 3.0));
        let even = Spread::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((even.median, even.min, even.max), (2.5, 1.0, 4.0));
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of(&values).unwrap();
        assert_eq!((p.count, p.p50, p.p95, p.max), (100, 50.0, 95.0, 100.0));
        let few = Percentiles::of(&[5.0, 1.0]).unwrap();
        assert_eq!((few.p50, few.p95, few.max), (1.0, 5.0, 5.0));
        assert_eq!(percentile(&values, 99.0), Some(99.0));
        assert_eq!(percentile(&[], 99.0), None);
        let one = Percentiles::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.p95), (7.0, 7.0));
    }

    #[test]
    fn milliseconds_keep_fractions() {
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(median(&[2.0, 9.0, 4.0]), Some(4.0));
    }
}
