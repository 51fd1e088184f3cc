//! Time source. Everything that stamps a row asks a `Clock`, so tests can pin time.

use chrono::{DateTime, SubsecRound, Utc};

pub trait Clock: Send + Sync + 'static {
    /// Current time, truncated to microseconds: the precision both stores keep and the
    /// API shows (`YYYY-MM-DDTHH:MM:SS.ffffff`).
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now().trunc_subsecs(6)
    }
}
