//! Shapes and training behaviour of the network.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Distribution, Gradients, Tensor};
use yari_model::{default_device, NetConfig};
use yari_rules::encoding::{FILES, INPUT_PLANES, POLICY_SIZE, RANKS};

fn input(batch: usize, device: &Device) -> Tensor<4> {
    Tensor::random(
        [batch, INPUT_PLANES, RANKS, FILES],
        Distribution::Uniform(0.0, 1.0),
        device,
    )
}

#[test]
fn forward_shapes_match_the_encoding() {
    let device = default_device();
    let config = NetConfig::new(1, 8);
    let net = config.init(&device);
    for batch in [1, 5] {
        let (policy, wdl) = net.forward(input(batch, &device));
        assert_eq!(policy.dims(), [batch, POLICY_SIZE]);
        assert_eq!(wdl.dims(), [batch, 3]);
        let p = policy.into_data().try_into_vec::<f32>().unwrap();
        assert!(p.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn default_config_uses_the_encoding_sizes() {
    let config = NetConfig::default();
    assert_eq!(config.input_planes, INPUT_PLANES);
    assert_eq!(config.policy_size(), POLICY_SIZE);
}

/// The analytic FLOP count is what the benchmark reports; tie it to the real weights: every
/// conv/linear weight is used once per square (convs) or once (linears) per position.
#[test]
fn mac_count_matches_the_weights() {
    let config = NetConfig::new(2, 16);
    let net = config.init(&default_device());
    // Parameters = conv weights + linear weights + biases + batch-norm gamma, beta and
    // running mean and variance.
    let c = config.channels;
    let vc = config.value_channels;
    let squares = RANKS * FILES;
    let conv_weights = (config.input_planes * c * 9)
        + config.blocks * 2 * (c * c * 9)
        + c * c * 9
        + c * config.policy_planes
        + c * vc;
    let linear_weights = vc * squares * config.value_hidden + config.value_hidden * 3;
    let biases = config.policy_planes + config.value_hidden + 3;
    let bn = 4 * (c + config.blocks * 2 * c + c + vc);
    assert_eq!(
        net.num_params(),
        conv_weights + linear_weights + biases + bn,
        "the layer inventory used below is incomplete"
    );
    let macs = (conv_weights * squares + linear_weights) as u64;
    assert_eq!(config.macs_per_position(), macs);
    assert_eq!(config.flops_per_position(), 2 * macs);
}

/// Counts float parameters, and those that received a non-zero gradient.
struct GradCheck<'a> {
    grads: &'a Gradients,
    total: usize,
    with_grad: usize,
}

impl ModuleVisitor for GradCheck<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        // Batch-norm running statistics are visited too but are state, not trainable.
        if !t.is_require_grad() {
            return;
        }
        self.total += 1;
        if let Some(g) = t.grad(self.grads) {
            if g.abs().sum().into_scalar::<f32>() > 0.0 {
                self.with_grad += 1;
            }
        }
    }
}

/// The training crate will run the same module on an autodiff device: every parameter,
/// the stem included, must receive a gradient.
#[test]
fn trains_on_an_autodiff_device() {
    let device = default_device().autodiff();
    let net = NetConfig::new(1, 8).init(&device);
    let x = input(4, &device);
    let (policy, wdl) = net.forward(x.clone());
    let loss = policy.powf_scalar(2.0).mean() + wdl.powf_scalar(2.0).mean();
    let grads = loss.backward();
    let mut check = GradCheck {
        grads: &grads,
        total: 0,
        with_grad: 0,
    };
    net.visit(&mut check);
    // Six convolution weights and one bias, five batch norms (gamma, beta), two linears.
    assert_eq!(check.total, 6 + 1 + 5 * 2 + 2 * 2);
    assert_eq!(check.with_grad, check.total, "parameters without gradient");

    // The validation view runs without autodiff on a plain device.
    let plain = default_device();
    let (p, _) = net.valid().forward(x.detach().to_device(&plain));
    assert_eq!(p.dims(), [4, POLICY_SIZE]);
}
