//! The programs whose generated code is snapshotted and validated: the standard library and
//! every example, each with a snapshot key made from its path.

use tilec::SourceSet;

/// `(key, sources)` for `stdlib/linalg.tile` and every `examples/*.tile`, in order.
pub(crate) fn programs() -> Vec<(String, SourceSet)> {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let mut files = vec!["stdlib/linalg.tile".to_string()];
    let mut examples: Vec<String> = std::fs::read_dir(format!("{root}/examples"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| format!("examples/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".tile"))
        .collect();
    examples.sort();
    files.extend(examples);
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(format!("{root}/{f}")).unwrap();
            (f.replace(['/', '.'], "_"), SourceSet::with_stdlib(f, text))
        })
        .collect()
}
