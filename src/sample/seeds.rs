//! The random order of an epoch: its shuffled seeds and the key of each
//! batch, both derived from the run seed, so every batch of every run is
//! reproducible (node and link epochs alike).

use crate::rng::{stream_seed, Wyrand};

/// Streams of the run seed ([`stream_seed`]'s purposes).
const PURPOSE_SHUFFLE: u64 = 11;
const PURPOSE_BATCH: u64 = 12;

/// The training seeds of `epoch`, shuffled from the run seed.
pub fn epoch_order(train: &[u64], seed: u64, epoch: u64) -> Vec<u64> {
    let mut order = train.to_vec();
    let mut rng = Wyrand(stream_seed(seed, PURPOSE_SHUFFLE, epoch));
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// The random key of batch `batch` of `epoch` under the run seed.
pub fn batch_seed(seed: u64, epoch: u64, batch: u64) -> u64 {
    stream_seed(seed, PURPOSE_BATCH, stream_seed(seed, epoch, batch))
}
