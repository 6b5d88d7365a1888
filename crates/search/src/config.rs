//! Search settings.
//!
//! [`SearchConfig`] deserializes from TOML with every field optional (missing fields keep their
//! defaults), so a config file only names what it changes; `validate` then rejects values
//! that would make search misbehave silently rather than fail loudly.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use yari_rules::{DEFAULT_PLY_CAP, MAX_MOVES};

/// A setting outside the range search or self-play can work with.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("invalid config: `{field}` = {value}: {reason}")]
pub struct ConfigError {
    /// The offending field, dotted for nested tables (`search.c_puct`).
    pub field: &'static str,
    /// The value as given.
    pub value: String,
    /// What the field needs.
    pub reason: &'static str,
}

/// `Ok` when `ok`, else the error naming `field`, its value and what it needs: the one shape
/// of every config check, shared with the self-play settings.
pub fn check(
    ok: bool,
    field: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            field,
            value: value.to_string(),
            reason,
        })
    }
}

/// PUCT settings (AlphaZero's selection rule, visit counts as the policy target).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PuctConfig {
    /// Exploration constant: weight of prior over value when choosing a child.
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at the parent's value minus this
    /// times the square root of the prior mass already visited, so search widens only when
    /// the visited moves disappoint.
    pub fpu_reduction: f32,
    /// Concentration of the Dirichlet noise mixed into the root priors (roughly 10 over the
    /// typical number of legal moves).
    pub dirichlet_alpha: f32,
    /// Weight of the Dirichlet noise at the root of self-play searches (0 disables it); it
    /// makes sure every move is tried now and then, whatever the net thinks of it.
    pub dirichlet_fraction: f32,
}

impl Default for PuctConfig {
    fn default() -> Self {
        Self {
            c_puct: 1.25,
            fpu_reduction: 0.25,
            dirichlet_alpha: 0.3,
            dirichlet_fraction: 0.25,
        }
    }
}

/// Gumbel settings (sequential halving at the root, completed-Q policy target).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GumbelConfig {
    /// Actions sampled (Gumbel top-k) for sequential halving at the root. Fewer actions give
    /// each one more simulations; more actions make it likelier that the best move is
    /// considered at all.
    pub considered: usize,
    /// Scale of the Gumbel noise at the root. 1 samples moves in self-play; 0 makes the
    /// search deterministic (arena, analysis).
    pub scale: f32,
    /// `c_visit` of the σ transform of Q (mctx default 50); larger trusts Q sooner.
    pub c_visit: f32,
    /// `c_scale` of the σ transform of Q (mctx default 0.1).
    pub c_scale: f32,
}

impl Default for GumbelConfig {
    fn default() -> Self {
        Self {
            considered: 8,
            scale: 1.0,
            c_visit: 50.0,
            c_scale: 0.1,
        }
    }
}

/// The search algorithm with its own settings: which child a simulation descends to, how the
/// root is perturbed, what the policy target is and which move is recommended. A type rather
/// than a flag, so that no variant's code can read the other's settings (mctx passes
/// `muzero_policy` or `gumbel_muzero_policy` the same way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SearchVariant {
    Puct(PuctConfig),
    Gumbel(GumbelConfig),
}

impl SearchVariant {
    /// Whether moves are chosen by the search itself (Gumbel: its root noise already samples)
    /// rather than sampled from visit counts afterwards.
    pub fn is_gumbel(&self) -> bool {
        matches!(self, SearchVariant::Gumbel(_))
    }
}

/// How one search chooses where to spend its simulations.
///
/// In TOML the variant's fields sit flat beside the shared ones, as they always have
/// (`gumbel = true`, `gumbel_considered = 8`, `c_puct = 1.25`, ...): `gumbel` picks the
/// variant and the other variant's fields are accepted and ignored, so that configs listing
/// both (as `configs/default.toml` does, and every run directory copied from it) keep loading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "SearchToml", into = "SearchToml")]
pub struct SearchConfig {
    /// PUCT or Gumbel, with their settings. Gumbel by default: it improves the policy even
    /// with a handful of simulations, which is what a CPU affords.
    pub variant: SearchVariant,
    /// Plies after which a game is adjudicated a draw (0: no cap). Search treats positions at
    /// the cap as drawn, so it sees the same ending the game will have.
    pub ply_cap: u32,
    /// Keep the subtree of the played move for the next search instead of starting afresh:
    /// simulations already spent there are not wasted.
    pub reuse_tree: bool,
    /// Plies of the mate search run at every position the search reaches, before the
    /// network is asked (0: none; 1: mate in one; 3: a mate by checks in up to three plies,
    /// as shogi engines' leaf mate searches do). A position with a forced mate is a proven
    /// win (value 1, never expanded) and at the root its mate is played. The search is exact
    /// and cheap beside a network call, and it turns the net's blind spots for short mates
    /// (missing one, or walking into one) into certainties the search and its training
    /// targets can use.
    pub mate_search_plies: u32,
    /// Softmax temperature applied to the network's priors when a node is expanded (each
    /// prior becomes p^(1/T), renormalised). Above 1 flattens a confident policy so search
    /// looks at the moves it rates low, where a small net's tactical misses hide; 1 keeps
    /// the priors as they are.
    pub policy_temperature: f32,
}

/// The file shape of [`SearchConfig`]: every field optional, the variants' fields flat.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SearchToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_considered: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_scale: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_c_visit: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_c_scale: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    c_puct: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fpu_reduction: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dirichlet_alpha: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dirichlet_fraction: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ply_cap: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reuse_tree: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mate_search_plies: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_temperature: Option<f32>,
}

impl From<SearchToml> for SearchConfig {
    fn from(t: SearchToml) -> Self {
        let d = SearchConfig::default();
        let variant = if t.gumbel.unwrap_or(d.variant.is_gumbel()) {
            let g = GumbelConfig::default();
            SearchVariant::Gumbel(GumbelConfig {
                considered: t.gumbel_considered.unwrap_or(g.considered),
                scale: t.gumbel_scale.unwrap_or(g.scale),
                c_visit: t.gumbel_c_visit.unwrap_or(g.c_visit),
                c_scale: t.gumbel_c_scale.unwrap_or(g.c_scale),
            })
        } else {
            let p = PuctConfig::default();
            SearchVariant::Puct(PuctConfig {
                c_puct: t.c_puct.unwrap_or(p.c_puct),
                fpu_reduction: t.fpu_reduction.unwrap_or(p.fpu_reduction),
                dirichlet_alpha: t.dirichlet_alpha.unwrap_or(p.dirichlet_alpha),
                dirichlet_fraction: t.dirichlet_fraction.unwrap_or(p.dirichlet_fraction),
            })
        };
        SearchConfig {
            variant,
            ply_cap: t.ply_cap.unwrap_or(d.ply_cap),
            reuse_tree: t.reuse_tree.unwrap_or(d.reuse_tree),
            mate_search_plies: t.mate_search_plies.unwrap_or(d.mate_search_plies),
            policy_temperature: t.policy_temperature.unwrap_or(d.policy_temperature),
        }
    }
}

impl From<SearchConfig> for SearchToml {
    /// Only the active variant's fields, so that a config read back is the same config.
    fn from(c: SearchConfig) -> Self {
        let mut t = SearchToml {
            gumbel: Some(c.variant.is_gumbel()),
            ply_cap: Some(c.ply_cap),
            reuse_tree: Some(c.reuse_tree),
            mate_search_plies: Some(c.mate_search_plies),
            policy_temperature: Some(c.policy_temperature),
            ..SearchToml::default()
        };
        match c.variant {
            SearchVariant::Gumbel(g) => {
                t.gumbel_considered = Some(g.considered);
                t.gumbel_scale = Some(g.scale);
                t.gumbel_c_visit = Some(g.c_visit);
                t.gumbel_c_scale = Some(g.c_scale);
            }
            SearchVariant::Puct(p) => {
                t.c_puct = Some(p.c_puct);
                t.fpu_reduction = Some(p.fpu_reduction);
                t.dirichlet_alpha = Some(p.dirichlet_alpha);
                t.dirichlet_fraction = Some(p.dirichlet_fraction);
            }
        }
        t
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            variant: SearchVariant::Gumbel(GumbelConfig::default()),
            ply_cap: DEFAULT_PLY_CAP as u32,
            reuse_tree: true,
            mate_search_plies: 3,
            policy_temperature: 1.0,
        }
    }
}

impl SearchConfig {
    /// Plain PUCT with visit-count targets and no noise: the usual setting for analysis.
    pub fn puct() -> Self {
        Self {
            variant: SearchVariant::Puct(PuctConfig {
                dirichlet_fraction: 0.0,
                ..PuctConfig::default()
            }),
            ..Self::default()
        }
    }

    /// Gumbel search with `considered` root actions and no root noise: deterministic, for
    /// evaluation and analysis.
    pub fn gumbel_deterministic(considered: usize) -> Self {
        Self {
            variant: SearchVariant::Gumbel(GumbelConfig {
                considered,
                scale: 0.0,
                ..GumbelConfig::default()
            }),
            ..Self::default()
        }
    }

    /// The ply cap as the rules crate takes it.
    pub fn ply_cap(&self) -> Option<usize> {
        (self.ply_cap > 0).then_some(self.ply_cap as usize)
    }

    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        let finite_nonneg = |v: f32| v.is_finite() && v >= 0.0;
        check(
            self.ply_cap <= 10_000,
            "search.ply_cap",
            self.ply_cap,
            "must be in 0..=10000 (0: no cap)",
        )?;
        match &self.variant {
            SearchVariant::Gumbel(g) => {
                check(
                    (1..=MAX_MOVES).contains(&g.considered),
                    "search.gumbel_considered",
                    g.considered,
                    "must be in 1..=1024",
                )?;
                check(
                    finite_nonneg(g.scale),
                    "search.gumbel_scale",
                    g.scale,
                    "must be finite and >= 0",
                )?;
                check(
                    finite_nonneg(g.c_visit),
                    "search.gumbel_c_visit",
                    g.c_visit,
                    "must be finite and >= 0",
                )?;
                check(
                    g.c_scale.is_finite() && g.c_scale > 0.0,
                    "search.gumbel_c_scale",
                    g.c_scale,
                    "must be finite and > 0",
                )?;
            }
            SearchVariant::Puct(p) => {
                check(
                    p.c_puct.is_finite() && p.c_puct > 0.0,
                    "search.c_puct",
                    p.c_puct,
                    "must be finite and > 0",
                )?;
                check(
                    finite_nonneg(p.fpu_reduction) && p.fpu_reduction <= 2.0,
                    "search.fpu_reduction",
                    p.fpu_reduction,
                    "must be in [0, 2]",
                )?;
                check(
                    p.dirichlet_alpha.is_finite() && p.dirichlet_alpha > 0.0,
                    "search.dirichlet_alpha",
                    p.dirichlet_alpha,
                    "must be finite and > 0",
                )?;
                check(
                    (0.0..=1.0).contains(&p.dirichlet_fraction),
                    "search.dirichlet_fraction",
                    p.dirichlet_fraction,
                    "must be in [0, 1]",
                )?;
            }
        }
        check(
            matches!(self.mate_search_plies, 0 | 1 | 3 | 5),
            "search.mate_search_plies",
            self.mate_search_plies,
            "must be 0, 1, 3 or 5",
        )?;
        check(
            (0.1..=10.0).contains(&self.policy_temperature),
            "search.policy_temperature",
            self.policy_temperature,
            "must be in [0.1, 10]",
        )?;
        Ok(())
    }
}
