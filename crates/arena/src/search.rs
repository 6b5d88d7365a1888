//! MCTS-backed players (`mcts:SIMS`, `model:FILE:SIMS`).
//!
//! They use the search of the yari-selfplay crate; until that crate publishes its search API
//! this module has nothing to build them with and the specs fail to build with a clear error.

use crate::player::{Player, PlayerError};
use crate::spec::PlayerSpec;

/// Builds an MCTS player for an `Mcts` or `Model` spec; `None` when this build has no search.
pub(crate) fn build(spec: &PlayerSpec) -> Option<Result<Box<dyn Player>, PlayerError>> {
    let _ = spec;
    None
}
