//! The executor: one epoch of data preparation under any feature-cache
//! policy, with stage timers and counters (`ginex epoch`); the `ginex`
//! policy's superbatch pipeline; the memory planner (one `--memory`
//! budget); the one builder of an epoch's configuration ([`builder`]);
//! each run's own runtime-file directory. [`curves`] is the
//! policy lab: miss-ratio curves of every policy replayed from one sampled
//! trace.

mod access_summary;
pub mod builder;
pub mod cache_split;
pub mod config;
pub mod curves;
pub mod epoch;
pub mod list_bound;
pub mod lockstep;
pub mod mmap;
pub mod page_floor;
pub mod pipeline;
pub mod plan;
mod prepared;
mod read_ahead;
pub mod report;
mod rows;
pub mod run_dir;
pub mod sampler;
pub mod staged_init;
pub mod superbatch_fit;
