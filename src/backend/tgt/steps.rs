//! The steps a plan decides, done on tgtd one by one, and an export's removal.

use super::plan::{Step, VOLUME_LUN};
use super::state::TargetState;
use super::TgtBackend;
use crate::backend::BackendError;
use crate::domain::export::TargetExport;

impl TgtBackend {
    pub(super) async fn apply(
        &self,
        steps: &[Step],
        export: &TargetExport,
        path: &str,
        targets: &[TargetState],
    ) -> Result<(), BackendError> {
        let control = &self.options.control;
        for step in steps {
            let done = match step {
                Step::Unbind { tid, initiator } => control.unbind_initiator(*tid, initiator).await,
                Step::EndConnection { tid, sid, cid } => {
                    control.end_connection(*tid, *sid, *cid).await
                }
                Step::DeleteTarget { tid } => {
                    // A target on one of our ids that another tool made is not ours to
                    // remove: refuse rather than cut off someone else's hosts.
                    let holder = targets.iter().find(|t| t.tid == *tid);
                    if holder.is_some_and(|t| self.volume_of(&t.iqn).is_none()) {
                        return Err(self.failed(
                            "export the volume",
                            format!(
                                "target id {tid} is held by a target this backend did not make"
                            ),
                        ));
                    }
                    control.delete_target(*tid).await
                }
                Step::NewAccount => {
                    control
                        .new_account(&export.auth_username, &export.auth_password)
                        .await
                }
                Step::NewTarget { tid, iqn } => control.new_target(*tid, iqn).await,
                Step::NewLun { tid } => control.new_lun(*tid, VOLUME_LUN, path).await,
                Step::ReadOnly { tid, read_only } => {
                    control.set_read_only(*tid, VOLUME_LUN, *read_only).await
                }
                Step::BindAccount { tid } => {
                    control.bind_account(*tid, &export.auth_username).await
                }
                Step::Bind { tid, initiator } => control.bind_initiator(*tid, initiator).await,
            };
            done.map_err(|e| self.failed("update the volume's export", e))?;
        }
        Ok(())
    }

    /// Removes both targets and the account of an export (sessions end with them).
    pub(super) async fn unexport(&self, export: &TargetExport) -> Result<(), BackendError> {
        let control = &self.options.control;
        for tid in [export.read_write_tid(), export.read_only_tid()] {
            control
                .delete_target(tid)
                .await
                .map_err(|e| self.failed("remove the volume's targets", e))?;
        }
        control
            .delete_account(&export.auth_username)
            .await
            .map_err(|e| self.failed("remove the volume's CHAP account", e))
    }
}
