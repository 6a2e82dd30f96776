//! The inspector: superbatch sampling to runtime files and the Belady
//! changesets' precomputation per superbatch (Ginex §3.1, §3.4; Ginex++
//! §4.2; the changesets themselves are a cache policy: `cache::belady`).

pub mod lockstep;
pub mod runfile;
pub mod superbatch;
pub mod superbatches;
