//! Latency samples and their percentiles.

use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub struct Samples {
    micros: Vec<u64>,
}

impl Samples {
    pub fn record(&mut self, elapsed: Duration) {
        self.micros.push(elapsed.as_micros() as u64);
    }

    pub fn merge(&mut self, other: Samples) {
        self.micros.extend(other.micros);
    }

    pub fn len(&self) -> usize {
        self.micros.len()
    }

    /// `(p50, p95, p99, max)` in milliseconds.
    pub fn summary(&self) -> (f64, f64, f64, f64) {
        if self.micros.is_empty() {
            return (0.0, 0.0, 0.0, 0.0);
        }
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let at = |q: f64| {
            let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[index] as f64 / 1000.0
        };
        (
            at(0.50),
            at(0.95),
            at(0.99),
            *sorted.last().unwrap_or(&0) as f64 / 1000.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut s = Samples::default();
        for ms in 1..=100 {
            s.record(Duration::from_millis(ms));
        }
        assert_eq!(s.summary(), (50.0, 95.0, 99.0, 100.0));
        assert_eq!(Samples::default().summary(), (0.0, 0.0, 0.0, 0.0));
    }
}
