//! Monte Carlo tree search over [`Position`]s, PUCT or Gumbel, driven one leaf at a time.
//!
//! A [`Search`] never calls the network itself: [`Search::step`] runs simulations until one
//! reaches a position that needs an evaluation and hands that position out, and
//! [`Search::supply`] takes the evaluation back. That inversion is what lets the self-play
//! pool gather the leaves of a hundred games into one network batch, while
//! [`Search::run`] and [`search_move`] wrap the same loop for a single position (arena, UCI).
//!
//! Values are always from the point of view of the side to move at the node that holds them;
//! a child's value is negated when its parent looks at it (negamax). A terminal loss for the
//! side to move is -1, a draw 0.
//!
//! Gumbel search follows Danihelka et al., "Policy improvement by planning with Gumbel"
//! (ICLR 2022) as mctx's `gumbel_muzero_policy` implements it: Gumbel top-k at the root,
//! sequential halving over the simulation budget, the completed-Q improved policy as the
//! training target, and the deterministic improved-policy rule below the root.

use std::time::Instant;

use rand::Rng;
use thiserror::Error;
use yari_rules::{Color, Move, Outcome, Position};

use crate::config::{ConfigError, GumbelConfig, PuctConfig, SearchConfig, SearchVariant};
use crate::eval::{Evaluation, Evaluator};
use crate::noise;

/// Largest simulation budget a search accepts.
pub const MAX_SIMULATIONS: u32 = 10_000_000;

/// Longest precomputed sequential-halving schedule (Gumbel).
const MAX_SCHEDULE: usize = 1 << 20;

/// Why a search could not be set up or continued.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SearchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("move {mv} is not legal in {fen}")]
    IllegalMove { mv: String, fen: String },
    #[error("simulation budget {0} exceeds the maximum of {MAX_SIMULATIONS}")]
    TooManySimulations(u32),
    #[error("the evaluator panicked on a search thread")]
    EvaluatorPanicked,
    #[error("the root moves can be chosen only before the root is expanded (in a new search)")]
    RootExpanded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Never evaluated.
    Leaf,
    /// Evaluated; its children are allocated.
    Expanded,
    /// The game is over here; `raw_value` holds the result for the side to move.
    Terminal,
    /// The side to move has a forced mate ([`SearchConfig::mate_search_plies`]): a proven
    /// win, never expanded; `raw_value` is 1.
    Won,
    /// Handed out in a batch ([`Search::gather`]) and not yet supplied: a descent that meets
    /// it is a collision.
    InFlight,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    /// The move from the parent (meaningless at the root).
    mv: Move,
    /// Prior probability of `mv` at the parent (noise included at a noised root).
    prior: f32,
    visits: u32,
    /// Sum of backed-up values, from this node's side to move.
    value_sum: f32,
    /// Network value (or game result) at this node, from its side to move.
    raw_value: f32,
    first_child: u32,
    num_children: u32,
    /// Descents of the batch being gathered that pass through this node and are not backed
    /// up yet: each counts as a visit that lost for the parent (virtual loss), so the next
    /// descent of the same batch looks elsewhere.
    in_flight: u32,
    kind: Kind,
}

impl Node {
    fn leaf(mv: Move, prior: f32) -> Node {
        Node {
            mv,
            prior,
            visits: 0,
            value_sum: 0.0,
            raw_value: 0.0,
            first_child: 0,
            num_children: 0,
            in_flight: 0,
            kind: Kind::Leaf,
        }
    }

    /// Visits, counting descents in flight.
    fn started(&self) -> u32 {
        self.visits + self.in_flight
    }

    /// Mean value from the parent's side to move with the descents in flight counted as
    /// losses for the parent; exactly [`Node::q`] when none is in flight.
    fn q_virtual(&self) -> Option<f32> {
        if self.in_flight == 0 {
            return self.q();
        }
        let n = self.started() as f32;
        Some(-(self.value_sum + self.in_flight as f32) / n)
    }

    fn children(&self) -> std::ops::Range<usize> {
        let first = self.first_child as usize;
        first..first + self.num_children as usize
    }

    /// Mean value from the parent's side to move, if visited.
    fn q(&self) -> Option<f32> {
        (self.visits > 0).then(|| -self.value_sum / self.visits as f32)
    }
}

const ROOT: usize = 0;

fn placeholder_move() -> Move {
    Move::from_u16(0).expect("code 0 is a move")
}

/// A game result as a value for `mover`.
pub fn outcome_value(outcome: &Outcome, mover: Color) -> f32 {
    match outcome.winner {
        None => 0.0,
        Some(c) if c == mover => 1.0,
        Some(_) => -1.0,
    }
}

/// A budget for [`Search::run`]: whichever limit is reached first ends the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Simulations (network evaluations below the root, or terminal visits). For Gumbel
    /// search this is also the budget sequential halving plans for.
    pub simulations: u32,
    /// Stop once the tree holds this many nodes (memory bound for long analysis).
    pub max_nodes: Option<usize>,
    /// Stop at this instant (checked after every evaluation).
    pub deadline: Option<Instant>,
}

impl Limits {
    /// Just a simulation count.
    pub fn simulations(n: u32) -> Self {
        Self {
            simulations: n,
            max_nodes: None,
            deadline: None,
        }
    }
}

/// Statistics of one root move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveStats {
    pub mv: Move,
    /// The network's prior (with root noise, if any).
    pub prior: f32,
    /// Visits, including those inherited from a reused tree.
    pub visits: u32,
    /// Mean value for the side to move at the root, if visited.
    pub q: Option<f32>,
}

/// What a search concluded about its root.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    /// The move search recommends (`None` when the game is over at the root). PUCT: most
    /// visits; Gumbel: the sequential-halving winner (which includes the root's Gumbel noise).
    pub best_move: Option<Move>,
    /// Value of the root for its side to move, in [-1, 1].
    pub root_value: f32,
    /// Per legal move statistics, in the evaluator's move order.
    pub moves: Vec<MoveStats>,
    /// The training target over the legal moves, summing to 1: visit shares (PUCT) or the
    /// completed-Q improved policy (Gumbel).
    pub policy: Vec<(Move, f32)>,
    /// Principal variation, starting with `best_move`.
    pub pv: Vec<Move>,
    /// Simulations run by this search (not counting inherited visits).
    pub simulations: u32,
    /// Nodes in the tree.
    pub nodes: usize,
    /// The rules' result when the root itself is terminal.
    pub terminal: Option<Outcome>,
    /// Whether `moves`' priors are the network's. False when the mate search settled the
    /// root before the network saw it: the priors are then a uniform placeholder, which
    /// says nothing of what the network would have played (self-play's surprise weighting
    /// decides on its own what such a root is worth).
    pub priors_from_network: bool,
}

/// One root move's line of play ([`Search::lines`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PvLine {
    /// Mean value for the side to move at the root after this line's first move.
    pub value: f32,
    pub visits: u32,
    /// The move, then the most visited replies.
    pub pv: Vec<Move>,
}

/// What [`Search::step`] needs next.
#[derive(Debug)]
pub enum Step<'a> {
    /// Evaluate this position and pass the result to [`Search::supply`].
    NeedEval(&'a Position),
    /// The simulation budget is spent (or the root is terminal).
    Done,
}

struct Pending {
    path: Vec<u32>,
    pos: Position,
    /// False for the root's own first evaluation, which is no simulation.
    simulation: bool,
}

/// Per-search state of the Gumbel root.
struct GumbelRoot {
    /// `gumbel_scale * Gumbel(0,1)` per root child.
    noise: Vec<f32>,
    /// Sequential halving: the visit count a child must have to be chosen by simulation `i`.
    schedule: Vec<u32>,
    /// Visits per root child by this search (inherited visits do not count for halving).
    visits: Vec<u32>,
}

/// A search tree over one root position, reusable move after move.
pub struct Search {
    root_pos: Position,
    nodes: Vec<Node>,
    config: SearchConfig,
    target: u32,
    done: u32,
    noise: bool,
    prepared: bool,
    gumbel: Option<GumbelRoot>,
    pending: Option<Pending>,
    /// Multiplies the root Gumbel noise ([`Search::set_gumbel_temperature`]).
    gumbel_temperature: f32,
    /// Scratch for improved-policy computations.
    scratch: Vec<f32>,
    /// The batches handed out by [`Search::gather`] and not supplied yet.
    batches: Vec<InFlightBatch>,
    /// The id of the next batch.
    next_batch: u64,
    /// Deepest descent of the current search, in plies from the root.
    max_depth: u32,
    /// Leaves in the batch supplied last.
    last_batch: usize,
    /// Positions the evaluator evaluated for this search (the root's own included).
    evaluations: u32,
    /// The evaluator's win/draw/loss at the root, once evaluated.
    root_wdl: Option<[f32; 3]>,
    /// The only moves searched at the root ([`Search::restrict_root`]); `None`: all.
    root_moves: Option<Vec<Move>>,
}

/// Names a batch of leaves handed out by [`Search::gather`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchId(u64);

struct InFlightBatch {
    id: BatchId,
    leaves: Vec<Pending>,
    /// Descents that met a leaf already in flight: their virtual loss stays until this batch
    /// is supplied, so that the following descents turn elsewhere.
    collisions: Vec<Vec<u32>>,
}

/// Settles positions without the network: the rules (and the ply cap) and the mate search
/// of a search's settings ([`Search::classifier`]).
#[derive(Clone, Copy, Debug)]
pub struct Classifier {
    ply_cap: Option<usize>,
    mate_search_plies: u32,
}

impl Classifier {
    /// What `pos` is without the network: game over or a forced win; `None` when it needs
    /// an evaluation.
    pub fn classify(&self, pos: &Position) -> Option<Verdict> {
        if let Some(outcome) = pos.outcome_with_ply_cap(self.ply_cap) {
            Some(Verdict {
                kind: Kind::Terminal,
                value: outcome_value(&outcome, pos.side_to_move()),
            })
        } else if self.mate(pos).is_some() {
            Some(Verdict {
                kind: Kind::Won,
                value: 1.0,
            })
        } else {
            None
        }
    }

    /// The first move of a forced mate in `pos` within the mate search, and within the ply
    /// cap: a mate the cap would cut off is no win.
    fn mate(&self, pos: &Position) -> Option<Move> {
        let mut plies = self.mate_search_plies;
        if let Some(cap) = self.ply_cap {
            let left = cap.saturating_sub(pos.plies_played()).min(plies as usize) as u32;
            // Mates take an odd number of plies.
            plies = if left % 2 == 1 {
                left
            } else {
                left.saturating_sub(1)
            };
        }
        match plies {
            0 => None,
            plies => pos.forced_mate(plies),
        }
    }
}

/// What a position handed out by [`Search::gather`] turned out to be: known without the
/// network ([`Classifier::classify`]) or evaluated by it.
#[derive(Clone, Debug)]
pub enum LeafResult {
    Known(Verdict),
    Evaluated(Evaluation),
}

/// A leaf the rules or the mate search settle without the network (from [`Classifier::classify`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    kind: Kind,
    value: f32,
}

impl Search {
    /// A search at `root`. Call [`Search::start`] before stepping.
    pub fn new(root: Position, config: SearchConfig) -> Result<Search, SearchError> {
        config.validate()?;
        Ok(Search {
            root_pos: root,
            nodes: vec![Node::leaf(placeholder_move(), 1.0)],
            config,
            target: 0,
            done: 0,
            noise: false,
            prepared: false,
            gumbel: None,
            pending: None,
            gumbel_temperature: 1.0,
            scratch: Vec::new(),
            batches: Vec::new(),
            next_batch: 0,
            max_depth: 0,
            last_batch: 0,
            evaluations: 0,
            root_wdl: None,
            root_moves: None,
        })
    }

    /// Searches only `moves` at the root (UCI's `go searchmoves`); the others never enter
    /// the tree. It must come before the root is expanded, since a kept tree already holds
    /// every move. An empty list searches every move.
    pub fn restrict_root(&mut self, moves: &[Move]) -> Result<(), SearchError> {
        if let Some(&mv) = moves.iter().find(|&&mv| !self.root_pos.is_legal(mv)) {
            return Err(SearchError::IllegalMove {
                mv: mv.to_string(),
                fen: self.root_pos.fen(),
            });
        }
        if self.nodes[ROOT].kind != Kind::Leaf {
            return Err(SearchError::RootExpanded);
        }
        let mut unique = moves.to_vec();
        unique.sort_by_key(|m| m.to_u16());
        unique.dedup();
        self.root_moves = (!unique.is_empty()).then_some(unique);
        Ok(())
    }

    /// [`Search::classify_leaf`] at the root, where a forced mate counts only if its first
    /// move is one the search may play.
    fn classify_root(&self) -> Option<Verdict> {
        let verdict = self.classify_leaf(&self.root_pos)?;
        if verdict.kind == Kind::Won && !self.mate_allowed_at_root() {
            return None;
        }
        Some(verdict)
    }

    /// Whether the root's forced mate (if any) starts with a move the search may play.
    fn mate_allowed_at_root(&self) -> bool {
        match &self.root_moves {
            None => true,
            Some(moves) => self
                .mate(&self.root_pos)
                .is_some_and(|mv| moves.contains(&mv)),
        }
    }

    /// The position searched.
    pub fn root(&self) -> &Position {
        &self.root_pos
    }

    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Simulations run since [`Search::start`].
    pub fn simulations_done(&self) -> u32 {
        self.done
    }

    /// The position waiting for an evaluation, if any.
    pub fn pending_position(&self) -> Option<&Position> {
        self.pending.as_ref().map(|p| &p.pos)
    }

    /// Nodes in the tree.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Begins a search of `simulations` simulations at the current root; `noise` adds root
    /// Dirichlet noise (PUCT only: Gumbel search explores through its Gumbel noise).
    pub fn start(&mut self, simulations: u32, noise: bool) -> Result<(), SearchError> {
        if simulations > MAX_SIMULATIONS {
            return Err(SearchError::TooManySimulations(simulations));
        }
        self.abandon_batches();
        self.target = simulations;
        self.done = 0;
        self.noise = noise;
        self.prepared = false;
        self.gumbel = None;
        self.pending = None;
        self.max_depth = 0;
        self.evaluations = 0;
        Ok(())
    }

    /// Deepest descent of the current search in plies (UCI's `seldepth`).
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// The evaluator's win, draw and loss probabilities at the root, once it was evaluated
    /// (not at a root settled by the rules or the mate search).
    pub fn root_wdl(&self) -> Option<[f32; 3]> {
        self.root_wdl
    }

    /// The `n` most visited root moves (most visited first), each with its mean value for
    /// the side to move, its visits and its principal variation (UCI's `MultiPV`).
    pub fn lines(&self, n: usize) -> Vec<PvLine> {
        let root = &self.nodes[ROOT];
        if root.kind != Kind::Expanded {
            return Vec::new();
        }
        let mut children: Vec<usize> = root
            .children()
            .filter(|&c| self.nodes[c].visits > 0)
            .collect();
        let key = |i: usize| {
            let c = &self.nodes[i];
            (c.visits, c.q().unwrap_or(-2.0))
        };
        children.sort_by(|&a, &b| {
            key(b)
                .partial_cmp(&key(a))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        children
            .into_iter()
            .take(n)
            .map(|c| {
                let mut pv = vec![self.nodes[c].mv];
                let mut node = c;
                while self.nodes[node].kind == Kind::Expanded {
                    let next = self.most_visited(node);
                    if self.nodes[next].visits == 0 {
                        break;
                    }
                    pv.push(self.nodes[next].mv);
                    node = next;
                }
                PvLine {
                    value: self.nodes[c].q().unwrap_or(0.0),
                    visits: self.nodes[c].visits,
                    pv,
                }
            })
            .collect()
    }

    /// Positions the evaluator evaluated for the current search: the simulations that were
    /// not settled by the rules or the mate search, and the root's own evaluation.
    pub fn evaluations(&self) -> u32 {
        self.evaluations
    }

    /// Leaves in the batch [`Search::supply_batch`] took last.
    pub fn last_batch_len(&self) -> usize {
        self.last_batch
    }

    /// Visits of the most visited and the second most visited root moves.
    fn top_two_visits(&self) -> (u32, u32) {
        let root = &self.nodes[ROOT];
        if root.kind != Kind::Expanded {
            return (0, 0);
        }
        let mut top = (0, 0);
        for c in &self.nodes[root.children()] {
            if c.visits > top.0 {
                top = (c.visits, top.0);
            } else if c.visits > top.1 {
                top.1 = c.visits;
            }
        }
        top
    }

    /// Whether the move the search would play now stays the one it plays after
    /// `simulations_left` more simulations: its lead in visits is larger (PUCT plays the most
    /// visited move; a Gumbel root is never settled early). lc0's "smart pruning".
    pub fn best_is_settled(&self, simulations_left: f64) -> bool {
        if self.config.variant.is_gumbel() || !self.root_evaluated() {
            return false;
        }
        if self.nodes[ROOT].num_children == 1 {
            return true;
        }
        let (first, second) = self.top_two_visits();
        first > 0 && (first - second) as f64 > simulations_left
    }

    /// Whether the search has not made up its mind: a runner-up with more than half the
    /// visits of the most visited move, or a better mean value than it. Time management
    /// thinks longer then.
    pub fn is_contested(&self) -> bool {
        let root = &self.nodes[ROOT];
        if root.kind != Kind::Expanded || root.num_children < 2 {
            return false;
        }
        let best = self.most_visited(ROOT);
        let (first, second) = self.top_two_visits();
        if second * 2 > first {
            return true;
        }
        let best_q = self.nodes[best].q().unwrap_or(-1.0);
        self.nodes[root.children()]
            .iter()
            .any(|c| c.visits * 4 >= first && c.q().is_some_and(|q| q > best_q + 0.05))
    }

    /// Whether the root has been evaluated (or settled), so that there is a move to play.
    pub fn root_evaluated(&self) -> bool {
        matches!(
            self.nodes[ROOT].kind,
            Kind::Expanded | Kind::Terminal | Kind::Won
        )
    }

    /// Whether the budget is spent (or the root is settled): nothing more to gather or step.
    pub fn finished(&self) -> bool {
        match self.nodes[ROOT].kind {
            Kind::Terminal | Kind::Won => true,
            Kind::Leaf | Kind::InFlight => false,
            Kind::Expanded => self.done >= self.target && self.batches.is_empty(),
        }
    }

    /// Scales the root Gumbel noise of the following searches by `t` (clamped to [0, 1]): the
    /// Gumbel counterpart of a move-choice temperature, so that self-play can vary its
    /// openings and still play the rest of the game to win. 1 (the default) is plain Gumbel
    /// sampling, 0 the deterministic search. No effect on PUCT.
    pub fn set_gumbel_temperature(&mut self, t: f32) {
        self.gumbel_temperature = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            1.0
        };
    }

    /// Ends the current search now, as if its budget were spent (deadlines, node limits).
    /// A batch handed out and not supplied is dropped, its virtual losses undone.
    pub fn stop(&mut self) {
        self.abandon_batches();
        self.target = self.done;
        self.pending = None;
    }

    /// Hands out up to `max_leaves` positions to evaluate together, by descents that each
    /// count as a loss along their path until supplied (virtual loss), so that a batch
    /// spreads over the tree; returns the batch's id, or `None` when no leaf can be handed
    /// out now (the budget is spent or taken by batches in flight, the root is being
    /// evaluated, or only known positions were reached). Positions whose value is known (game
    /// over, or a mate found earlier) are backed up on the way and count as simulations.
    ///
    /// Several batches may be in flight at once, each supplied when its results are in
    /// ([`Search::supply_batch`]), so that one thread gathers while others evaluate. The
    /// leaves are unclassified: the caller runs the [`Classifier`] on each (the mate search)
    /// and evaluates the rest. One leaf at a time, this is exactly [`Search::step`]'s
    /// search. Gumbel search takes one leaf at a time and one batch at a time: its root plan
    /// counts simulations one by one.
    ///
    /// A descent that reaches a leaf already in flight (a collision) keeps its virtual loss
    /// until the batch is supplied; gathering ends after `max_leaves` collisions, and after a
    /// bounded number of descents so that a call returns promptly.
    pub fn gather<R: Rng + ?Sized>(&mut self, rng: &mut R, max_leaves: usize) -> Option<BatchId> {
        self.pending = None;
        let id = BatchId(self.next_batch);
        match self.nodes[ROOT].kind {
            Kind::Terminal | Kind::Won | Kind::InFlight => return None,
            Kind::Leaf => {
                if let Some(known) = self.classify_root() {
                    self.settle(ROOT, (known.kind, known.value));
                    return None;
                }
                self.nodes[ROOT].kind = Kind::InFlight;
                self.nodes[ROOT].in_flight += 1;
                self.next_batch += 1;
                self.batches.push(InFlightBatch {
                    id,
                    leaves: vec![Pending {
                        path: vec![ROOT as u32],
                        pos: self.root_pos.clone(),
                        simulation: false,
                    }],
                    collisions: Vec::new(),
                });
                return Some(id);
            }
            Kind::Expanded => {}
        }
        if !self.prepared {
            self.prepare_root(rng);
        }
        let max_leaves = match self.config.variant {
            SearchVariant::Gumbel(_) if !self.batches.is_empty() => return None,
            SearchVariant::Gumbel(_) => 1,
            SearchVariant::Puct(_) => max_leaves.max(1),
        };
        let mut leaves = Vec::new();
        let mut collisions = Vec::new();
        let mut started = self.done as usize + self.leaves_in_flight();
        let mut descents = 0;
        while leaves.len() < max_leaves
            && collisions.len() < max_leaves
            && descents < 4 * max_leaves + 64
            && started < self.target as usize
        {
            descents += 1;
            let (path, pos) = self.descend_virtual();
            let leaf = *path.last().expect("paths start at the root") as usize;
            match self.nodes[leaf].kind {
                Kind::Terminal | Kind::Won => {
                    let value = self.nodes[leaf].raw_value;
                    self.backup_in_flight(&path, value);
                    self.done += 1;
                    started += 1;
                }
                Kind::InFlight => collisions.push(path),
                Kind::Leaf => {
                    self.nodes[leaf].kind = Kind::InFlight;
                    leaves.push(Pending {
                        path,
                        pos,
                        simulation: true,
                    });
                    started += 1;
                }
                Kind::Expanded => unreachable!("descents end at a node without children"),
            }
        }
        let batch = InFlightBatch {
            id,
            leaves,
            collisions,
        };
        if batch.leaves.is_empty() {
            self.release(batch);
            return None;
        }
        self.next_batch += 1;
        self.batches.push(batch);
        Some(id)
    }

    /// Leaves handed out by [`Search::gather`] and not supplied yet, over all batches.
    pub fn leaves_in_flight(&self) -> usize {
        self.batches.iter().map(|b| b.leaves.len()).sum()
    }

    /// The positions of batch `id`, in order (none once it is supplied or dropped).
    pub fn batch(&self, id: BatchId) -> impl Iterator<Item = &Position> + '_ {
        self.batches
            .iter()
            .filter(move |b| b.id == id)
            .flat_map(|b| b.leaves.iter().map(|p| &p.pos))
    }

    /// What a handed-out position is without the network; owned, so that it can run on any
    /// thread while the tree grows.
    pub fn classifier(&self) -> Classifier {
        Classifier {
            ply_cap: self.config.ply_cap(),
            mate_search_plies: self.config.mate_search_plies,
        }
    }

    /// Takes the results of batch `id`, one per position and in its order, and backs them
    /// up. A result missing at the end (a short evaluator) is taken as uniform priors and a
    /// draw, as [`Search::run`] does, rather than lost. An unknown id (a batch dropped by
    /// [`Search::stop`]) is ignored.
    pub fn supply_batch(&mut self, id: BatchId, results: impl IntoIterator<Item = LeafResult>) {
        let Some(at) = self.batches.iter().position(|b| b.id == id) else {
            return;
        };
        let mut batch = self.batches.swap_remove(at);
        self.last_batch = batch.leaves.len();
        let mut results = results.into_iter();
        for pending in std::mem::take(&mut batch.leaves) {
            let leaf = *pending.path.last().expect("paths start at the root") as usize;
            let value = match results.next() {
                // The workers' classifier does not know the root's move list: a mate that
                // starts outside it is searched like any position (uniform priors, the
                // network was not asked).
                Some(LeafResult::Known(v))
                    if leaf == ROOT && v.kind == Kind::Won && !self.mate_allowed_at_root() =>
                {
                    self.expand(leaf, &uniform_evaluation(&pending.pos), &pending.pos)
                }
                Some(LeafResult::Known(v)) => self.settle(leaf, (v.kind, v.value)),
                Some(LeafResult::Evaluated(eval)) => {
                    self.evaluations += 1;
                    self.expand(leaf, &eval, &pending.pos)
                }
                None => self.expand(leaf, &uniform_evaluation(&pending.pos), &pending.pos),
            };
            self.backup_in_flight(&pending.path, value);
            if pending.simulation {
                self.done += 1;
            }
        }
        self.release(batch);
    }

    /// Undoes the virtual loss of a batch's remaining leaves (which become plain leaves
    /// again) and of its collided descents.
    fn release(&mut self, batch: InFlightBatch) {
        for pending in batch.leaves {
            for &i in &pending.path {
                self.nodes[i as usize].in_flight -= 1;
            }
            let leaf = *pending.path.last().expect("paths start at the root") as usize;
            self.nodes[leaf].kind = Kind::Leaf;
        }
        for path in batch.collisions {
            for &i in &path {
                self.nodes[i as usize].in_flight -= 1;
            }
        }
    }

    /// Drops every batch handed out and not supplied.
    fn abandon_batches(&mut self) {
        for batch in std::mem::take(&mut self.batches) {
            self.release(batch);
        }
    }

    /// Walks from the root to a node without children, choosing as [`Search::descend`] does
    /// with the batch's virtual losses counted, and puts one descent in flight on the path.
    fn descend_virtual(&mut self) -> (Vec<u32>, Position) {
        let mut pos = self.root_pos.clone();
        let mut path = vec![ROOT as u32];
        let mut node = ROOT;
        while self.nodes[node].kind == Kind::Expanded {
            let child = match self.config.variant {
                SearchVariant::Puct(p) => self.select_puct(node, &p),
                SearchVariant::Gumbel(g) if node == ROOT => self.select_gumbel_root(&g),
                SearchVariant::Gumbel(g) => self.select_gumbel_interior(node, &g),
            };
            pos.play(self.nodes[child].mv);
            path.push(child as u32);
            node = child;
        }
        // Counted once the walk is over, so that a walk sees only the other descents.
        for &i in &path {
            self.nodes[i as usize].in_flight += 1;
        }
        self.max_depth = self.max_depth.max(path.len() as u32 - 1);
        (path, pos)
    }

    /// Runs simulations until one needs an evaluation or the budget is spent. Calling it
    /// again before [`Search::supply`] hands out the same position.
    pub fn step<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Step<'_> {
        self.abandon_batches();
        while self.pending.is_none() {
            match self.nodes[ROOT].kind {
                Kind::Terminal | Kind::Won | Kind::InFlight => return Step::Done,
                Kind::Leaf => {
                    if let Some(known) = self.classify_root() {
                        self.settle(ROOT, (known.kind, known.value));
                        return Step::Done;
                    }
                    self.pending = Some(Pending {
                        path: vec![ROOT as u32],
                        pos: self.root_pos.clone(),
                        simulation: false,
                    });
                    break;
                }
                Kind::Expanded => {}
            }
            if !self.prepared {
                self.prepare_root(rng);
            }
            if self.done >= self.target {
                return Step::Done;
            }
            let (path, pos, terminal) = self.descend();
            match terminal {
                Some(value) => {
                    self.backup(&path, value);
                    self.done += 1;
                }
                None => {
                    self.pending = Some(Pending {
                        path,
                        pos,
                        simulation: true,
                    })
                }
            }
        }
        match &self.pending {
            Some(pending) => Step::NeedEval(&pending.pos),
            None => Step::Done,
        }
    }

    /// Takes the evaluation of the position [`Search::step`] handed out. Ignored when no
    /// evaluation is pending.
    pub fn supply(&mut self, eval: &Evaluation) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let leaf = *pending.path.last().expect("paths start at the root") as usize;
        self.evaluations += 1;
        let value = self.expand(leaf, eval, &pending.pos);
        self.backup(&pending.path, value);
        if pending.simulation {
            self.done += 1;
        }
    }

    /// Runs a whole search with `evaluator`, one position per evaluation.
    pub fn run<R: Rng + ?Sized>(
        &mut self,
        evaluator: &dyn Evaluator,
        limits: &Limits,
        noise: bool,
        rng: &mut R,
    ) -> Result<SearchResult, SearchError> {
        self.start(limits.simulations, noise)?;
        while let Step::NeedEval(pos) = self.step(rng) {
            let evals = evaluator.evaluate(&[pos]);
            match evals.first() {
                Some(eval) => self.supply(eval),
                // An evaluator that returns nothing gets the uniform stand-in, not a hang.
                None => {
                    let pos = self.pending.as_ref().expect("pending").pos.clone();
                    self.supply(&uniform_evaluation(&pos));
                }
            }
            let out_of_time = limits.deadline.is_some_and(|d| Instant::now() >= d);
            let out_of_nodes = limits.max_nodes.is_some_and(|n| self.nodes.len() >= n);
            if (out_of_time || out_of_nodes) && self.nodes[ROOT].kind != Kind::Leaf {
                self.stop();
                break;
            }
        }
        Ok(self.result())
    }

    /// Plays `mv` at the root, keeping its subtree when tree reuse is on.
    pub fn advance(&mut self, mv: Move) -> Result<(), SearchError> {
        if !self.root_pos.is_legal(mv) {
            return Err(SearchError::IllegalMove {
                mv: mv.to_string(),
                fen: self.root_pos.fen(),
            });
        }
        let child = self.nodes[ROOT]
            .children()
            .find(|&c| self.nodes[c].mv == mv);
        self.abandon_batches();
        self.root_pos.play(mv);
        self.root_wdl = None;
        self.root_moves = None;
        self.nodes = match child {
            Some(c) if self.config.reuse_tree => self.subtree(c),
            _ => vec![Node::leaf(placeholder_move(), 1.0)],
        };
        self.start(0, false)
    }

    /// Copies the subtree under `child` into a fresh node array (breadth first, so sibling
    /// blocks stay contiguous).
    fn subtree(&self, child: usize) -> Vec<Node> {
        let mut out = Vec::with_capacity(self.nodes.len());
        out.push(self.nodes[child]);
        let mut i = 0;
        while i < out.len() {
            let node = out[i];
            if node.num_children > 0 {
                let start = out.len();
                out.extend_from_slice(&self.nodes[node.children()]);
                out[i].first_child = start as u32;
            }
            i += 1;
        }
        out
    }

    fn prepare_root<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.prepared = true;
        let children = self.nodes[ROOT].children();
        let n = children.len();
        match self.config.variant {
            SearchVariant::Gumbel(g) => self.prepare_gumbel_root(rng, &g, n),
            SearchVariant::Puct(p) => {
                if self.noise && p.dirichlet_fraction > 0.0 && n > 1 {
                    let eta = noise::dirichlet(rng, p.dirichlet_alpha, n);
                    let f = p.dirichlet_fraction;
                    for (c, e) in children.zip(eta) {
                        let node = &mut self.nodes[c];
                        node.prior = (1.0 - f) * node.prior + f * e;
                    }
                }
            }
        }
    }

    /// Draws the root's Gumbel noise and plans sequential halving over the budget.
    fn prepare_gumbel_root<R: Rng + ?Sized>(&mut self, rng: &mut R, g: &GumbelConfig, n: usize) {
        let scale = g.scale * self.gumbel_temperature;
        let noise = (0..n)
            .map(|_| {
                if scale > 0.0 {
                    scale * noise::gumbel(rng)
                } else {
                    0.0
                }
            })
            .collect();
        let considered = g.considered.min(n);
        self.gumbel = Some(GumbelRoot {
            noise,
            // Very long searches (analysis) run past the plan by the fallback in
            // `select_gumbel_root` rather than allocate a schedule as long as themselves.
            schedule: considered_visits(considered, (self.target as usize).min(MAX_SCHEDULE)),
            visits: vec![0; n],
        });
    }

    /// Walks from the root to a leaf, playing the moves on a copy of the root position.
    /// Returns the path, the leaf position, and the leaf's value if the game is over there.
    fn descend(&mut self) -> (Vec<u32>, Position, Option<f32>) {
        let mut pos = self.root_pos.clone();
        let mut path = vec![ROOT as u32];
        let mut node = ROOT;
        loop {
            match self.nodes[node].kind {
                Kind::Terminal | Kind::Won => {
                    let v = self.nodes[node].raw_value;
                    return (path, pos, Some(v));
                }
                Kind::Leaf | Kind::InFlight => {
                    let value = self
                        .classify_leaf(&pos)
                        .map(|known| self.settle(node, (known.kind, known.value)));
                    self.max_depth = self.max_depth.max(path.len() as u32 - 1);
                    return (path, pos, value);
                }
                Kind::Expanded => {
                    let child = match self.config.variant {
                        SearchVariant::Puct(p) => self.select_puct(node, &p),
                        SearchVariant::Gumbel(g) if node == ROOT => self.select_gumbel_root(&g),
                        SearchVariant::Gumbel(g) => self.select_gumbel_interior(node, &g),
                    };
                    pos.play(self.nodes[child].mv);
                    path.push(child as u32);
                    node = child;
                }
            }
        }
    }

    /// What an unevaluated position is without the network: terminal (by the rules or the
    /// ply cap) or won (a forced mate), with its value; `None` when it needs an evaluation.
    /// One place for the root and the nodes below it, so both end games alike.
    fn classify_leaf(&self, pos: &Position) -> Option<Verdict> {
        self.classifier().classify(pos)
    }

    /// Records a [`Search::classify_leaf`] verdict on `node` and returns its value.
    fn settle(&mut self, node: usize, (kind, value): (Kind, f32)) -> f32 {
        let n = &mut self.nodes[node];
        n.kind = kind;
        n.raw_value = value;
        value
    }

    /// Expands `leaf` with `eval` and returns the value to back up.
    fn expand(&mut self, leaf: usize, eval: &Evaluation, pos: &Position) -> f32 {
        let owned;
        let eval = if eval.priors.is_empty() {
            // Only a broken evaluator gives no priors for a live position; search on.
            owned = uniform_evaluation(pos);
            &owned
        } else {
            eval
        };
        let value = eval.value();
        let value = if value.is_finite() {
            value.clamp(-1.0, 1.0)
        } else {
            0.0
        };
        let inverse_t = 1.0 / self.config.policy_temperature;
        let first = self.nodes.len();
        // At a restricted root, exactly the moves given, with the network's priors for them.
        let restricted: Option<Vec<(Move, f32)>> = match &self.root_moves {
            Some(moves) if leaf == ROOT => Some(
                moves
                    .iter()
                    .map(|&mv| {
                        let p = eval.priors.iter().find(|e| e.0 == mv).map_or(0.0, |e| e.1);
                        (mv, p)
                    })
                    .collect(),
            ),
            _ => None,
        };
        let priors = restricted.as_deref().unwrap_or(&eval.priors);
        // Tempered weights first, normalised in place: one power per prior.
        self.nodes.extend(priors.iter().map(|&(mv, p)| {
            let weight = match p.is_finite() && p > 0.0 {
                false => 0.0,
                true if inverse_t == 1.0 => p,
                true => p.powf(inverse_t),
            };
            Node::leaf(mv, weight)
        }));
        let children = &mut self.nodes[first..];
        let sum: f32 = children.iter().map(|c| c.prior).sum();
        let uniform = 1.0 / children.len() as f32;
        for c in children.iter_mut() {
            c.prior = if sum > 0.0 { c.prior / sum } else { uniform };
        }
        if leaf == ROOT {
            self.root_wdl = Some(eval.wdl);
        }
        let node = &mut self.nodes[leaf];
        node.first_child = first as u32;
        node.num_children = priors.len() as u32;
        node.kind = Kind::Expanded;
        node.raw_value = value;
        value
    }

    /// [`Search::backup`] of a descent that was in flight: its virtual loss is taken back.
    fn backup_in_flight(&mut self, path: &[u32], leaf_value: f32) {
        for &i in path {
            self.nodes[i as usize].in_flight -= 1;
        }
        self.backup(path, leaf_value);
    }

    fn backup(&mut self, path: &[u32], leaf_value: f32) {
        let mut v = leaf_value;
        for &i in path.iter().rev() {
            let node = &mut self.nodes[i as usize];
            node.visits += 1;
            node.value_sum += v;
            v = -v;
        }
        if let (Some(g), Some(&child)) = (self.gumbel.as_mut(), path.get(1)) {
            let first = self.nodes[ROOT].first_child as usize;
            g.visits[child as usize - first] += 1;
        }
    }

    /// PUCT with first-play urgency reduction.
    fn select_puct(&self, node: usize, c: &PuctConfig) -> usize {
        let parent = &self.nodes[node];
        let sqrt_n = (parent.started().max(1) as f32).sqrt();
        let parent_q = parent.value_sum / parent.visits.max(1) as f32;
        let children = parent.children();
        let visited_policy: f32 = self.nodes[children.clone()]
            .iter()
            .filter(|n| n.started() > 0)
            .map(|n| n.prior)
            .sum();
        let fpu = parent_q - c.fpu_reduction * visited_policy.sqrt();
        let mut best = children.start;
        let mut best_score = f32::NEG_INFINITY;
        for i in children {
            let child = &self.nodes[i];
            let q = child.q_virtual().unwrap_or(fpu);
            let u = c.c_puct * child.prior * sqrt_n / (1.0 + child.started() as f32);
            let score = q + u;
            if score > best_score {
                best_score = score;
                best = i;
            }
        }
        best
    }

    /// σ(completed Q) of `node`'s children into `out` (mctx `qtransform_completed_by_mix_value`).
    fn sigma_completed_q(&self, node: usize, g: &GumbelConfig, out: &mut Vec<f32>) {
        out.clear();
        let parent = &self.nodes[node];
        let children = &self.nodes[parent.children()];
        let mut sum_visits = 0.0f32;
        let mut max_visits = 0u32;
        let mut sum_prior = 0.0f32;
        let mut weighted_q = 0.0f32;
        for c in children {
            if let Some(q) = c.q() {
                let p = c.prior.max(f32::MIN_POSITIVE);
                sum_visits += c.visits as f32;
                max_visits = max_visits.max(c.visits);
                sum_prior += p;
                weighted_q += p * q;
            }
        }
        let mixed = if sum_prior > 0.0 {
            (parent.raw_value + sum_visits * weighted_q / sum_prior) / (sum_visits + 1.0)
        } else {
            parent.raw_value
        };
        out.extend(children.iter().map(|c| c.q().unwrap_or(mixed)));
        let (lo, hi) = out
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &q| {
                (lo.min(q), hi.max(q))
            });
        let scale = (g.c_visit + max_visits as f32) * g.c_scale;
        let range = (hi - lo).max(1e-8);
        out.iter_mut().for_each(|q| *q = scale * (*q - lo) / range);
    }

    /// The improved policy `softmax(logits + σ(completed Q))` of `node`'s children into `out`.
    fn improved_policy(&self, node: usize, g: &GumbelConfig, out: &mut Vec<f32>) {
        self.sigma_completed_q(node, g, out);
        let children = &self.nodes[self.nodes[node].children()];
        for (x, c) in out.iter_mut().zip(children) {
            *x += logit(c.prior);
        }
        softmax(out);
    }

    /// Below the root: the child whose improved-policy share most exceeds its visit share.
    fn select_gumbel_interior(&mut self, node: usize, g: &GumbelConfig) -> usize {
        let mut pi = std::mem::take(&mut self.scratch);
        self.improved_policy(node, g, &mut pi);
        let parent = &self.nodes[node];
        let children = parent.children();
        let total: u32 = self.nodes[children.clone()].iter().map(|c| c.visits).sum();
        let denom = 1.0 + total as f32;
        let mut best = children.start;
        let mut best_score = f32::NEG_INFINITY;
        for (i, p) in children.zip(&pi) {
            let score = p - self.nodes[i].visits as f32 / denom;
            if score > best_score {
                best_score = score;
                best = i;
            }
        }
        self.scratch = pi;
        best
    }

    /// Root scores `gumbel + logits + σ(q)` with only the children whose visits in this
    /// search equal `considered` eligible (mctx `score_considered`).
    fn gumbel_root_argmax(&self, config: &GumbelConfig, considered: u32) -> usize {
        let g = self.gumbel.as_ref().expect("gumbel root prepared");
        let mut sigma = Vec::new();
        self.sigma_completed_q(ROOT, config, &mut sigma);
        let children = self.nodes[ROOT].children();
        // No eligible child only happens when a search was stopped mid-plan; then all count.
        let any_eligible = g.visits.contains(&considered);
        let mut best = children.start;
        let mut best_score = f32::NEG_INFINITY;
        for (k, i) in children.enumerate() {
            if any_eligible && g.visits[k] != considered {
                continue;
            }
            let score = (g.noise[k] + logit(self.nodes[i].prior) + sigma[k]).max(-1e9);
            if score > best_score {
                best_score = score;
                best = i;
            }
        }
        best
    }

    fn select_gumbel_root(&mut self, config: &GumbelConfig) -> usize {
        let g = self.gumbel.as_ref().expect("gumbel root prepared");
        let considered = g
            .schedule
            .get(self.done as usize)
            .copied()
            // Past the planned budget (a search resumed beyond it): keep refining the leaders.
            .unwrap_or_else(|| g.visits.iter().copied().max().unwrap_or(0));
        self.gumbel_root_argmax(config, considered)
    }

    fn best_child(&self) -> Option<usize> {
        let root = &self.nodes[ROOT];
        if root.kind != Kind::Expanded || root.num_children == 0 {
            return None;
        }
        match (&self.config.variant, &self.gumbel) {
            (SearchVariant::Gumbel(config), Some(g)) => {
                let considered = g.visits.iter().copied().max().unwrap_or(0);
                Some(self.gumbel_root_argmax(config, considered))
            }
            // PUCT, or a Gumbel root inherited from a reused tree and not yet searched.
            _ => Some(self.most_visited(ROOT)),
        }
    }

    /// Most visited child; ties go to the better Q, then the higher prior.
    fn most_visited(&self, node: usize) -> usize {
        let children = self.nodes[node].children();
        let key = |i: usize| {
            let c = &self.nodes[i];
            (c.visits, c.q().unwrap_or(-2.0), c.prior)
        };
        children
            .reduce(|a, b| if key(b) > key(a) { b } else { a })
            .expect("expanded nodes have children")
    }

    /// The first move of a forced mate in `pos` within the configured mate search.
    fn mate(&self, pos: &Position) -> Option<Move> {
        self.classifier().mate(pos)
    }

    /// The result at a root with a forced mate: its first move is played and is the whole
    /// policy target. The root was never evaluated, so the moves show a uniform placeholder
    /// prior (`priors_from_network` false).
    fn mate_result(&self, mate: Move) -> SearchResult {
        let legal = self.root_pos.legal_moves();
        let uniform = 1.0 / legal.len().max(1) as f32;
        let root = &self.nodes[ROOT];
        let moves = legal
            .iter()
            .map(|&mv| MoveStats {
                mv,
                prior: uniform,
                visits: if mv == mate { root.visits } else { 0 },
                q: (mv == mate).then_some(1.0),
            })
            .collect();
        let policy = legal
            .iter()
            .map(|&mv| (mv, if mv == mate { 1.0 } else { 0.0 }))
            .collect();
        SearchResult {
            best_move: Some(mate),
            root_value: 1.0,
            moves,
            policy,
            pv: vec![mate],
            simulations: self.done,
            nodes: self.nodes.len(),
            terminal: None,
            priors_from_network: false,
        }
    }

    /// The search's conclusions so far.
    pub fn result(&self) -> SearchResult {
        let root = &self.nodes[ROOT];
        if root.kind == Kind::Won {
            if let Some(mate) = self.mate(&self.root_pos) {
                return self.mate_result(mate);
            }
        }
        let terminal = match root.kind {
            Kind::Terminal => self.root_pos.outcome_with_ply_cap(self.config.ply_cap()),
            _ => None,
        };
        let root_value = if root.kind == Kind::Terminal {
            root.raw_value
        } else if root.visits > 0 {
            root.value_sum / root.visits as f32
        } else {
            0.0
        };
        let children = root.children();
        let moves: Vec<MoveStats> = self.nodes[children.clone()]
            .iter()
            .map(|c| MoveStats {
                mv: c.mv,
                prior: c.prior,
                visits: c.visits,
                q: c.q(),
            })
            .collect();
        let policy = if root.kind != Kind::Expanded {
            Vec::new()
        } else if let SearchVariant::Gumbel(g) = &self.config.variant {
            let mut pi = Vec::new();
            self.improved_policy(ROOT, g, &mut pi);
            moves.iter().zip(pi).map(|(m, p)| (m.mv, p)).collect()
        } else {
            let total: u32 = moves.iter().map(|m| m.visits).sum();
            if total == 0 {
                moves.iter().map(|m| (m.mv, m.prior)).collect()
            } else {
                moves
                    .iter()
                    .map(|m| (m.mv, m.visits as f32 / total as f32))
                    .collect()
            }
        };
        let best = self.best_child();
        let mut pv = Vec::new();
        if let Some(mut node) = best {
            pv.push(self.nodes[node].mv);
            while self.nodes[node].kind == Kind::Expanded {
                let next = self.most_visited(node);
                if self.nodes[next].visits == 0 {
                    break;
                }
                pv.push(self.nodes[next].mv);
                node = next;
            }
        }
        SearchResult {
            best_move: best.map(|i| self.nodes[i].mv),
            root_value,
            moves,
            policy,
            pv,
            simulations: self.done,
            nodes: self.nodes.len(),
            terminal,
            priors_from_network: root.kind == Kind::Expanded,
        }
    }
}

/// Samples a move from PUCT visit counts at `temperature` (0: the most visited), falling
/// back to the recommended move when nothing was visited. Gumbel results are returned as
/// recommended: their root noise already made the choice random.
pub fn choose_move<R: Rng + ?Sized>(
    result: &SearchResult,
    variant: &SearchVariant,
    temperature: f32,
    rng: &mut R,
) -> Option<Move> {
    let best = result.best_move?;
    if variant.is_gumbel() || temperature <= 0.0 {
        return Some(best);
    }
    let max_visits = result.moves.iter().map(|m| m.visits).max().unwrap_or(0);
    if max_visits == 0 {
        return Some(best);
    }
    // Work relative to the most visited move so that small temperatures cannot overflow.
    let weights: Vec<f64> = result
        .moves
        .iter()
        .map(|m| (m.visits as f64 / max_visits as f64).powf(1.0 / temperature as f64))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut x = rng.random::<f64>() * total;
    for (m, w) in result.moves.iter().zip(&weights) {
        if x < *w {
            return Some(m.mv);
        }
        x -= w;
    }
    Some(best)
}

/// Searches `pos` and returns the result: the entry point for the arena and the UCI engine.
pub fn search_move<R: Rng + ?Sized>(
    evaluator: &dyn Evaluator,
    pos: &Position,
    config: &SearchConfig,
    limits: &Limits,
    rng: &mut R,
) -> Result<SearchResult, SearchError> {
    let mut search = Search::new(pos.clone(), config.clone())?;
    search.run(evaluator, limits, false, rng)
}

/// mctx's `get_sequence_of_considered_visits`: for each simulation, the visit count a root
/// action needs to be eligible, so that the budget is split evenly over ⌈log2 m⌉ halving
/// phases and exactly `simulations` simulations are spent.
pub fn considered_visits(considered: usize, simulations: usize) -> Vec<u32> {
    if considered <= 1 {
        return (0..simulations as u32).collect();
    }
    let log2max = (usize::BITS - (considered - 1).leading_zeros()) as usize;
    let mut sequence = Vec::with_capacity(simulations);
    let mut visits = vec![0u32; considered];
    let mut num_considered = considered;
    while sequence.len() < simulations {
        let extra = (simulations / (log2max * num_considered)).max(1);
        for _ in 0..extra {
            sequence.extend_from_slice(&visits[..num_considered]);
            visits[..num_considered].iter_mut().for_each(|v| *v += 1);
        }
        num_considered = (num_considered / 2).max(2);
    }
    sequence.truncate(simulations);
    sequence
}

fn logit(p: f32) -> f32 {
    p.max(1e-30).ln()
}

fn softmax(xs: &mut [f32]) {
    let max = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for x in xs.iter_mut() {
        *x = (*x - max).exp();
        sum += *x;
    }
    xs.iter_mut().for_each(|x| *x /= sum);
}

/// Uniform priors over the legal moves and a draw value.
pub(crate) fn uniform_evaluation(pos: &Position) -> Evaluation {
    let moves = pos.legal_moves();
    let p = 1.0 / moves.len().max(1) as f32;
    Evaluation {
        priors: moves.iter().map(|&m| (m, p)).collect(),
        wdl: [0.0, 1.0, 0.0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected sequences are the vectors of mctx's own `seq_halving_test.py`
    /// (`get_sequence_of_considered_visits(max_num_considered_actions, num_simulations)`),
    /// including the budgets below and above `m * log2(m)` and the non-power-of-two `m`.
    #[test]
    fn schedule_matches_mctx_test_vectors() {
        let cases: [(usize, usize, &[u32]); 5] = [
            // test_considered_min_sims: exactly m * log2(m) simulations.
            (
                8,
                24,
                &[
                    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                ],
            ),
            // test_considered_extra_sims: more than m * log2(m).
            (
                8,
                47,
                &[
                    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 6, 6,
                    7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17,
                ],
            ),
            // test_considered_less_sims: a very small budget.
            (8, 2, &[0, 0]),
            // test_considered_less_sims2: fewer than m * log2(m).
            (8, 13, &[0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2]),
            // test_considered_not_power_of_2: m = 7.
            (
                7,
                24,
                &[
                    0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8,
                ],
            ),
        ];
        for (m, n, expected) in cases {
            assert_eq!(considered_visits(m, n), expected, "m = {m}, n = {n}");
        }
        // test_considered_action0 / action1: with at most one action, every simulation
        // visits it once more.
        for m in [0, 1] {
            assert_eq!(considered_visits(m, 16), (0..16).collect::<Vec<u32>>());
        }
    }
}
