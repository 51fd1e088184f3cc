//! `--journal`: one JSON line per attachment request and what came of it, so that a
//! crash test can compare what the server acknowledged with what the database holds.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// What the client learnt from one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A success status: the server says the change is made.
    Ok,
    /// An error status: the server says nothing changed.
    Failed,
    /// No answer (connection refused or cut), or 504 (cut off while committing): the
    /// change may or may not be made.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub client: usize,
    /// `create`, `complete`, `delete`, or `list` (the clean-up after a failure).
    pub op: String,
    pub volume: String,
    /// Unknown for a create that got no answer.
    pub attachment: Option<String>,
    pub outcome: Outcome,
    pub status: Option<u16>,
    /// How long the request took, answered or not.
    pub elapsed_ms: u64,
    /// The error code of a fault body (`serviceUnavailable`, ...).
    pub fault: Option<String>,
}

pub struct Journal {
    out: Mutex<BufWriter<std::fs::File>>,
}

impl Journal {
    pub fn create(path: &Path) -> Result<Journal, String> {
        let file = std::fs::File::create(path)
            .map_err(|e| format!("cannot write the journal {}: {e}", path.display()))?;
        Ok(Journal {
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Writes the line through at once: a reader may be watching the file.
    pub fn record(&self, entry: &Entry) {
        let line = serde_json::to_string(entry).unwrap_or_default();
        if let Ok(mut out) = self.out.lock() {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}
