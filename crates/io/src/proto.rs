//! The few protocol-buffer encodings the project writes by hand (TensorBoard events, ONNX
//! models): a field key, then a varint, a fixed 32/64-bit value or length-delimited bytes.
//! Fields are numbered as in the `.proto` files of those formats; a library for a handful of
//! messages would outweigh these functions.

/// A base-128 varint.
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Field `field` as a varint (int32, int64, uint64, bool, enum).
pub fn varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    varint(out, field << 3);
    varint(out, v);
}

/// Field `field` as a 64-bit double.
pub fn double_field(out: &mut Vec<u8>, field: u64, v: f64) {
    varint(out, (field << 3) | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Field `field` as a 32-bit float.
pub fn float_field(out: &mut Vec<u8>, field: u64, v: f32) {
    varint(out, (field << 3) | 5);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Field `field` as length-delimited bytes (a string, bytes, or an encoded message).
pub fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_protobuf_spec_examples() {
        // From the protobuf encoding guide: 150 in field 1 is 08 96 01; "testing" in field 2
        // is 12 07 74 65 73 74 69 6e 67.
        let mut out = Vec::new();
        varint_field(&mut out, 1, 150);
        assert_eq!(out, [0x08, 0x96, 0x01]);
        let mut out = Vec::new();
        bytes_field(&mut out, 2, b"testing");
        assert_eq!(out, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        let mut out = Vec::new();
        float_field(&mut out, 2, 1.0);
        assert_eq!(out, [0x15, 0x00, 0x00, 0x80, 0x3f]);
        let mut out = Vec::new();
        double_field(&mut out, 1, 1.0);
        assert_eq!(out, [0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        let mut out = Vec::new();
        varint(&mut out, u64::MAX);
        assert_eq!(out.len(), 10);
    }
}
