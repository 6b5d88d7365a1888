//! The network as an ONNX model, for tools outside this project (ONNX Runtime, other engines'
//! back ends), as lc0's `leela2onnx` and KataGo's ONNX files do.
//!
//! Batch norms are folded into the convolutions before them (inference mode: running
//! statistics), so the graph is Conv, Relu, Add, Flatten and Gemm only (and GlobalAveragePool
//! for a net with global pooling), opset 13. One input,
//! `planes` `[batch, INPUT_PLANES, 9, 7]` (`yari_rules::encoding::encode`), two outputs:
//! `policy_logits` `[batch, POLICY_SIZE]` (plane-major, `yari_rules::encoding::index_of`) and
//! `wdl_logits` `[batch, 3]` (win, draw, loss for the side to move). `docs/network.md` says
//! what the planes and the policy indices mean. The checkpoint's metadata travels along as
//! the model's `metadata_props`.

use yari_io::proto::{bytes_field, varint_field};

use crate::checkpoint::CheckpointMeta;
use crate::cpu::{fold_conv1x1, fold_conv3x3, linear, Conv3x3, Dense};
use crate::net::{Net, SQUARES};

/// Why a net could not be written as ONNX.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the network as ONNX: {0}")]
pub struct OnnxError(String);

/// ONNX's IR version 8 (ONNX 1.10 and later read it) and the default-domain opset used.
const IR_VERSION: u64 = 8;
const OPSET: u64 = 13;
/// `TensorProto.DataType.FLOAT`.
const FLOAT: u64 = 1;
/// `AttributeProto.AttributeType` values.
const ATTR_INT: u64 = 2;
const ATTR_INTS: u64 = 7;

/// The board's ranks and files, the spatial shape of every activation.
const RANKS: u64 = 9;
const FILES: u64 = 7;

/// A graph under construction: nodes and weights in encoded form.
struct Graph {
    nodes: Vec<Vec<u8>>,
    initializers: Vec<Vec<u8>>,
}

fn attribute_ints(name: &str, values: &[i64]) -> Vec<u8> {
    let mut a = Vec::new();
    bytes_field(&mut a, 1, name.as_bytes());
    for &v in values {
        varint_field(&mut a, 8, v as u64);
    }
    varint_field(&mut a, 20, ATTR_INTS);
    a
}

fn attribute_int(name: &str, value: i64) -> Vec<u8> {
    let mut a = Vec::new();
    bytes_field(&mut a, 1, name.as_bytes());
    varint_field(&mut a, 3, value as u64);
    varint_field(&mut a, 20, ATTR_INT);
    a
}

impl Graph {
    fn node(&mut self, op: &str, inputs: &[&str], output: &str, attributes: &[Vec<u8>]) {
        let mut n = Vec::new();
        for input in inputs {
            bytes_field(&mut n, 1, input.as_bytes());
        }
        bytes_field(&mut n, 2, output.as_bytes());
        bytes_field(&mut n, 3, output.as_bytes());
        bytes_field(&mut n, 4, op.as_bytes());
        for a in attributes {
            bytes_field(&mut n, 5, a);
        }
        self.nodes.push(n);
    }

    fn weight(&mut self, name: &str, dims: &[u64], values: &[f32]) {
        debug_assert_eq!(dims.iter().product::<u64>() as usize, values.len());
        let mut t = Vec::new();
        for &d in dims {
            varint_field(&mut t, 1, d);
        }
        varint_field(&mut t, 2, FLOAT);
        bytes_field(&mut t, 8, name.as_bytes());
        let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes_field(&mut t, 9, &raw);
        self.initializers.push(t);
    }

    /// A 3x3 same-padded convolution (batch norm folded in) from `input` to `output`.
    fn conv3x3(&mut self, name: &str, conv: &Conv3x3, input: &str, output: &str) {
        let (cin, cout) = (conv.cin, conv.cout);
        // im2col layout `[(k * cin + ci) * cout + co]` to ONNX's `[co][ci][ky][kx]`.
        let mut w = vec![0.0; cout * cin * 9];
        for co in 0..cout {
            for ci in 0..cin {
                for k in 0..9 {
                    w[(co * cin + ci) * 9 + k] = conv.weight[(k * cin + ci) * cout + co];
                }
            }
        }
        let (wn, bn) = (format!("{name}.weight"), format!("{name}.bias"));
        self.weight(&wn, &[cout as u64, cin as u64, 3, 3], &w);
        self.weight(&bn, &[cout as u64], &conv.bias);
        self.node(
            "Conv",
            &[input, &wn, &bn],
            output,
            &[
                attribute_ints("kernel_shape", &[3, 3]),
                attribute_ints("pads", &[1, 1, 1, 1]),
            ],
        );
    }

    /// A 1x1 convolution (a [`Dense`] over channels) from `input` to `output`.
    fn conv1x1(&mut self, name: &str, dense: &Dense, input: &str, output: &str) {
        let (cin, cout) = (dense.din, dense.dout);
        let mut w = vec![0.0; cout * cin];
        for co in 0..cout {
            for ci in 0..cin {
                w[co * cin + ci] = dense.weight[ci * cout + co];
            }
        }
        let (wn, bn) = (format!("{name}.weight"), format!("{name}.bias"));
        self.weight(&wn, &[cout as u64, cin as u64, 1, 1], &w);
        self.weight(&bn, &[cout as u64], &dense.bias);
        self.node(
            "Conv",
            &[input, &wn, &bn],
            output,
            &[attribute_ints("kernel_shape", &[1, 1])],
        );
    }

    /// A fully connected layer `[batch, din] -> [batch, dout]` (weight `[din, dout]`).
    fn gemm(&mut self, name: &str, dense: &Dense, input: &str, output: &str) {
        let (wn, bn) = (format!("{name}.weight"), format!("{name}.bias"));
        self.weight(&wn, &[dense.din as u64, dense.dout as u64], &dense.weight);
        self.weight(&bn, &[dense.dout as u64], &dense.bias);
        self.node("Gemm", &[input, &wn, &bn], output, &[]);
    }
}

/// `ValueInfoProto` of a float tensor whose first dimension is the batch.
fn value_info(name: &str, dims: &[u64]) -> Vec<u8> {
    let mut shape = Vec::new();
    let mut batch = Vec::new();
    bytes_field(&mut batch, 2, b"batch");
    bytes_field(&mut shape, 1, &batch);
    for &d in dims {
        let mut dim = Vec::new();
        varint_field(&mut dim, 1, d);
        bytes_field(&mut shape, 1, &dim);
    }
    let mut tensor = Vec::new();
    varint_field(&mut tensor, 1, FLOAT);
    bytes_field(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    bytes_field(&mut ty, 1, &tensor);
    let mut info = Vec::new();
    bytes_field(&mut info, 1, name.as_bytes());
    bytes_field(&mut info, 2, &ty);
    info
}

/// The ONNX model of `net` (whose shape and provenance `meta` gives), as bytes.
pub fn to_onnx(net: &Net, meta: &CheckpointMeta) -> Result<Vec<u8>, OnnxError> {
    let config = &meta.config;
    let fail = |e: crate::cpu::CpuNetError| OnnxError(e.to_string());
    if net.blocks.len() != config.blocks {
        return Err(OnnxError(format!(
            "the net has {} blocks, its metadata {}",
            net.blocks.len(),
            config.blocks
        )));
    }
    let c = config.channels;
    let mut g = Graph {
        nodes: Vec::new(),
        initializers: Vec::new(),
    };
    let stem =
        fold_conv3x3(&net.stem, &net.stem_bn, config.input_planes, c, "stem").map_err(fail)?;
    g.conv3x3("stem", &stem, "planes", "stem.conv");
    g.node("Relu", &["stem.conv"], "trunk.0", &[]);
    for (i, block) in net.blocks.iter().enumerate() {
        let name = format!("block{i}");
        let input = format!("trunk.{i}");
        let conv1 = fold_conv3x3(&block.conv1, &block.bn1, c, c, &name).map_err(fail)?;
        let conv2 = fold_conv3x3(&block.conv2, &block.bn2, c, c, &name).map_err(fail)?;
        let (a, b, sum) = (
            format!("{name}.conv1"),
            format!("{name}.relu1"),
            format!("{name}.conv2"),
        );
        g.conv3x3(&a, &conv1, &input, &a);
        g.node("Relu", &[&a], &b, &[]);
        let b = match (&block.pool, config.global_pooling) {
            (Some(layer), true) => {
                // The board mean `[batch, c, 1, 1]`, the linear layer as a 1x1 convolution on
                // it, and Add's broadcasting spreads the bias over the board.
                let pool = linear(layer, c, c, &format!("{name} pool")).map_err(fail)?;
                let (mean, bias, biased) = (
                    format!("{name}.mean"),
                    format!("{name}.pool"),
                    format!("{name}.pooled"),
                );
                g.node("GlobalAveragePool", &[&b], &mean, &[]);
                g.conv1x1(&bias, &pool, &mean, &bias);
                g.node("Add", &[&b, &bias], &biased, &[]);
                biased
            }
            (None, false) => b,
            _ => {
                return Err(OnnxError(format!(
                    "block {i}: the net and its metadata disagree about global pooling"
                )))
            }
        };
        g.conv3x3(&sum, &conv2, &b, &sum);
        let added = format!("{name}.sum");
        g.node("Add", &[&sum, &input], &added, &[]);
        g.node("Relu", &[&added], &format!("trunk.{}", i + 1), &[]);
    }
    let trunk = format!("trunk.{}", config.blocks);

    let policy_conv =
        fold_conv3x3(&net.policy_conv, &net.policy_bn, c, c, "policy conv").map_err(fail)?;
    let policy_out =
        fold_conv1x1(&net.policy_out, None, c, config.policy_planes, "policy out").map_err(fail)?;
    g.conv3x3("policy.conv", &policy_conv, &trunk, "policy.conv");
    g.node("Relu", &["policy.conv"], "policy.relu", &[]);
    g.conv1x1("policy.out", &policy_out, "policy.relu", "policy.planes");
    g.node(
        "Flatten",
        &["policy.planes"],
        "policy_logits",
        &[attribute_int("axis", 1)],
    );

    let vc = config.value_channels;
    let value_conv =
        fold_conv1x1(&net.value_conv, Some(&net.value_bn), c, vc, "value conv").map_err(fail)?;
    let value_fc =
        linear(&net.value_fc, vc * SQUARES, config.value_hidden, "value fc").map_err(fail)?;
    let value_out = linear(&net.value_out, config.value_hidden, 3, "value out").map_err(fail)?;
    g.conv1x1("value.conv", &value_conv, &trunk, "value.conv");
    g.node("Relu", &["value.conv"], "value.relu", &[]);
    g.node(
        "Flatten",
        &["value.relu"],
        "value.flat",
        &[attribute_int("axis", 1)],
    );
    g.gemm("value.fc", &value_fc, "value.flat", "value.fc");
    g.node("Relu", &["value.fc"], "value.hidden", &[]);
    g.gemm("value.out", &value_out, "value.hidden", "wdl_logits");

    let mut graph = Vec::new();
    for n in &g.nodes {
        bytes_field(&mut graph, 1, n);
    }
    bytes_field(&mut graph, 2, b"yari-zero");
    for t in &g.initializers {
        bytes_field(&mut graph, 5, t);
    }
    bytes_field(
        &mut graph,
        11,
        &value_info("planes", &[config.input_planes as u64, RANKS, FILES]),
    );
    bytes_field(
        &mut graph,
        12,
        &value_info("policy_logits", &[config.policy_size() as u64]),
    );
    bytes_field(&mut graph, 12, &value_info("wdl_logits", &[3]));

    let mut model = Vec::new();
    varint_field(&mut model, 1, IR_VERSION);
    bytes_field(&mut model, 2, b"yari-zero");
    bytes_field(&mut model, 3, env!("CARGO_PKG_VERSION").as_bytes());
    bytes_field(
        &mut model,
        6,
        b"Yari Shogi policy/value network. Input planes [batch, C, 9, 7]; outputs policy logits \
          (plane-major move indices) and win/draw/loss logits for the side to move. See the \
          project's docs/network.md.",
    );
    bytes_field(&mut model, 7, &graph);
    let mut opset = Vec::new();
    bytes_field(&mut opset, 1, b"");
    varint_field(&mut opset, 2, OPSET);
    bytes_field(&mut model, 8, &opset);
    let meta_json = serde_json::to_string(meta).map_err(|e| OnnxError(e.to_string()))?;
    for (key, value) in [
        ("yari.checkpoint_meta", meta_json.as_str()),
        (
            "yari.outputs",
            "policy_logits: plane-major move logits; wdl_logits: win, draw, loss",
        ),
    ] {
        let mut entry = Vec::new();
        bytes_field(&mut entry, 1, key.as_bytes());
        bytes_field(&mut entry, 2, value.as_bytes());
        bytes_field(&mut model, 14, &entry);
    }
    Ok(model)
}
