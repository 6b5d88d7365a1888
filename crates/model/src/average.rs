//! Weight averaging of nets from one training run.
//!
//! The last few networks of a run with a decaying learning rate sit near one another but
//! each carries the noise of its own last steps; their element-wise mean (stochastic weight
//! averaging, which KataGo applies to the networks it ships) is usually a better network
//! than any one of them. Batch-norm running statistics are averaged with the weights: the
//! nets share an ancestry, so their activations stay compatible. [`blend`] is the same idea
//! as a moving average over a run's generations (`run.candidate_ema`): lc0 plays, and KataGo
//! ships, averaged weights rather than the last optimizer step's.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorData};
use thiserror::Error;

use crate::net::Net;

/// Why nets could not be averaged.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AverageError {
    #[error("no networks to average")]
    Empty,
    #[error("network {index} does not have the first network's shape: {reason}")]
    Mismatch { index: usize, reason: String },
}

/// A tensor's shape and its values.
pub(crate) type Flat = (Vec<usize>, Vec<f32>);

/// Every float tensor of a net (weights, biases, batch-norm statistics) in visit order.
struct Collect {
    tensors: Vec<Flat>,
    error: Option<String>,
}

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let tensor = param.val();
        let shape = tensor.dims().to_vec();
        match tensor.into_data().try_into_vec_as::<f32>() {
            Ok(values) => self.tensors.push((shape, values)),
            Err(e) => self.error = Some(format!("{e:?}")),
        }
    }
}

pub(crate) fn collect(net: &Net) -> Result<Vec<Flat>, String> {
    let mut visitor = Collect {
        tensors: Vec::new(),
        error: None,
    };
    net.visit(&mut visitor);
    match visitor.error {
        Some(e) => Err(e),
        None => Ok(visitor.tensors),
    }
}

/// Replaces the float tensors, in visit order, with the given values.
struct Replace {
    tensors: std::vec::IntoIter<Flat>,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some((shape, values)) = self.tensors.next() else {
            return param;
        };
        param.map(|t| {
            let device = t.device();
            Tensor::from_data(TensorData::new(values, shape), &device)
        })
    }
}

/// The element-wise mean of `nets`, which must all have one architecture.
pub fn average(nets: &[Net]) -> Result<Net, AverageError> {
    let share = 1.0 / nets.len().max(1) as f32;
    let weighted: Vec<(&Net, f32)> = nets.iter().map(|net| (net, share)).collect();
    weighted_sum(&weighted)
}

/// `previous_share × previous + (1 − previous_share) × latest`, element-wise: one step of an
/// exponential moving average of a run's weights, which `yari run` can publish as each
/// generation's candidate instead of the latest weights alone (`run.candidate_ema`).
pub fn blend(previous: &Net, latest: &Net, previous_share: f32) -> Result<Net, AverageError> {
    weighted_sum(&[(latest, 1.0 - previous_share), (previous, previous_share)])
}

/// `Σ weight × net` over `nets` (which must share one architecture), built on the first
/// net's device.
fn weighted_sum(nets: &[(&Net, f32)]) -> Result<Net, AverageError> {
    let (first, first_weight) = *nets.first().ok_or(AverageError::Empty)?;
    let mismatch = |index: usize, reason: String| AverageError::Mismatch { index, reason };
    let mut sum = collect(first).map_err(|e| mismatch(0, e))?;
    for (_, values) in &mut sum {
        for v in values.iter_mut() {
            *v *= first_weight;
        }
    }
    for (index, &(net, weight)) in nets.iter().enumerate().skip(1) {
        let tensors = collect(net).map_err(|e| mismatch(index, e))?;
        if tensors.len() != sum.len() {
            return Err(mismatch(
                index,
                format!("{} tensors, not {}", tensors.len(), sum.len()),
            ));
        }
        for (k, ((shape, values), (sum_shape, sum_values))) in
            tensors.into_iter().zip(sum.iter_mut()).enumerate()
        {
            if shape != *sum_shape {
                return Err(mismatch(
                    index,
                    format!("tensor {k} has shape {shape:?}, not {sum_shape:?}"),
                ));
            }
            for (s, v) in sum_values.iter_mut().zip(values) {
                *s += weight * v;
            }
        }
    }
    let mut mapper = Replace {
        tensors: sum.into_iter(),
    };
    Ok(first.clone().map(&mut mapper))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::NetConfig;

    #[test]
    fn the_mean_of_two_nets_is_their_midpoint_and_shapes_must_match() {
        let device = crate::default_device();
        let config = NetConfig::new(1, 8);
        let a = config.init(&device);
        let b = config.init(&device);
        let (ta, tb) = (collect(&a).unwrap(), collect(&b).unwrap());
        assert_ne!(ta, tb, "two initialisations should differ");
        let mean = collect(&average(&[a.clone(), b]).unwrap()).unwrap();
        assert_eq!(mean.len(), ta.len());
        for ((m, x), y) in mean.iter().zip(&ta).zip(&tb) {
            assert_eq!(m.0, x.0);
            for ((m, x), y) in m.1.iter().zip(&x.1).zip(&y.1) {
                assert!((m - (x + y) / 2.0).abs() < 1e-6, "{m} vs {x} and {y}");
            }
        }
        let same = collect(&average(std::slice::from_ref(&a)).unwrap()).unwrap();
        assert_eq!(same, ta);

        let other = NetConfig::new(1, 16).init(&device);
        assert!(matches!(
            average(&[a, other]),
            Err(AverageError::Mismatch { index: 1, .. })
        ));
        assert_eq!(average(&[]).err(), Some(AverageError::Empty));
    }

    #[test]
    fn a_blend_weighs_the_previous_net_by_its_share_and_the_latest_by_the_rest() {
        let device = crate::default_device();
        let config = NetConfig::new(1, 8);
        let (previous, latest) = (config.init(&device), config.init(&device));
        let (tp, tl) = (collect(&previous).unwrap(), collect(&latest).unwrap());
        let blended = collect(&blend(&previous, &latest, 0.25).unwrap()).unwrap();
        assert_eq!(blended.len(), tl.len());
        for ((b, p), l) in blended.iter().zip(&tp).zip(&tl) {
            assert_eq!(b.0, l.0);
            for ((b, p), l) in b.1.iter().zip(&p.1).zip(&l.1) {
                assert!(
                    (b - (0.25 * p + 0.75 * l)).abs() < 1e-6,
                    "{b} vs {p} and {l}"
                );
            }
        }
        // A share of 0 is the latest net exactly: a run with the average off publishes what
        // it trained.
        assert_eq!(
            collect(&blend(&previous, &latest, 0.0).unwrap()).unwrap(),
            tl
        );
        let other = NetConfig::new(1, 16).init(&device);
        assert!(matches!(
            blend(&other, &latest, 0.5),
            Err(AverageError::Mismatch { index: 1, .. })
        ));
    }
}
