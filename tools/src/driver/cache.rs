//! The user's tilec cache folder: records that outlive a process (the tuner's winners), written
//! so that concurrent processes never see half a file, and read back as untrusted input.

use std::path::{Path, PathBuf};

/// The cache folder a process uses unless told otherwise: `$TILEC_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tilec`, else `$HOME/.cache/tilec`; `None` when none of them is set.
pub fn default_dir() -> Option<PathBuf> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TILEC_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tilec")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/tilec")))
}

/// FNV-1a (64 bits) of `parts`, each followed by a zero byte: a key that is the same in every
/// process and every build of tilec (unlike `std`'s hashers).
pub(crate) fn key(parts: &[&str]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// The file of record `key` of `kind` (a subfolder: `tune`) under `dir`.
pub(crate) fn path(dir: &Path, kind: &str, key: u64) -> PathBuf {
    dir.join(kind).join(format!("{key:016x}.json"))
}

/// The text of record `key` of `kind`, if there is one that can be read.
pub(crate) fn read(dir: &Path, kind: &str, key: u64) -> Option<String> {
    std::fs::read_to_string(path(dir, kind, key)).ok()
}

/// Writes record `key` of `kind`: to a file of this process and call first, then renamed over
/// the record, so that a reader (another process included) sees the old record or the new one,
/// never a part. Errors: the folder cannot be made or written.
pub(crate) fn write(dir: &Path, kind: &str, key: u64, text: &str) -> std::io::Result<PathBuf> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = path(dir, kind, key);
    let folder = p.parent().unwrap_or(dir);
    std::fs::create_dir_all(folder)?;
    let tmp = folder.join(format!(".{key:016x}.{}.{call}.tmp", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &p).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    /// Writers racing on one record (threads here; processes use the same unique temporary
    /// names and rename) leave one whole record, never a mix, and no temporary files.
    #[test]
    fn racing_writers_leave_one_whole_record() {
        let dir = std::env::temp_dir().join(format!("tilec-cache-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let texts: Vec<String> =
            (0..8).map(|i| format!("{{\"writer\": {i}, \"pad\": \"{}\"}}\n", "x".repeat(1 << 16))).collect();
        std::thread::scope(|s| {
            for t in &texts {
                let dir = &dir;
                s.spawn(move || {
                    for _ in 0..20 {
                        super::write(dir, "tune", 7, t).expect("written");
                    }
                });
            }
        });
        let got = super::read(&dir, "tune", 7).expect("a record");
        assert!(texts.contains(&got), "a whole record");
        let files = std::fs::read_dir(dir.join("tune")).expect("the folder").count();
        assert_eq!(files, 1, "no temporary files left");
        assert_ne!(super::key(&["a", "bc"]), super::key(&["ab", "c"]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
