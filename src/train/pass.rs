//! One pass of the data path feeding the model: the executor's batches are
//! gathered on a producer thread and handed through a bounded channel, so
//! gathering batch `i + 1` overlaps the model's compute on batch `i`.
//! Training, evaluation and prediction all go through it.

use std::sync::mpsc::sync_channel;

use crate::error::{Error, Result};
use crate::exec::epoch::{run_epoch, EpochBatch, EpochConfig, EpochReport};
use crate::store::Store;
use crate::train::model::Hop;
use crate::train::trainer::TrainBatch;

/// The trainer's batch of an executor batch: rows decoded to f32, hops
/// annotated with the store's schema, the seeds' labels, GCN's degrees.
pub(crate) fn to_train_batch(
    b: &EpochBatch<'_>,
    store: &Store,
    labels: &[i32],
) -> Result<TrainBatch> {
    let dim = store.feature_dim() as usize;
    let mut features = vec![0f32; b.ids.len() * dim];
    store.dtype().decode_to_f32(dim, b.rows, &mut features);
    let hops = b
        .hops
        .iter()
        .map(|h| {
            let mut hop = Hop::new(
                h.num_dst,
                h.num_src,
                h.src.iter().map(|&x| i64::from(x)).collect(),
                h.dst.iter().map(|&x| i64::from(x)).collect(),
            );
            hop.weights = h.weights.clone();
            // Local index i is the batch's i-th sampled id.
            hop.annotate(b.ids, store.schema())?;
            Ok(hop)
        })
        .collect::<Result<_>>()?;
    let labels = b.ids[..b.num_seeds]
        .iter()
        .map(|&v| labels.get(v as usize).map_or(-1, |&l| i64::from(l)))
        .collect();
    // GCN's d̂: the graph's in-degree (CSC indptr) plus the self-loop.
    let indptr = store.indptr();
    let degrees = b
        .ids
        .iter()
        .map(|&v| (indptr[v as usize + 1] - indptr[v as usize]) as f32 + 1.0)
        .collect();
    Ok(TrainBatch {
        ids: b.ids.to_vec(),
        features,
        dim,
        hops,
        labels,
        degrees,
        link: b.link.cloned(),
    })
}

/// Runs one pass of the data path over `data` and feeds every batch to
/// `step` on this thread while the next is gathered on another.
pub(crate) fn pass(
    store: &Store,
    data: &EpochConfig,
    labels: &[i32],
    step: &mut dyn FnMut(TrainBatch) -> Result<()>,
) -> Result<EpochReport> {
    let (tx, rx) = sync_channel::<TrainBatch>(2);
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            run_epoch(store, data, &mut |b| {
                tx.send(to_train_batch(b, store, labels)?)
                    .map_err(|_| Error::Cancelled("the trainer stopped".into()))
            })
        });
        let mut failure = None;
        for batch in rx.iter() {
            if let Err(e) = step(batch) {
                failure = Some(e);
                break;
            }
        }
        // Dropping the receiver stops the producer at its next send.
        drop(rx);
        let produced = producer
            .join()
            .map_err(|_| Error::internal("the data-preparation thread panicked"))?;
        match failure {
            Some(e) => Err(e),
            None => produced,
        }
    })
}
