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

/// One kind of object a cycle makes and removes: its collection, its key in answers,
/// and the names its requests are timed under.
struct Kind {
    collection: &'static str,
    key: &'static str,
    ops: [&'static str; 3],
}

const VOLUME: Kind = Kind {
    collection: "/volumes",
    key: "volume",
    ops: ["volume_create", "volume_show", "volume_delete"],
};

const SNAPSHOT: Kind = Kind {
    collection: "/snapshots",
    key: "snapshot",
    ops: ["snapshot_create", "snapshot_show", "snapshot_delete"],
};

impl Runner<'_> {
    /// Create a 1 GiB volume, wait for it, delete it, wait until it is gone.
    pub(crate) async fn volume_cycle(&self, result: &mut ClientResult) -> Result<bool, CycleError> {
        let body = json!({"volume": {"size": 1, "name": "bench-cycle"}});
        self.make_and_remove(result, &VOLUME, body).await
    }

    /// Take a snapshot of the client's own volume, wait for it, delete it, wait until
    /// it is gone.
    pub(crate) async fn snapshot_cycle(
        &self,
        result: &mut ClientResult,
    ) -> Result<bool, CycleError> {
        let body = json!({"snapshot": {"volume_id": self.volume, "name": "bench-cycle"}});
        self.make_and_remove(result, &SNAPSHOT, body).await
    }

    async fn make_and_remove(
        &self,
        result: &mut ClientResult,
        kind: &Kind,
        body: serde_json::Value,
    ) -> Result<bool, CycleError> {
        let [create_op, show_op, delete_op] = kind.ops;
        let request = (Method::POST, kind.collection.to_owned(), Some(body));
        let created = self
            .step(result, (create_op, "create"), None, request, 202)
            .await?;
        expect(&created, 202, create_op)?;
        let id = created.body[kind.key]["id"]
            .as_str()
            .ok_or_else(|| CycleError::Answered(format!("no {} id", kind.key)))?
            .to_owned();
        let path = format!("{}/{id}", kind.collection);
        let show = (show_op, "show");
        wait_for(self, result, show, (&path, kind.key), &created, false).await?;
        let request = (Method::DELETE, path.clone(), None);
        let deleted = self
            .step(result, (delete_op, "delete"), None, request, 202)
            .await?;
        expect(&deleted, 202, delete_op)?;
        wait_for(self, result, show, (&path, kind.key), &deleted, true).await?;
        Ok(true)
    }
}
