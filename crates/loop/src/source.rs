//! Where a generation's games come from. The loop asks one [`GameSource`] for them and knows
//! nothing of how they are made (KataGo keeps its self-play manager apart from training the
//! same way): `phases::InProcess` plays them here (`yari run`), `roles::Intake` takes the
//! shards workers wrote into `incoming/` (`yari learn`). This module depends on neither.

use std::collections::BTreeMap;

use crate::run_dir::RunDir;
use crate::{Log, LoopError, RunConfig};

/// What the loop asks for.
#[derive(Clone, Copy, Debug)]
pub struct GamesRequest<'a> {
    /// The generation whose games these are.
    pub generation: u32,
    /// The best network, relative to the run directory, that plays them.
    pub best: &'a str,
    /// Games the generation needs on disk in all (those a killed session left count).
    pub target: u64,
    /// The run's progress in [0, 1] (the progressive simulation budget reads it).
    pub progress: f64,
}

/// What a source delivered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GamesIn {
    /// Games of the generation on disk now.
    pub games: u64,
    /// Positions of the games this call added.
    pub positions: u64,
    /// Seconds this call spent.
    pub seconds: f64,
    /// Games by worker id, for sources fed by workers (empty otherwise).
    pub workers: BTreeMap<String, u64>,
}

/// A supplier of a generation's games.
pub trait GameSource {
    /// Puts `request.target` games of the generation into its games folder (resuming what a
    /// killed session left) and says what it did.
    fn games(
        &mut self,
        run: &RunDir,
        config: &RunConfig,
        request: &GamesRequest<'_>,
        log: Log,
    ) -> Result<GamesIn, LoopError>;
}
