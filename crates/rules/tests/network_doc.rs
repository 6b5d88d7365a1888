//! docs/network.md documents the encoding for people outside the project; its tables must
//! be the ones of the encoding's own documentation (`src/encoding.rs`), the source of truth.

fn table_rows(text: &str, header: &str) -> Vec<String> {
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("no table {header:?}"));
    text[start..]
        .lines()
        .map(|l| l.trim_start_matches("//!").trim())
        .take_while(|l| l.starts_with('|'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_network_doc_has_the_encodings_tables() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/encoding.rs")).unwrap();
    let doc = std::fs::read_to_string(root.join("../../docs/network.md")).unwrap();
    for header in ["| planes | meaning |", "| planes | move |"] {
        let want = table_rows(&source, header);
        assert!(want.len() > 8, "{header}: {want:?}");
        assert_eq!(
            table_rows(&doc, header),
            want,
            "docs/network.md differs from encoding.rs"
        );
    }
}
