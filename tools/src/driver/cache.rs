//! The user's tilec cache folder: what outlives a process (the tuner's records, the LLVM CPU
//! backend's object code, the GPU targets' SPIR-V and PTX), written so that concurrent
//! processes never see half a file, and read back as untrusted input: code entries are sealed
//! with a digest of their bytes.

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
    parts.iter().fold(FNV_OFFSET, |h, p| fnv(fnv(h, p.as_bytes()), &[0]))
}

/// FNV-1a (64 bits) of `bytes`: the digest that cache entries (and the LLVM object snapshots
/// of the tests) carry.
pub fn digest(bytes: &[u8]) -> u64 {
    fnv(FNV_OFFSET, bytes)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's state `h` after `bytes`.
fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
}

/// An entry of code: the `magic` line, the FNV-1a digest of `payload` in hex and a newline,
/// then `payload`.
pub(crate) fn seal(magic: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = magic.to_vec();
    out.extend_from_slice(format!("{:016x}\n", digest(payload)).as_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a [`seal`]ed entry with this `magic` whose digest matches.
pub(crate) fn unseal<'a>(magic: &[u8], entry: &'a [u8]) -> Option<&'a [u8]> {
    let rest = entry.strip_prefix(magic)?;
    let (hex, payload) = (rest.get(..16)?, rest.get(17..)?);
    let want = u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    (rest.get(16) == Some(&b'\n') && digest(payload) == want).then_some(payload)
}

/// The key of a kernel instance's code: tilec's version and the commit it was built from,
/// with a digest of uncommitted changes (`build.rs`, `TILEC_BUILD_ID`; so a build from another
/// commit or other changes with the same version, whose code generators may differ, never
/// reads this build's code), `what` (the kind of code and its options:
/// `["ptx", "sm_80", ..]`), the instance's symbol and its module's Tile IR.
pub(crate) fn instance_key(module: &tilec_midend::Module, kernel: &tilec_midend::Kernel, what: &[&str]) -> u64 {
    let ir = tilec_midend::print::print_module(module);
    let mut parts = vec![env!("CARGO_PKG_VERSION"), env!("TILEC_BUILD_ID")];
    parts.extend_from_slice(what);
    parts.extend([kernel.symbol.as_str(), ir.as_str()]);
    key(&parts)
}

/// Writes code entry `key` of `kind`, `payload` [`seal`]ed under `magic`, then trims `kind` to
/// `limit` bytes. Failures are ignored: the cache is an optimisation.
pub(crate) fn store_sealed(dir: &Path, kind: &str, key: u64, magic: &[u8], payload: &[u8], limit: u64) {
    if write(dir, kind, key, &seal(magic, payload)).is_ok() {
        trim(dir, kind, limit);
    }
}

/// The file of entry `key` of `kind` (a subfolder: `tune` for tuning records, JSON; `obj` for
/// object code, `spv` for SPIR-V, `ptx` for PTX) under `dir`.
pub(crate) fn path(dir: &Path, kind: &str, key: u64) -> PathBuf {
    let ext = if kind == "tune" { "json" } else { kind };
    dir.join(kind).join(format!("{key:016x}.{ext}"))
}

/// The bytes of entry `key` of `kind`, if there is one that can be read.
pub(crate) fn read(dir: &Path, kind: &str, key: u64) -> Option<Vec<u8>> {
    std::fs::read(path(dir, kind, key)).ok()
}

/// Removes the least recently written entries of `kind` until they take at most `limit`
/// bytes, and temporary files left by processes that died writing (older than an hour).
/// Failures (another process removing the same file) are ignored.
pub(crate) fn trim(dir: &Path, kind: &str, limit: u64) {
    let Ok(entries) = std::fs::read_dir(dir.join(kind)) else { return };
    let now = std::time::SystemTime::now();
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        let written = meta.modified().unwrap_or(now);
        let stale = now.duration_since(written).is_ok_and(|age| age.as_secs() > 3600);
        if e.file_name().to_string_lossy().ends_with(".tmp") {
            if stale {
                let _ = std::fs::remove_file(e.path());
            }
            continue;
        }
        files.push((written, meta.len(), e.path()));
    }
    files.sort();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    for (_, len, p) in files {
        if total <= limit {
            break;
        }
        if std::fs::remove_file(&p).is_ok() {
            total -= len;
        }
    }
}

/// Writes record `key` of `kind`: to a file of this process and call first, then renamed over
/// the record, so that a reader (another process included) sees the old record or the new one,
/// never a part. Errors: the folder cannot be made or written.
pub(crate) fn write(dir: &Path, kind: &str, key: u64, bytes: &[u8]) -> std::io::Result<PathBuf> {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = path(dir, kind, key);
    let folder = p.parent().unwrap_or(dir);
    std::fs::create_dir_all(folder)?;
    let tmp = folder.join(format!(".{key:016x}.{}.{call}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
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
                        super::write(dir, "tune", 7, t.as_bytes()).expect("written");
                    }
                });
            }
        });
        let got = String::from_utf8(super::read(&dir, "tune", 7).expect("a record")).expect("text");
        assert!(texts.contains(&got), "a whole record");
        let files = std::fs::read_dir(dir.join("tune")).expect("the folder").count();
        assert_eq!(files, 1, "no temporary files left");
        assert_ne!(super::key(&["a", "bc"]), super::key(&["ab", "c"]));
        // Trimming keeps the newest entries under the limit.
        for k in 0..4u64 {
            super::write(&dir, "obj", k, &[0u8; 1000]).expect("written");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        super::trim(&dir, "obj", 2500);
        let left: Vec<bool> = (0..4).map(|k| super::read(&dir, "obj", k).is_some()).collect();
        assert_eq!(left, [false, false, true, true]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
