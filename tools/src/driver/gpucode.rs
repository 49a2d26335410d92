//! The persistent compile cache of the GPU targets: each kernel instance's SPIR-V (for a
//! subgroup size and a chunking of its arrays) and PTX (for an architecture), kept in the cache
//! folder under a key of everything they depend on (tilec's version, the target's options,
//! the instance's Tile IR), so that a second process (another `tilec run`, a new Python
//! session) launches them without lowering to SIMT form and generating code again. Entries are
//! sealed as the CPU's objects are (`cache::seal`): one that was cut short, changed or does not
//! fit the instance is generated again, never launched. `tilec build` always generates (its
//! `--report` times the code generators).

use super::cache;
use crate::Error;
use std::path::Path;
use tilec_codegen_ptx::PtxKernel;
use tilec_codegen_spirv::{SpirvKernel, SpirvOptions};
use tilec_midend::simt::ParamsLayout;
use tilec_midend::{Kernel, Module};

/// The most the cached shaders of each kind may take; the least recently written go first.
const LIMIT_BYTES: u64 = 256 << 20;

/// The first line of a cached SPIR-V module and of a cached PTX file.
const SPIRV_MAGIC: &[u8] = b"tilec spirv\n";
const PTX_MAGIC: &[u8] = b"tilec ptx\n";

/// The SPIR-V of `kernel` of `module` for `lanes` lanes and `opts` (the arrays' chunking):
/// from the cache folder `dir` when it holds it, else generated (SIMT lowering and code
/// generation) and stored there. A cache that cannot be written is no error. Errors: E0504.
pub(crate) fn spirv(
    dir: Option<&Path>,
    module: &Module,
    kernel: &Kernel,
    lanes: u32,
    opts: &SpirvOptions,
) -> Result<SpirvKernel, Error> {
    let generate = || super::vulkan::spirv_kernel(module, kernel, lanes, opts).map(|(_, spv)| spv);
    let Some(dir) = dir else { return generate() };
    let chunks = format!("{:?}", opts.chunks);
    let key = cache::instance_key(module, kernel, &["spirv", &lanes.to_string(), &chunks]);
    let found = cache::read(dir, "spv", key);
    if let Some(spv) = found.as_deref().and_then(|e| cache::unseal(SPIRV_MAGIC, e)).and_then(|p| decode_spirv(p, opts))
    {
        if spv.lanes == lanes && spv.params == ParamsLayout::of(kernel) {
            return Ok(spv);
        }
    }
    let spv = generate()?;
    cache::store_sealed(dir, "spv", key, SPIRV_MAGIC, &encode_spirv(&spv), LIMIT_BYTES);
    Ok(spv)
}

/// The PTX of `kernel` of `module` for `arch`: from the cache folder `dir` when it holds it,
/// else generated ([`super::cuda::ptx_kernel`]) and stored there. Errors: E0504, E0505.
pub(crate) fn ptx(dir: Option<&Path>, module: &Module, kernel: &Kernel, arch: &str) -> Result<PtxKernel, Error> {
    let generate = || super::cuda::ptx_kernel(module, kernel, arch);
    let Some(dir) = dir else { return generate() };
    // `TILEC_PTX_LANES` changes the SIMT lowering (`Target::simt`).
    let lanes = std::env::var("TILEC_PTX_LANES").unwrap_or_default();
    let key = cache::instance_key(module, kernel, &["ptx", arch, &lanes]);
    let found = cache::read(dir, "ptx", key);
    if let Some(p) = found.as_deref().and_then(|e| cache::unseal(PTX_MAGIC, e)).and_then(decode_ptx) {
        if p.arch == arch && p.params == ParamsLayout::of(kernel) {
            return Ok(p);
        }
    }
    let p = generate()?;
    cache::store_sealed(dir, "ptx", key, PTX_MAGIC, &encode_ptx(&p), LIMIT_BYTES);
    Ok(p)
}

/// A params layout as text: its words, then its offsets.
fn layout_text(l: &ParamsLayout) -> String {
    let offsets: Vec<String> = l.offsets.iter().map(u32::to_string).collect();
    format!("{} {}", l.words, offsets.join(","))
}

/// The layout of [`layout_text`].
fn parse_layout(words: &str, offsets: &str) -> Option<ParamsLayout> {
    let offsets = if offsets.is_empty() {
        Vec::new()
    } else {
        offsets.split(',').map(|o| o.parse().ok()).collect::<Option<Vec<u32>>>()?
    };
    Some(ParamsLayout { offsets, words: words.parse().ok()? })
}

/// A SPIR-V entry's payload: one line `lanes arrays shared_bytes params_words offsets`, then
/// the words, little-endian.
fn encode_spirv(spv: &SpirvKernel) -> Vec<u8> {
    let head = format!("{} {} {} {}\n", spv.lanes, spv.arrays, spv.shared_bytes, layout_text(&spv.params));
    let mut out = head.into_bytes();
    out.extend(spv.words.iter().flat_map(|w| w.to_le_bytes()));
    out
}

/// The module of an [`encode_spirv`] payload, with `opts`' chunking.
fn decode_spirv(payload: &[u8], opts: &SpirvOptions) -> Option<SpirvKernel> {
    let nl = payload.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&payload[..nl]).ok()?;
    let f: Vec<&str> = head.split(' ').collect();
    let [lanes, arrays, shared, words, offsets] = f[..] else { return None };
    let body = &payload[nl + 1..];
    if !body.len().is_multiple_of(4) {
        return None;
    }
    Some(SpirvKernel {
        words: body.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        lanes: lanes.parse().ok()?,
        arrays: arrays.parse().ok()?,
        params: parse_layout(words, offsets)?,
        shared_bytes: shared.parse().ok()?,
        chunks: opts.chunks.clone(),
    })
}

/// A PTX entry's payload: one line `entry lanes programs_per_block shared_bytes arch
/// params_words offsets`, then the PTX text.
fn encode_ptx(p: &PtxKernel) -> Vec<u8> {
    let head = format!(
        "{} {} {} {} {} {}\n",
        p.entry,
        p.lanes,
        p.programs_per_block,
        p.shared_bytes,
        p.arch,
        layout_text(&p.params)
    );
    let mut out = head.into_bytes();
    out.extend_from_slice(p.text.as_bytes());
    out
}

/// The PTX of an [`encode_ptx`] payload.
fn decode_ptx(payload: &[u8]) -> Option<PtxKernel> {
    let text = std::str::from_utf8(payload).ok()?;
    let (head, body) = text.split_once('\n')?;
    let f: Vec<&str> = head.split(' ').collect();
    let [entry, lanes, ppb, shared, arch, words, offsets] = f[..] else { return None };
    Some(PtxKernel {
        text: body.to_string(),
        entry: entry.to_string(),
        lanes: lanes.parse().ok()?,
        programs_per_block: ppb.parse().ok()?,
        params: parse_layout(words, offsets)?,
        shared_bytes: shared.parse().ok()?,
        arch: arch.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The stdlib's `potrf_batched` for f32, compiled.
    fn potrf() -> (Module, Kernel) {
        let text = crate::STDLIB.iter().find(|(m, _)| *m == "linalg").expect("linalg").1;
        let src = crate::SourceSet::with_stdlib("stdlib/linalg.tile", text);
        let f32 = tilec_frontend::GenericArg::Type(tilec_midend::Scalar::F32);
        let all = tilec_frontend::Instances::All { fixed: HashMap::from([("T".to_string(), f32)]) };
        let m = crate::compile(&src, &all, &Default::default()).expect("compiles").module;
        let k = m.kernels.iter().find(|k| k.symbol == "potrf_batched__f32").expect("potrf").clone();
        (m, k)
    }

    fn entries(dir: &Path, kind: &str) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir.join(kind)).map_or(Vec::new(), |d| d.flatten().map(|e| e.path()).collect())
    }

    /// SPIR-V: stored on a miss, read back whole on a hit (the file not written again), and a
    /// changed or short entry is generated again and rewritten; another subgroup size is
    /// another entry.
    #[test]
    fn spirv_entries_are_reused_and_bad_ones_rebuilt() {
        let dir = std::env::temp_dir().join(format!("tilec-spv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (m, k) = potrf();
        let opts = SpirvOptions::default();
        let fresh = spirv(None, &m, &k, 8, &opts).expect("SPIR-V");
        let stored = spirv(Some(&dir), &m, &k, 8, &opts).expect("SPIR-V");
        assert_eq!(stored.words, fresh.words);
        let files = entries(&dir, "spv");
        assert_eq!(files.len(), 1);
        let bytes = std::fs::read(&files[0]).expect("entry");
        let when = std::fs::metadata(&files[0]).and_then(|m| m.modified()).expect("mtime");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let hit = spirv(Some(&dir), &m, &k, 8, &opts).expect("SPIR-V");
        assert_eq!(
            (&hit.words, hit.lanes, hit.arrays, hit.shared_bytes),
            (&fresh.words, 8, fresh.arrays, fresh.shared_bytes)
        );
        assert_eq!(hit.params, fresh.params);
        assert_eq!(std::fs::metadata(&files[0]).and_then(|m| m.modified()).expect("mtime"), when, "read, not written");
        for bad in [bytes[..bytes.len() - 3].to_vec(), {
            let mut b = bytes.clone();
            b[bytes.len() / 2] ^= 1;
            b
        }] {
            std::fs::write(&files[0], bad).expect("write");
            assert_eq!(spirv(Some(&dir), &m, &k, 8, &opts).expect("SPIR-V").words, fresh.words);
            assert_eq!(std::fs::read(&files[0]).expect("entry"), bytes, "rebuilt whole");
        }
        spirv(Some(&dir), &m, &k, 16, &opts).expect("SPIR-V");
        assert_eq!(entries(&dir, "spv").len(), 2, "16 lanes: another entry");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// PTX: the same, per architecture.
    #[cfg(feature = "llvm")]
    #[test]
    fn ptx_entries_are_reused_and_bad_ones_rebuilt() {
        let dir = std::env::temp_dir().join(format!("tilec-ptx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (m, k) = potrf();
        let fresh = ptx(None, &m, &k, "sm_80").expect("PTX");
        let stored = ptx(Some(&dir), &m, &k, "sm_80").expect("PTX");
        assert_eq!(stored.text, fresh.text);
        let files = entries(&dir, "ptx");
        assert_eq!(files.len(), 1);
        let bytes = std::fs::read(&files[0]).expect("entry");
        let hit = ptx(Some(&dir), &m, &k, "sm_80").expect("PTX");
        let fields = |p: &PtxKernel| {
            (
                p.text.clone(),
                p.entry.clone(),
                p.lanes,
                p.programs_per_block,
                p.shared_bytes,
                p.arch.clone(),
                p.params.clone(),
            )
        };
        assert_eq!(fields(&hit), fields(&fresh));
        let mut changed = bytes.clone();
        changed[bytes.len() - 10] ^= 1;
        std::fs::write(&files[0], changed).expect("write");
        assert_eq!(ptx(Some(&dir), &m, &k, "sm_80").expect("PTX").text, fresh.text);
        assert_eq!(std::fs::read(&files[0]).expect("entry"), bytes, "rebuilt whole");
        let sm90 = ptx(Some(&dir), &m, &k, "sm_90").expect("PTX");
        assert_eq!((sm90.arch.as_str(), entries(&dir, "ptx").len()), ("sm_90", 2));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
