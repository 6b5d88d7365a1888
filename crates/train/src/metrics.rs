//! Per-step training metrics, one JSON object a line in `RUN_DIR/metrics.jsonl`.
//!
//! Lines are only ever appended, each with a single write, so a killed process leaves at
//! worst a torn last line; readers skip lines that do not parse, and the writer starts a fresh
//! line when it finds the file not ending in a newline, so the next record is not glued to the
//! fragment. A resumed run repeats the steps after its last checkpoint: readers that need one
//! value per step keep the last record of each step ([`read_metrics`] does).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// File name of the metrics log inside the run directory.
pub const METRICS_FILE: &str = yari_io::layout::METRICS_FILE;

/// What one optimizer step measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Optimizer steps completed, this one included (1 for the first step).
    pub step: u64,
    /// Wall-clock time the step ended, seconds since the Unix epoch.
    pub time_unix_s: f64,
    /// Total loss: `policy_loss + value_loss_weight * value_loss + soft_policy_weight *
    /// soft_policy_ce + short_term_value_weight * short_term_value_ce`.
    pub loss: f64,
    /// Policy loss as KL divergence from the search target (cross-entropy minus the target's
    /// entropy): same gradient as the cross-entropy, but 0 for a perfect fit, so it is
    /// comparable across generations whose targets are sharper or flatter.
    pub policy_loss: f64,
    /// Policy cross-entropy against the search target, nats.
    pub policy_ce: f64,
    /// Soft policy head's cross-entropy against the softened search target, nats (0 for a
    /// net without that head, and in records written before it existed).
    #[serde(default)]
    pub soft_policy_ce: f64,
    /// Short-term value head's WDL cross-entropy, mean over its horizons, nats (0 for a net
    /// without that head, and in records written before it existed).
    #[serde(default)]
    pub short_term_value_ce: f64,
    /// WDL cross-entropy against the game result from the side to move's view, nats.
    pub value_loss: f64,
    /// Learning rate used for this step.
    pub lr: f64,
    /// Global L2 norm of the gradient before clipping.
    pub grad_norm: f64,
    /// Training throughput of this step (positions per second, wall clock, data waits
    /// included).
    pub samples_per_s: f64,
    /// Positions per batch.
    pub batch_size: usize,
    /// Positions in the replay window the batch was drawn from.
    pub window: usize,
}

/// Appends metrics records to the log, and the same scalars to a TensorBoard event file in
/// the `tensorboard/` folder beside it (opened at the first record, a new file per session).
pub struct MetricsWriter {
    log: yari_io::jsonl::Writer,
    events_dir: Option<std::path::PathBuf>,
    events: Option<yari_io::tensorboard::EventWriter>,
}

impl MetricsWriter {
    /// Opens (creating) the log for appending, terminating a torn last line first.
    pub fn open(path: &Path) -> Result<Self, TrainError> {
        Ok(Self {
            log: yari_io::jsonl::Writer::open(path)?,
            events_dir: path
                .parent()
                .map(|dir| dir.join(yari_io::layout::TENSORBOARD_DIR)),
            events: None,
        })
    }

    /// Appends one record as one line (not synced: a lost step is redone from the checkpoint),
    /// and its scalars as one TensorBoard event at the record's step (`train/...` tags).
    pub fn append(&mut self, m: &StepMetrics) -> Result<(), TrainError> {
        self.log.append(m)?;
        if self.events.is_none() {
            if let Some(dir) = &self.events_dir {
                self.events = Some(yari_io::tensorboard::EventWriter::create(
                    dir,
                    "yari",
                    m.time_unix_s,
                )?);
            }
        }
        if let Some(events) = &mut self.events {
            let mut scalars = vec![
                ("train/loss", m.loss),
                ("train/policy_loss", m.policy_loss),
                ("train/value_loss", m.value_loss),
                ("train/lr", m.lr),
                ("train/grad_norm", m.grad_norm),
                ("train/samples_per_s", m.samples_per_s),
                ("train/window", m.window as f64),
            ];
            // Only a net with the auxiliary head has its loss.
            if m.soft_policy_ce != 0.0 {
                scalars.push(("train/soft_policy_ce", m.soft_policy_ce));
            }
            if m.short_term_value_ce != 0.0 {
                scalars.push(("train/short_term_value_ce", m.short_term_value_ce));
            }
            events.scalars(m.step, m.time_unix_s, &scalars)?;
        }
        Ok(())
    }
}

/// Reads the log: records in step order, one per step (the last written wins, so steps
/// repeated by a resumed run show the values of the run that continued), unparsable lines
/// (a torn last line) skipped. A missing file reads as empty.
pub fn read_metrics(path: &Path) -> Result<Vec<StepMetrics>, TrainError> {
    let read = yari_io::jsonl::read::<StepMetrics>(path)?;
    let mut by_step = std::collections::BTreeMap::new();
    for m in read.records {
        by_step.insert(m.step, m);
    }
    Ok(by_step.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn record(step: u64, loss: f64) -> StepMetrics {
        StepMetrics {
            step,
            time_unix_s: 0.0,
            loss,
            policy_loss: 0.0,
            policy_ce: 0.0,
            soft_policy_ce: 0.0,
            short_term_value_ce: 0.0,
            value_loss: 0.0,
            lr: 0.1,
            grad_norm: 1.0,
            samples_per_s: 10.0,
            batch_size: 4,
            window: 100,
        }
    }

    #[test]
    fn torn_lines_are_skipped_and_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(METRICS_FILE);
        let mut w = MetricsWriter::open(&path).unwrap();
        w.append(&record(1, 3.0)).unwrap();
        w.append(&record(2, 2.0)).unwrap();
        drop(w);
        // A kill mid-write leaves half a line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"step\":3,\"lo").unwrap();
        drop(f);
        assert_eq!(read_metrics(&path).unwrap().len(), 2);
        // The resumed run repeats step 2 and goes on.
        let mut w = MetricsWriter::open(&path).unwrap();
        w.append(&record(2, 1.5)).unwrap();
        w.append(&record(3, 1.0)).unwrap();
        let m = read_metrics(&path).unwrap();
        assert_eq!(m.iter().map(|m| m.step).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(m[1].loss, 1.5);
    }
}
