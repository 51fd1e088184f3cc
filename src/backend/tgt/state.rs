//! What tgtd holds, read from the text of `show` (the same text `tgtadm --op show --mode
//! target` prints): per target its sessions, logical units, bound accounts and ACL.

/// One target as tgtd shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetState {
    pub tid: u32,
    pub iqn: String,
    pub sessions: Vec<SessionState>,
    pub luns: Vec<LunState>,
    pub accounts: Vec<String>,
    /// Initiator names (and addresses) allowed to log in.
    pub acl: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionState {
    pub sid: u64,
    pub initiator: String,
    pub connections: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LunState {
    pub lun: u64,
    pub read_only: bool,
    pub path: Option<String>,
}

impl TargetState {
    pub fn lun(&self, lun: u64) -> Option<&LunState> {
        self.luns.iter().find(|l| l.lun == lun)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Other,
    Sessions,
    Luns,
    Accounts,
    Acl,
}

/// Every target in a `show` text. Lines it does not know are skipped, so a newer tgtd
/// that adds fields still parses.
pub fn parse_targets(text: &str) -> Vec<TargetState> {
    parse(text, |_| true)
}

/// Only the targets with these ids: the text lists every target tgtd has, and a change to
/// one volume needs its two (the others' lines are skipped unread).
pub fn parse_targets_of(text: &str, tids: &[u32]) -> Vec<TargetState> {
    parse(text, |tid| tids.contains(&tid))
}

fn parse(text: &str, wanted: impl Fn(u32) -> bool) -> Vec<TargetState> {
    let mut targets: Vec<TargetState> = Vec::new();
    let mut section = Section::Other;
    let mut keeping = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Target ") {
            if let Some((tid, iqn)) = rest.split_once(": ") {
                if let Ok(tid) = tid.parse() {
                    keeping = wanted(tid);
                    if keeping {
                        targets.push(TargetState {
                            tid,
                            iqn: iqn.trim().to_owned(),
                            ..Default::default()
                        });
                    }
                    section = Section::Other;
                    continue;
                }
            }
        }
        if !keeping {
            continue;
        }
        let Some(target) = targets.last_mut() else {
            continue;
        };
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        if indent == 4 {
            section = match trimmed {
                "I_T nexus information:" => Section::Sessions,
                "LUN information:" => Section::Luns,
                "Account information:" => Section::Accounts,
                "ACL information:" => Section::Acl,
                _ => Section::Other,
            };
            continue;
        }
        match section {
            Section::Sessions => {
                if let Some(sid) = trimmed.strip_prefix("I_T nexus: ") {
                    target.sessions.push(SessionState {
                        sid: sid.trim().parse().unwrap_or_default(),
                        ..Default::default()
                    });
                } else if let Some(session) = target.sessions.last_mut() {
                    if let Some(initiator) = trimmed.strip_prefix("Initiator: ") {
                        // "Initiator: iqn... alias: none"
                        let name = initiator.split(" alias:").next().unwrap_or(initiator);
                        session.initiator = name.trim().to_owned();
                    } else if let Some(cid) = trimmed.strip_prefix("Connection: ") {
                        if let Ok(cid) = cid.trim().parse() {
                            session.connections.push(cid);
                        }
                    }
                }
            }
            Section::Luns => {
                if let Some(lun) = trimmed.strip_prefix("LUN: ") {
                    target.luns.push(LunState {
                        lun: lun.trim().parse().unwrap_or_default(),
                        ..Default::default()
                    });
                } else if let Some(lun) = target.luns.last_mut() {
                    if let Some(value) = trimmed.strip_prefix("Readonly: ") {
                        lun.read_only = value.trim() == "Yes";
                    } else if let Some(path) = trimmed.strip_prefix("Backing store path: ") {
                        let path = path.trim();
                        lun.path = (path != "None").then(|| path.to_owned());
                    }
                }
            }
            // An outgoing account is shown as "name (outgoing)"; only incoming ones guard
            // logins.
            Section::Accounts if indent == 8 && !trimmed.ends_with("(outgoing)") => {
                target.accounts.push(trimmed.to_owned());
            }
            Section::Acl if indent == 8 => target.acl.push(trimmed.to_owned()),
            _ => {}
        }
    }
    targets
}

/// The sessions in one target's `show --mode conn` text ("Session: N", then per
/// connection "Connection: C" and "Initiator: NAME").
pub fn parse_sessions(text: &str) -> Vec<SessionState> {
    let mut sessions: Vec<SessionState> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(sid) = line.strip_prefix("Session: ") {
            let sid = sid.parse().unwrap_or_default();
            if sessions.last().is_none_or(|s| s.sid != sid) {
                sessions.push(SessionState {
                    sid,
                    ..Default::default()
                });
            }
        } else if let Some(session) = sessions.last_mut() {
            if let Some(cid) = line.strip_prefix("Connection: ") {
                if let Ok(cid) = cid.parse() {
                    session.connections.push(cid);
                }
            } else if let Some(initiator) = line.strip_prefix("Initiator: ") {
                session.initiator = initiator.to_owned();
            }
        }
    }
    sessions
}

/// The account names in `show --mode account` ("Account list:" then one per line).
pub fn parse_accounts(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| !line.starts_with("Account list:"))
        .skip(1)
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| name.split(' ').next().unwrap_or(name).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cut from tgtd 1.0.85's own output.
    const SHOWN: &str = "\
Target 1: iqn.2010-10.org.test:volume-1
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
        I_T nexus: 3
            Initiator: iqn.2004-10.org.test:host-a alias: none
            Connection: 0
                IP Address: 127.0.0.1
    LUN information:
        LUN: 0
            Type: controller
            Readonly: No
            Backing store path: None
        LUN: 1
            Type: disk
            Size: 67 MB, Block size: 512
            Readonly: Yes
            Backing store type: rdwr
            Backing store path: /tmp/tg/vol1
            Backing store flags: 
    Account information:
        u1
        out1 (outgoing)
    ACL information:
        iqn.2004-10.org.test:host-a
Target 2: iqn.2010-10.org.test:volume-1-ro
    System information:
        Driver: iscsi
        State: ready
    I_T nexus information:
    LUN information:
    Account information:
    ACL information:
";

    #[test]
    fn targets_sessions_luns_accounts_and_acls() {
        let targets = parse_targets(SHOWN);
        assert_eq!(targets.len(), 2);
        let first = &targets[0];
        assert_eq!(first.tid, 1);
        assert_eq!(first.iqn, "iqn.2010-10.org.test:volume-1");
        assert_eq!(
            first.sessions,
            vec![SessionState {
                sid: 3,
                initiator: "iqn.2004-10.org.test:host-a".into(),
                connections: vec![0],
            }]
        );
        assert_eq!(first.luns.len(), 2);
        let disk = first.lun(1).unwrap();
        assert!(disk.read_only);
        assert_eq!(disk.path.as_deref(), Some("/tmp/tg/vol1"));
        assert_eq!(first.lun(0).unwrap().path, None);
        assert_eq!(first.accounts, vec!["u1"]);
        assert_eq!(first.acl, vec!["iqn.2004-10.org.test:host-a"]);
        assert_eq!(
            targets[1],
            TargetState {
                tid: 2,
                iqn: "iqn.2010-10.org.test:volume-1-ro".into(),
                ..Default::default()
            }
        );
        assert!(parse_targets("").is_empty());
        let second = parse_targets_of(SHOWN, &[2, 9]);
        assert_eq!(second, vec![targets[1].clone()]);
        assert_eq!(parse_targets_of(SHOWN, &[1]), vec![targets[0].clone()]);
    }

    #[test]
    fn one_targets_sessions() {
        let text = "Session: 1\n    Connection: 0\n        Initiator: iqn.h:a\n        IP Address: 127.0.0.1\n\
                    Session: 4\n    Connection: 0\n        Initiator: iqn.h:b\n        IP Address: 127.0.0.1\n";
        assert_eq!(
            parse_sessions(text),
            vec![
                SessionState {
                    sid: 1,
                    initiator: "iqn.h:a".into(),
                    connections: vec![0]
                },
                SessionState {
                    sid: 4,
                    initiator: "iqn.h:b".into(),
                    connections: vec![0]
                },
            ]
        );
        assert!(parse_sessions("").is_empty());
    }

    #[test]
    fn account_list() {
        assert_eq!(
            parse_accounts("Account list:\n    u9\n    u1\n    o (outgoing)\n"),
            vec!["u9", "u1", "o"]
        );
        assert!(parse_accounts("Account list:\n").is_empty());
    }
}
