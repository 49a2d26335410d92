//! The persistent compile cache of the LLVM CPU backend: the object code of each kernel
//! instance, kept in the cache folder under a key of everything it depends on (tilec's
//! version, the host CPU and its features, the instance's Tile IR), so that a second process
//! (another `tilec run`, a new Python session) links it instead of compiling it again (about
//! 0.5 s per instance at O3). Entries carry a digest of their bytes: one that was cut short,
//! changed or cannot be loaded is rebuilt, never run.

use super::cache;
use std::path::Path;
use tilec_codegen_cpu::{CodegenError, JitKernel};
use tilec_midend::{Kernel, Module};

/// The most the cached objects may take; the least recently written go first.
const LIMIT_BYTES: u64 = 512 << 20;

/// The first line of a cached object.
const MAGIC: &[u8] = b"tilec object\n";

/// `kernel` of `module` JIT-compiled with LLVM, from the cache folder `dir` when it holds the
/// object, else compiled, stored there and loaded. A cache that cannot be written is no error.
/// Errors: code generation's, LLVM's loading of a fresh object.
pub(crate) fn llvm_jit(dir: &Path, module: &Module, kernel: &Kernel) -> Result<JitKernel, CodegenError> {
    let key = object_key(module, kernel);
    if let Some(jit) = load(dir, key, kernel) {
        return Ok(jit);
    }
    let object = tilec_codegen_cpu::compile_jit_object(module, kernel)?;
    cache::store_sealed(dir, "obj", key, MAGIC, &object, LIMIT_BYTES);
    // SAFETY: just made by `compile_jit_object` for this kernel on this host.
    unsafe { tilec_codegen_cpu::load_jit_object(&object, kernel) }
}

/// `kernel` of `module` JIT-compiled with LLVM, if the cache folder `dir` holds its object.
pub(crate) fn llvm_cached(dir: &Path, module: &Module, kernel: &Kernel) -> Option<JitKernel> {
    load(dir, object_key(module, kernel), kernel)
}

/// The cache key of an instance's object: tilec's version, the host, the instance's IR.
fn object_key(module: &Module, kernel: &Kernel) -> u64 {
    cache::instance_key(module, kernel, &["llvm cpu object", &tilec_codegen_cpu::llvm_host()])
}

/// The object under `key`, loaded, when the cache holds an intact one that loads.
fn load(dir: &Path, key: u64, kernel: &Kernel) -> Option<JitKernel> {
    let entry = cache::read(dir, "obj", key)?;
    let object = cache::unseal(MAGIC, &entry)?;
    // SAFETY: the digest shows these are the bytes `compile_jit_object` made for this key:
    // this instance's IR on this host with this tilec.
    unsafe { tilec_codegen_cpu::load_jit_object(object, kernel) }.ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_changed_or_short_entry_is_refused() {
        let object = b"\x7fELF and the rest".to_vec();
        let (seal, unseal, magic) = (super::cache::seal, super::cache::unseal, super::MAGIC);
        let sealed = seal(magic, &object);
        assert_eq!(unseal(magic, &sealed), Some(&object[..]));
        let mut changed = sealed.clone();
        *changed.last_mut().expect("bytes") ^= 1;
        assert_eq!(unseal(magic, &changed), None);
        assert_eq!(unseal(magic, &sealed[..sealed.len() - 1]), None);
        assert_eq!(unseal(magic, b"tilec object\n"), None);
        assert_eq!(unseal(b"tilec ptx\n", &sealed), None, "another kind's magic");
    }
}
