//! The other cycles (`--mode volumes`, `--mode snapshots`): a volume created and deleted,
//! or a snapshot of the client's own volume taken and deleted. Each waits for
//! `available` (at once on cinder-attach, whose create answers with it; polled on a
//! Cinder that answers `creating`) and for the delete to finish.

use std::time::Duration;

use axum::http::Method;
use serde_json::json;

use crate::client::Answer;
use crate::run::{expect, ClientResult, CycleError, Runner};

/// `path`'s `key` object until its status is `available`, or the object is gone (404)
/// when `gone` is asked for; polled every 20 ms for at most a minute.
async fn wait_for(
    runner: &Runner<'_>,
    result: &mut ClientResult,
    op: (&'static str, &'static str),
    (path, key): (&str, &str),
    first: &Answer,
    gone: bool,
) -> Result<(), CycleError> {
    let settled = |a: &Answer| {
        if gone {
            a.status == 404
        } else {
            a.body[key]["status"] == "available"
        }
    };
    if !gone && settled(first) {
        return Ok(());
    }
    for _ in 0..3000 {
        let shown = runner
            .step(result, op, None, (Method::GET, path.to_owned(), None), 200)
            .await?;
        if settled(&shown) {
            return Ok(());
        }
        if shown.body[key]["status"]
            .as_str()
            .is_some_and(|s| s.starts_with("error"))
        {
            return Err(CycleError::Answered(format!(
                "{path} went to {}",
                shown.body[key]["status"]
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(CycleError::Answered(format!("{path} did not settle")))
}

impl Runner<'_> {
    /// Create a 1 GiB volume, wait for it, delete it, wait until it is gone.
    pub(crate) async fn volume_cycle(&self, result: &mut ClientResult) -> Result<bool, CycleError> {
        let body = json!({"volume": {"size": 1, "name": "bench-cycle"}});
        let created = self
            .step(
                result,
                ("volume_create", "create"),
                None,
                (Method::POST, "/volumes".to_owned(), Some(body)),
                202,
            )
            .await?;
        expect(&created, 202, "volume create")?;
        let id = created.body["volume"]["id"]
            .as_str()
            .ok_or_else(|| CycleError::Answered("no volume id".to_owned()))?
            .to_owned();
        let path = format!("/volumes/{id}");
        wait_for(
            self,
            result,
            ("volume_show", "show"),
            (&path, "volume"),
            &created,
            false,
        )
        .await?;
        let deleted = self
            .step(
                result,
                ("volume_delete", "delete"),
                None,
                (Method::DELETE, path.clone(), None),
                202,
            )
            .await?;
        expect(&deleted, 202, "volume delete")?;
        wait_for(
            self,
            result,
            ("volume_show", "show"),
            (&path, "volume"),
            &deleted,
            true,
        )
        .await?;
        Ok(true)
    }

    /// Take a snapshot of the client's own volume, wait for it, delete it, wait until
    /// it is gone.
    pub(crate) async fn snapshot_cycle(
        &self,
        result: &mut ClientResult,
    ) -> Result<bool, CycleError> {
        let body = json!({"snapshot": {"volume_id": self.volume, "name": "bench-cycle"}});
        let created = self
            .step(
                result,
                ("snapshot_create", "create"),
                None,
                (Method::POST, "/snapshots".to_owned(), Some(body)),
                202,
            )
            .await?;
        expect(&created, 202, "snapshot create")?;
        let id = created.body["snapshot"]["id"]
            .as_str()
            .ok_or_else(|| CycleError::Answered("no snapshot id".to_owned()))?
            .to_owned();
        let path = format!("/snapshots/{id}");
        wait_for(
            self,
            result,
            ("snapshot_show", "show"),
            (&path, "snapshot"),
            &created,
            false,
        )
        .await?;
        let deleted = self
            .step(
                result,
                ("snapshot_delete", "delete"),
                None,
                (Method::DELETE, path.clone(), None),
                202,
            )
            .await?;
        expect(&deleted, 202, "snapshot delete")?;
        wait_for(
            self,
            result,
            ("snapshot_show", "show"),
            (&path, "snapshot"),
            &deleted,
            true,
        )
        .await?;
        Ok(true)
    }
}
