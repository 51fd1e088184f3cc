//! tgtd's management socket (`/var/run/tgtd/socket.N`), the channel `tgtadm` itself uses:
//! one request per connection, a fixed header followed by `key=value,...` parameters, and
//! a status with text in answer. Talking to it directly costs microseconds where running
//! `tgtadm` costs a process, and keeps CHAP secrets off every command line.

use std::path::PathBuf;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// `enum tgtadm_mode` (usr/tgtadm.h).
#[derive(Debug, Clone, Copy)]
enum Mode {
    System = 0,
    Target = 1,
    Device = 2,
    Connection = 6,
    Account = 7,
}

/// `enum tgtadm_op`.
#[derive(Debug, Clone, Copy)]
enum Op {
    New = 0,
    Delete = 1,
    Show = 2,
    Bind = 3,
    Unbind = 4,
    Update = 5,
}

/// `struct tgtadm_req` is 120 bytes; `struct tgtadm_rsp` 8.
const REQUEST_HEADER: usize = 120;
const RESPONSE_HEADER: usize = 8;
/// `tid` for requests about no target in particular.
const NO_TARGET: i32 = -1;
/// `lun` for requests about no logical unit in particular.
const LUN_UNSET: u64 = u64::MAX;
/// A `show` of thousands of targets is a few MB; anything far above is not tgtd.
const MAX_ANSWER: usize = 256 << 20;

/// tgtd's answer codes (`enum tgtadm_errno`, usr/tgtadm_error.h) this driver tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NoTarget = 4,
    NoLun = 5,
    NoSession = 6,
    NoConnection = 7,
    NoBinding = 8,
    TargetExists = 9,
    LunExists = 10,
    BindingExists = 11,
    AclExists = 12,
    AclMissing = 13,
    UserExists = 14,
    NoUser = 15,
    Other = -1,
}

impl Refusal {
    fn from_code(code: u32) -> Refusal {
        use Refusal::*;
        [
            NoTarget,
            NoLun,
            NoSession,
            NoConnection,
            NoBinding,
            TargetExists,
            LunExists,
            BindingExists,
            AclExists,
            AclMissing,
            UserExists,
            NoUser,
        ]
        .into_iter()
        .find(|r| *r as i64 == i64::from(code))
        .unwrap_or(Other)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    #[error("tgtd is not answering on {socket}: {detail}")]
    Unreachable { socket: String, detail: String },
    /// tgtd refused the request; `code` is its `tgtadm_errno`. No request text is kept,
    /// so a secret in it can never reach a message.
    #[error("tgtd refused to {what} (tgtadm error {code})")]
    Refused {
        what: &'static str,
        code: u32,
        refusal: Refusal,
    },
}

impl ControlError {
    pub fn is(&self, wanted: Refusal) -> bool {
        matches!(self, ControlError::Refused { refusal, .. } if *refusal == wanted)
    }
}

/// One request, as `tgtadm` would build it.
struct Request {
    what: &'static str,
    mode: Mode,
    op: Op,
    tid: i32,
    sid: u64,
    lun: u64,
    cid: u32,
    force: bool,
    params: String,
}

impl Request {
    fn new(what: &'static str, mode: Mode, op: Op) -> Self {
        Request {
            what,
            mode,
            op,
            tid: NO_TARGET,
            sid: 0,
            lun: LUN_UNSET,
            cid: 0,
            force: false,
            params: String::new(),
        }
    }

    fn tid(mut self, tid: u32) -> Self {
        self.tid = i32::try_from(tid).unwrap_or(i32::MAX);
        self
    }

    fn params(mut self, params: String) -> Self {
        self.params = params;
        self
    }

    fn encode(&self) -> Vec<u8> {
        let mut body = self.params.clone().into_bytes();
        if !body.is_empty() {
            body.push(0);
        }
        let mut out = Vec::with_capacity(REQUEST_HEADER + body.len());
        out.extend((self.mode as u32).to_ne_bytes());
        out.extend((self.op as u32).to_ne_bytes());
        let mut lld = [0u8; 64];
        lld[..5].copy_from_slice(b"iscsi");
        out.extend(lld);
        let len = u32::try_from(REQUEST_HEADER + body.len()).unwrap_or(u32::MAX);
        out.extend(len.to_ne_bytes());
        out.extend(self.tid.to_ne_bytes());
        out.extend(self.sid.to_ne_bytes());
        out.extend(self.lun.to_ne_bytes());
        out.extend(self.cid.to_ne_bytes());
        // host_no, device_type (TYPE_DISK), ac_dir (incoming), pack
        out.extend([0u8; 16]);
        out.extend(u32::from(self.force).to_ne_bytes());
        debug_assert_eq!(out.len(), REQUEST_HEADER);
        out.extend(body);
        out
    }
}

/// The typed operations this driver needs, over one tgtd's socket.
#[derive(Debug, Clone)]
pub struct Control {
    socket: PathBuf,
}

impl Control {
    /// `socket_base` is tgtd's IPC path without the port (`/var/run/tgtd/socket`).
    pub fn new(socket_base: &str, control_port: u16) -> Self {
        Control {
            socket: PathBuf::from(format!("{socket_base}.{control_port}")),
        }
    }

    pub fn socket(&self) -> String {
        self.socket.display().to_string()
    }

    async fn send(&self, request: Request) -> Result<String, ControlError> {
        let unreachable = |err: std::io::Error| ControlError::Unreachable {
            socket: self.socket(),
            detail: err.to_string(),
        };
        let mut stream = UnixStream::connect(&self.socket)
            .await
            .map_err(unreachable)?;
        stream
            .write_all(&request.encode())
            .await
            .map_err(unreachable)?;
        let mut header = [0u8; RESPONSE_HEADER];
        stream.read_exact(&mut header).await.map_err(unreachable)?;
        let code = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let len = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if code != 0 {
            return Err(ControlError::Refused {
                what: request.what,
                code,
                refusal: Refusal::from_code(code),
            });
        }
        let body_len = len.saturating_sub(RESPONSE_HEADER).min(MAX_ANSWER);
        let mut body = vec![0u8; body_len];
        stream.read_exact(&mut body).await.map_err(unreachable)?;
        while body.last() == Some(&0) {
            body.pop();
        }
        Ok(String::from_utf8(body)
            .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned()))
    }

    /// Sends a change; the refusals in `done` say it is already in place (or already
    /// undone), so they count as done.
    async fn change(&self, request: Request, done: &[Refusal]) -> Result<(), ControlError> {
        match self.send(request).await {
            Ok(_) => Ok(()),
            Err(ControlError::Refused { refusal, .. }) if done.contains(&refusal) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// The full `tgtadm --op show --mode target` text: every target, its sessions, LUNs,
    /// accounts and ACL (tgtd has no per-target form of it).
    pub async fn show_targets(&self) -> Result<String, ControlError> {
        self.send(Request::new("list targets", Mode::Target, Op::Show))
            .await
    }

    /// One target's sessions and their connections (cheap: only that target); refused
    /// with `NoTarget` when tgtd has no such target.
    pub async fn show_sessions(&self, tid: u32) -> Result<String, ControlError> {
        self.send(Request::new("list a target's sessions", Mode::Connection, Op::Show).tid(tid))
            .await
    }

    pub async fn show_accounts(&self) -> Result<String, ControlError> {
        self.send(Request::new("list accounts", Mode::Account, Op::Show))
            .await
    }

    pub async fn new_target(&self, tid: u32, iqn: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("create a target", Mode::Target, Op::New)
                .tid(tid)
                .params(format!("targetname={iqn}")),
            &[Refusal::TargetExists],
        )
        .await
    }

    /// Deletes a target, ending its sessions (`--force`).
    pub async fn delete_target(&self, tid: u32) -> Result<(), ControlError> {
        let mut request = Request::new("delete a target", Mode::Target, Op::Delete).tid(tid);
        request.force = true;
        self.change(request, &[Refusal::NoTarget]).await
    }

    pub async fn new_lun(&self, tid: u32, lun: u64, path: &str) -> Result<(), ControlError> {
        let mut request = Request::new("add a logical unit", Mode::Device, Op::New)
            .tid(tid)
            .params(format!("path={path}"));
        request.lun = lun;
        self.change(request, &[Refusal::LunExists]).await
    }

    pub async fn delete_lun(&self, tid: u32, lun: u64) -> Result<(), ControlError> {
        let mut request = Request::new("remove a logical unit", Mode::Device, Op::Delete).tid(tid);
        request.lun = lun;
        self.change(request, &[Refusal::NoLun, Refusal::NoTarget])
            .await
    }

    pub async fn set_read_only(
        &self,
        tid: u32,
        lun: u64,
        read_only: bool,
    ) -> Result<(), ControlError> {
        let mut request = Request::new("make a logical unit read-only", Mode::Device, Op::Update)
            .tid(tid)
            .params(format!("readonly={}", u8::from(read_only)));
        request.lun = lun;
        self.send(request).await.map(drop)
    }

    pub async fn new_account(&self, user: &str, password: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("create a CHAP account", Mode::Account, Op::New)
                .params(format!("user={user},password={password}")),
            &[Refusal::UserExists],
        )
        .await
    }

    pub async fn delete_account(&self, user: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("delete a CHAP account", Mode::Account, Op::Delete)
                .params(format!("user={user}")),
            &[Refusal::NoUser],
        )
        .await
    }

    pub async fn bind_account(&self, tid: u32, user: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("bind a CHAP account", Mode::Account, Op::Bind)
                .tid(tid)
                .params(format!("user={user}")),
            &[Refusal::BindingExists, Refusal::UserExists],
        )
        .await
    }

    pub async fn bind_initiator(&self, tid: u32, initiator: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("allow an initiator", Mode::Target, Op::Bind)
                .tid(tid)
                .params(format!("initiator-name={initiator}")),
            &[Refusal::AclExists],
        )
        .await
    }

    pub async fn unbind_initiator(&self, tid: u32, initiator: &str) -> Result<(), ControlError> {
        self.change(
            Request::new("disallow an initiator", Mode::Target, Op::Unbind)
                .tid(tid)
                .params(format!("initiator-name={initiator}")),
            &[Refusal::AclMissing, Refusal::NoTarget],
        )
        .await
    }

    /// Ends one connection of a session; a session with none left ends.
    pub async fn end_connection(&self, tid: u32, sid: u64, cid: u32) -> Result<(), ControlError> {
        let mut request = Request::new("end a session", Mode::Connection, Op::Delete).tid(tid);
        request.sid = sid;
        request.cid = cid;
        self.change(
            request,
            &[Refusal::NoSession, Refusal::NoConnection, Refusal::NoTarget],
        )
        .await
    }

    /// Takes tgtd offline, so that it stops on SIGTERM (tests and `scripts/tgtd`).
    pub async fn go_offline(&self) -> Result<(), ControlError> {
        self.send(
            Request::new("take tgtd offline", Mode::System, Op::Update)
                .params("State=offline".to_owned()),
        )
        .await
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_have_tgtadms_layout() {
        let request = Request::new("x", Mode::Target, Op::Bind)
            .tid(7)
            .params("initiator-name=iqn.a".into());
        let bytes = request.encode();
        assert_eq!(
            bytes.len(),
            REQUEST_HEADER + "initiator-name=iqn.a".len() + 1
        );
        assert_eq!(&bytes[0..4], &1u32.to_ne_bytes());
        assert_eq!(&bytes[4..8], &3u32.to_ne_bytes());
        assert_eq!(&bytes[8..13], b"iscsi");
        assert_eq!(&bytes[72..76], &(bytes.len() as u32).to_ne_bytes());
        assert_eq!(&bytes[76..80], &7i32.to_ne_bytes());
        assert_eq!(*bytes.last().unwrap(), 0);
        let show = Request::new("y", Mode::Target, Op::Show).encode();
        assert_eq!(show.len(), REQUEST_HEADER, "no parameters, no terminator");
        assert_eq!(&show[76..80], &(-1i32).to_ne_bytes());
    }

    #[test]
    fn refusals_by_code() {
        assert_eq!(Refusal::from_code(12), Refusal::AclExists);
        assert_eq!(Refusal::from_code(4), Refusal::NoTarget);
        assert_eq!(Refusal::from_code(17), Refusal::Other);
        let refused = ControlError::Refused {
            what: "create a CHAP account",
            code: 17,
            refusal: Refusal::Other,
        };
        assert!(refused.is(Refusal::Other));
        assert_eq!(
            refused.to_string(),
            "tgtd refused to create a CHAP account (tgtadm error 17)"
        );
    }
}
