//! Use cases: each takes the caller, asks the domain's rules and the store, and returns
//! domain values or a `DomainError`.

pub mod attachments;
