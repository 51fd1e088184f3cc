//! How a write ended. Every store write locks what it changes, asks the domain's rules,
//! and applies what they decided; it answers with one `Outcome`, so a caller never has
//! to read again to learn why nothing happened.

use std::convert::Infallible;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T, R> {
    /// Written; what the write returns.
    Done(T),
    /// The object to change does not exist (or no longer does).
    Gone,
    /// The rules refused (one of `domain::refusal`'s types); nothing was written.
    Refused(R),
}

impl<T> Outcome<T, Infallible> {
    /// The result of a write that cannot be refused: `None` when its object is gone.
    pub fn found(self) -> Option<T> {
        match self {
            Outcome::Done(value) => Some(value),
            Outcome::Gone => None,
            Outcome::Refused(never) => match never {},
        }
    }
}
