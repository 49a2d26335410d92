//! Tiered CPU code: an LLVM instance whose object is not in the persistent compile cache runs
//! Cranelift's code (compiled in milliseconds) until LLVM's is ready. The second launch of the
//! instance starts LLVM's compile on a background thread; the launches after it is done run
//! LLVM's code, and its object goes into the compile cache, so that later processes run it from
//! their first launch. A one-off `tilec run` or a first Python call is therefore Cranelift's
//! alone (potrf_batched on one 92x92 matrix: 16 ms with Cranelift against 0.6 s with LLVM's O3
//! compile), and repeated launches get LLVM's speed (2-3x on the stdlib). Measured on the 2-core
//! test machine (`bench/first_run.sh`): started after the first launch, the compile slowed a
//! one-off run of potrf on 4096 92x92 matrices that writes its 139 MB factor (up to 0.7 s
//! against 0.24-0.37 s) for nothing, since the process ends before it; at the lowest
//! scheduling priority (nice 19) it never finished during a Python loop of potrf calls that
//! keeps both cores busy, so it runs at normal priority.
//!
//! Timed launches (`--repeat` above 1, tuning) need LLVM's code, so that they time one code
//! generator: when the background has not finished it (or not started it), they compile it
//! themselves, and the background's result, if it comes, is dropped.
//!
//! A process that exits while a background compile runs would run LLVM's static destructors
//! under it (seen: "double free or corruption" aborts at the end of runs). So the first
//! background compile registers an exit handler (glibc's `on_exit`, which runs before the
//! destructors registered earlier) that, while a compile is in flight, flushes the C library's
//! streams and ends the process with its exit status at once (`_exit`): what a background
//! compile leaves unfinished is only a cache entry, never written half (entries are renamed
//! into place). On other platforms there is no background compile: Cranelift's code runs until
//! a timed launch compiles LLVM's.
//!
//! The two code generators give the same bits (one scalar semantics and the same operation
//! order; `tests/tests/fuzz_kernels/` compares their bits), so which one ran a launch changes
//! its time, never its results.

use super::{CpuRunner, Error};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tilec_codegen_cpu::CpuBackend;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::Module;

/// LLVM's code of an instance, being compiled on a background thread.
type Pending = Arc<OnceLock<Result<CpuRunner, Vec<Diagnostic>>>>;

/// An instance's Cranelift code, and its LLVM code once compiled.
pub(crate) struct Tiered {
    cranelift: CpuRunner,
    llvm: Pending,
    /// What a launch that needs LLVM's code before the background has it compiles.
    module: Module,
    cache: Option<PathBuf>,
    /// Held while a launch compiles LLVM's code itself, so that two do not.
    compiling: Mutex<()>,
    /// Starts the background compile, once.
    background: std::sync::Once,
    /// Launches so far.
    launches: AtomicU32,
}

impl Tiered {
    /// Compiles `module`'s first kernel with Cranelift now; LLVM's object goes into the
    /// compile cache `cache`, if any, when compiled. Errors: Cranelift's code generation
    /// (E0901).
    pub(crate) fn start(module: &Module, cache: Option<&Path>) -> Result<Tiered, Error> {
        let cranelift =
            CpuRunner::from_module_cached(module.clone(), CpuBackend::Cranelift, None).map_err(Error::compile)?;
        Ok(Tiered {
            cranelift,
            llvm: Arc::default(),
            module: module.clone(),
            cache: cache.map(PathBuf::from),
            compiling: Mutex::new(()),
            background: std::sync::Once::new(),
            launches: AtomicU32::new(0),
        })
    }

    /// Counts a launch; the second starts LLVM's compile in the background.
    pub(crate) fn count_launch(&self) {
        if self.launches.fetch_add(1, Ordering::SeqCst) >= 1 {
            self.compile_in_background();
        }
    }

    /// Starts LLVM's compile on a background thread, the first time it is called. A thread
    /// that cannot start leaves the instance on Cranelift's code until a timed launch compiles
    /// LLVM's.
    fn compile_in_background(&self) {
        if !exit::guarded() {
            return;
        }
        self.background.call_once(|| {
            let (slot, m, dir) = (self.llvm.clone(), self.module.clone(), self.cache.clone());
            exit::IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
            let spawned = std::thread::Builder::new().name("tilec-llvm".into()).spawn(move || {
                if slot.get().is_none() {
                    let _ = slot.set(CpuRunner::from_module_cached(m, CpuBackend::Llvm, dir.as_deref()));
                }
                exit::IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                exit::IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
            }
        });
    }

    /// The code for a launch: LLVM's when it is ready (with `need_llvm`, compiled now if it is
    /// not), else Cranelift's. Errors (only with `need_llvm`): LLVM's code generation (E0901).
    pub(crate) fn runner(&self, need_llvm: bool) -> Result<&CpuRunner, Error> {
        if need_llvm && self.llvm.get().is_none() {
            let _one = self.compiling.lock().unwrap_or_else(|p| p.into_inner());
            if self.llvm.get().is_none() {
                let compiled =
                    CpuRunner::from_module_cached(self.module.clone(), CpuBackend::Llvm, self.cache.as_deref());
                let _ = self.llvm.set(compiled);
            }
        }
        match self.llvm.get() {
            Some(Ok(r)) => Ok(r),
            Some(Err(d)) if need_llvm => Err(Error::compile(d.clone())),
            _ => Ok(&self.cranelift),
        }
    }
}

/// The exit handler that keeps a process from running LLVM's destructors under a background
/// compile (the module docs).
mod exit {
    use std::sync::atomic::AtomicUsize;

    /// Background compiles running.
    pub(super) static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

    /// Whether the exit handler is registered (registering it on the first call): background
    /// compiles may start only then.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub(super) fn guarded() -> bool {
        use std::sync::atomic::Ordering;
        use std::sync::OnceLock;
        extern "C" {
            /// glibc: `function(status, arg)` is called by `exit`, in reverse order of
            /// registration with `atexit` handlers and static destructors.
            fn on_exit(function: extern "C" fn(libc::c_int, *mut libc::c_void), arg: *mut libc::c_void) -> libc::c_int;
        }
        extern "C" fn leave(status: libc::c_int, _: *mut libc::c_void) {
            if IN_FLIGHT.load(Ordering::SeqCst) > 0 {
                // SAFETY: flushing every C stream and ending the process are what `exit` would
                // do next, less the destructors that the running compile still uses.
                unsafe {
                    libc::fflush(std::ptr::null_mut());
                    libc::_exit(status);
                }
            }
        }
        static REGISTERED: OnceLock<bool> = OnceLock::new();
        // SAFETY: registers a handler that touches only an atomic and the C library.
        *REGISTERED.get_or_init(|| unsafe { on_exit(leave, std::ptr::null_mut()) } == 0)
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(super) fn guarded() -> bool {
        false
    }
}
