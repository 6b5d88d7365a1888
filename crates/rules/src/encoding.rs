//! (encoding: next commit)
/// Board height (ranks) of every plane.
pub const RANKS: usize = 9;
/// Board width (files) of every plane.
pub const FILES: usize = 7;
/// Number of input planes `C` of the `[C, 9, 7]` position tensor.
pub const INPUT_PLANES: usize = 30;
/// Number of policy planes; the policy is `[POLICY_PLANES, 9, 7]` flattened.
pub const POLICY_PLANES: usize = 62;
/// Size of the flat policy action space.
pub const POLICY_SIZE: usize = POLICY_PLANES * RANKS * FILES;
/// Version of the encoding, recorded in checkpoints.
pub const ENCODING_VERSION: u32 = 1;
