//! Test harness: a fresh database per test on each store, the app built on it, and
//! request helpers that return status, headers and parsed JSON.

pub mod db;
pub mod fixtures;
pub mod helpers;
pub mod hostile_glance;
pub mod http;
/// The load generator's journal (what the crash and outage tests read): the same source
/// the `cinder-attach-bench` binary writes it with.
#[allow(dead_code)]
#[path = "../../../bench/loadgen/journal.rs"]
pub mod journal;
pub mod load;
pub mod lock;
pub mod old_outbox;
pub mod patroni;
pub mod pg_cluster;
pub mod process;
pub mod qemu_host;
pub mod tgtd;

pub use db::{Backend, TestDb};
pub use http::{TestApp, TestResponse};

/// Expands each case `async fn case(app: TestApp)` into `case::sqlite` and
/// `case::postgres` tests.
macro_rules! backend_tests {
    ($($case:ident),+ $(,)?) => {
        $(
            mod $case {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    $crate::support::run_case($crate::support::Backend::Sqlite, super::$case).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    $crate::support::run_case($crate::support::Backend::Postgres, super::$case).await;
                }
            }
        )+
    };
}

/// Expands each case `async fn case(backend: Backend)` (which starts its own processes)
/// into `case::sqlite` and `case::postgres` tests.
macro_rules! process_tests {
    ($($case:ident),+ $(,)?) => {
        $(
            mod $case {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$case(crate::support::Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$case(crate::support::Backend::Postgres).await;
                }
            }
        )+
    };
}

/// Runs one case against a fresh database of `backend`, skipping Postgres (with a note)
/// only when it is not configured and we are not in CI.
pub async fn run_case<F, Fut>(backend: Backend, case: F)
where
    F: FnOnce(TestApp) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    cinder_attach::telemetry::init_for_test();
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let app = TestApp::new(db).await;
    case(app).await;
}
