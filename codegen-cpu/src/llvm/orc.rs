//! Code that was compiled earlier, loaded back: an object file of one kernel instance (as
//! [`super::compile_jit_object`] writes it, for a persistent compile cache) linked into this
//! process by LLVM's ORC LLJIT, its external symbols (libm) resolved from the process.

use super::err;
use crate::{CodegenError, KernelFn};
use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use llvm_sys::orc2::lljit::{
    LLVMOrcCreateLLJIT, LLVMOrcDisposeLLJIT, LLVMOrcLLJITAddObjectFile, LLVMOrcLLJITGetGlobalPrefix,
    LLVMOrcLLJITGetMainJITDylib, LLVMOrcLLJITLookup, LLVMOrcLLJITRef,
};
use llvm_sys::orc2::{LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess, LLVMOrcJITDylibAddGenerator};
use std::ffi::{CStr, CString};

/// An LLJIT instance holding one loaded object's code, freed with it.
pub(crate) struct OrcJit(LLVMOrcLLJITRef);

// SAFETY: the instance is only disposed, once, in `drop`; the code it holds is immutable once
// linked, and calling it from several threads is what `JitKernel` promises for every backend.
unsafe impl Send for OrcJit {}
unsafe impl Sync for OrcJit {}

impl Drop for OrcJit {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `LLVMOrcCreateLLJIT` and is disposed once; its error, if
        // any, is consumed.
        let _ = check(unsafe { LLVMOrcDisposeLLJIT(self.0) });
    }
}

/// `Err` with LLVM's message for a failure (the error is consumed).
fn check(e: LLVMErrorRef) -> Result<(), CodegenError> {
    if e.is_null() {
        return Ok(());
    }
    // SAFETY: `e` is an unconsumed error; its message is copied, then both are freed.
    unsafe {
        let m = LLVMGetErrorMessage(e);
        let text = CStr::from_ptr(m).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(m);
        Err(err(format!("LLVM could not load the cached object: {text}")))
    }
}

/// Links `object` (an ELF relocatable object of the host) into the process and returns the
/// code's owner and the address of `symbol`, the kernel's entry point. Errors: LLVM's (a
/// malformed object, an unresolved symbol). The caller vouches that `object` is one
/// [`super::compile_jit_object`] made for this host and that `symbol` has the signature of
/// [`KernelFn`] (a persistent cache checks a digest of the bytes before handing them here).
pub(crate) fn load(object: &[u8], symbol: &str) -> Result<(OrcJit, KernelFn), CodegenError> {
    tilec_codegen_llvm::initialize(tilec_codegen_llvm::Arch::Host)?;
    let sym = CString::new(symbol).map_err(err)?;
    let name = CString::new("tilec-cached-object").map_err(err)?;
    // SAFETY: each call gets the pointers LLVM's C API documents; the memory buffer is a copy
    // of `object` owned by LLVM from `LLVMOrcLLJITAddObjectFile` on; the generator is owned by
    // the JITDylib it is added to; `jit` frees the instance on every path.
    unsafe {
        let mut raw: LLVMOrcLLJITRef = std::ptr::null_mut();
        check(LLVMOrcCreateLLJIT(&mut raw, std::ptr::null_mut()))?;
        let jit = OrcJit(raw);
        let dylib = LLVMOrcLLJITGetMainJITDylib(jit.0);
        let mut generator = std::ptr::null_mut();
        let prefix = LLVMOrcLLJITGetGlobalPrefix(jit.0);
        check(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            &mut generator,
            prefix,
            None,
            std::ptr::null_mut(),
        ))?;
        LLVMOrcJITDylibAddGenerator(dylib, generator);
        let buffer = llvm_sys::core::LLVMCreateMemoryBufferWithMemoryRangeCopy(
            object.as_ptr().cast(),
            object.len(),
            name.as_ptr(),
        );
        check(LLVMOrcLLJITAddObjectFile(jit.0, dylib, buffer))?;
        let mut addr = 0;
        check(LLVMOrcLLJITLookup(jit.0, &mut addr, sym.as_ptr()))?;
        if addr == 0 {
            return Err(err(format!("the cached object has no `{symbol}`")));
        }
        // SAFETY: the caller vouches for the symbol's signature (see above).
        let entry = std::mem::transmute::<usize, KernelFn>(addr as usize);
        Ok((jit, entry))
    }
}
