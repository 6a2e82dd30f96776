//! The inspector: superbatch sampling to runtime files and Belady changeset
//! precomputation (Ginex §3.1, §3.4; Ginex++ §4.2).

pub mod changeset;
pub mod runfile;
pub mod superbatch;
