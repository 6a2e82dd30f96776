//! How many of a superbatch's batches the inspector samples hop by hop
//! together ([`crate::inspect::superbatch`]; the memory planner resolves
//! `auto`, [`crate::exec::plan`]).

use serde::{Serialize, Serializer};

use crate::error::{Error, Result};

/// How many batches the inspector samples in lockstep: each hop asks for
/// the lists of all the round's targets at once, in node order (the order
/// of the topology file), so each list is read once for the round and
/// neighbouring lists are read together
/// ([`sample_in_lockstep`](crate::sample::sampler::sample_in_lockstep)).
/// The batches are the same whichever is chosen; a larger round reads
/// fewer and larger pieces of the topology but holds more batches at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lockstep {
    /// The `--memory` planner chooses: the whole superbatch where its
    /// batches fit the plan's share for them
    /// ([`crate::exec::plan::LockstepPlan`]), otherwise rounds. A run
    /// without a plan samples in rounds.
    #[default]
    Auto,
    /// Rounds of workers × 4 batches, at least
    /// [`MIN_SAMPLING_ROUND`](crate::inspect::superbatch::MIN_SAMPLING_ROUND).
    Rounds,
    /// The superbatch's batches in one round.
    Superbatch,
}

impl Serialize for Lockstep {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Lockstep {
    /// Every mode, in the order the help lists them.
    pub const ALL: [Lockstep; 3] = [Lockstep::Auto, Lockstep::Rounds, Lockstep::Superbatch];

    /// Parses `auto`, `rounds` or `superbatch`.
    pub fn parse(s: &str) -> Result<Lockstep> {
        Error::parse_name(s, "lockstep", &Lockstep::ALL, Lockstep::name)
    }

    /// The name [`parse`](Self::parse) takes.
    pub fn name(self) -> &'static str {
        match self {
            Lockstep::Auto => "auto",
            Lockstep::Rounds => "rounds",
            Lockstep::Superbatch => "superbatch",
        }
    }
}
