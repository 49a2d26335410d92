//! Launching on the CPU: the kernel ABI, argument packing, grid evaluation and the parallel
//! launcher (one call per program, spread over the rayon thread pool).

use rayon::prelude::*;
use tilec_midend::eval::{eval_launch, LaunchArg, LaunchValues};
use tilec_midend::{Const, Kernel, Module, ParamKind, Scalar};

use crate::bind::{ArgValue, Bound};
use crate::error::RunError;

/// A compiled CPU kernel: runs one program of the grid.
///
/// `args` points to packed 8-byte slots, for each kernel parameter in order: an array takes
/// `1 + rank` slots `[data pointer, extent0, .., extent{rank-1}]` (extents as `i64`); a scalar
/// takes one slot holding its bit pattern zero-extended (`f32::to_bits`, `i32 as u32`,
/// `f64::to_bits`, `i64` as is, `bool` as 0 or 1). `ids` points to six `i64`:
/// `[program_id0, program_id1, program_id2, grid0, grid1, grid2]`. (The CPU code generators
/// produce functions of this type, `tilec_codegen_cpu::KernelFn`; the runtime names it itself
/// and does not depend on them.)
pub type CpuKernelFn = unsafe extern "C" fn(args: *const u64, ids: *const i64);

/// The bit pattern of a scalar in its argument slot.
fn scalar_slot(c: Const) -> u64 {
    match c {
        Const::Bool(b) => b as u64,
        Const::Int(v, Scalar::I32 | Scalar::U32) => v as u32 as u64,
        Const::Int(v, _) => v as u64,
        Const::Float(v, Scalar::F32) => (v as f32).to_bits() as u64,
        Const::Float(v, _) => v.to_bits(),
    }
}

fn check_bound(kernel: &Kernel, bound: &Bound) -> Result<(), RunError> {
    if bound.kernel_symbol() != kernel.symbol || bound.args().len() != kernel.params.len() {
        return Err(RunError::Mismatch {
            detail: format!(
                "arguments bound for kernel `{}` used with kernel `{}`",
                bound.kernel_symbol(),
                kernel.symbol
            ),
        });
    }
    Ok(())
}

/// Packs the bound arguments into the slots of [`CpuKernelFn`]. The data pointers point into
/// `bound`'s arrays: they stay valid while `bound` is alive and its arrays are not replaced.
/// Errors: `bound` was not bound for `kernel` (E0417); an array is in CUDA device memory
/// (E0442).
pub fn pack_args(kernel: &Kernel, bound: &mut Bound) -> Result<Vec<u64>, RunError> {
    check_bound(kernel, bound)?;
    bound.check_host_memory("cpu")?;
    let mut slots = Vec::new();
    for (p, (_, value)) in kernel.params.iter().zip(bound.args_mut()) {
        match value {
            // Kernels write only `mut` arrays, so read-only ones are passed as they are.
            ArgValue::Array(a) if !matches!(p.kind, ParamKind::Array { mutable: true, .. }) => {
                slots.push(a.as_ptr() as usize as u64);
                slots.extend(a.shape().iter().map(|&d| d as i64 as u64));
            }
            ArgValue::Array(a) => {
                slots.push(a.as_mut_ptr() as usize as u64);
                slots.extend(a.shape().iter().map(|&d| d as i64 as u64));
            }
            ArgValue::Scalar(c) => slots.push(scalar_slot(*c)),
            // Rejected by `check_host_memory` above.
            ArgValue::Device(_) => {}
        }
    }
    Ok(slots)
}

/// Checks a grid and returns its extents as `usize` and its number of programs (0 when an
/// extent is zero or negative). Error E0416 when an extent is above `i32::MAX` or the
/// program count does not fit in `usize`.
fn grid_size(grid: [i64; 3]) -> Result<([usize; 3], usize), RunError> {
    if grid.iter().any(|&g| g > i32::MAX as i64) {
        return Err(RunError::GridTooLarge { grid });
    }
    if grid.iter().any(|&g| g <= 0) {
        return Ok(([0; 3], 0));
    }
    let g = grid.map(|g| g as usize);
    match g[0].checked_mul(g[1]).and_then(|n| n.checked_mul(g[2])) {
        Some(n) => Ok((g, n)),
        None => Err(RunError::GridTooLarge { grid }),
    }
}

/// Evaluates the launch function of `kernel` (`module.funcs[kernel.launch]`) on the bound
/// arguments: the grid and the flop count. Errors: the module, kernel and arguments do not
/// belong together (E0417); the evaluation fails (E0415); a grid extent is above `i32::MAX`
/// (E0416). Extents of zero or below are returned as they are (they launch no program).
pub fn launch_values(module: &Module, kernel: &Kernel, bound: &Bound) -> Result<LaunchValues, RunError> {
    check_bound(kernel, bound)?;
    let Some(f) = module.funcs.get(kernel.launch.index()) else {
        return Err(RunError::Mismatch {
            detail: format!("launch function {} of kernel `{}` is not in the module", kernel.launch, kernel.symbol),
        });
    };
    let args: Vec<LaunchArg> = bound
        .args()
        .iter()
        .map(|(_, v)| match v {
            ArgValue::Scalar(c) => LaunchArg::Scalar(*c),
            _ => LaunchArg::Array { dims: v.array_type().map_or_else(Vec::new, |(_, s)| s.to_vec()) },
        })
        .collect();
    let values = eval_launch(f, &args).map_err(|error| RunError::Eval { kernel: kernel.name.clone(), error })?;
    grid_size(values.grid)?;
    Ok(values)
}

/// The argument slots, shared by all programs of a launch.
#[derive(Clone, Copy)]
struct SharedArgs(*const u64);

// SAFETY: the slots are only read during the launch, and the arrays they point to are written
// by the programs at disjoint elements (the kernel's contract), so sharing them between the
// threads of one launch is sound; `launch_cpu`'s caller guarantees they outlive it.
unsafe impl Send for SharedArgs {}
unsafe impl Sync for SharedArgs {}

/// Runs every program of `grid` once, in parallel on the rayon thread pool, each as one call
/// of `f` with `args` and its ids, in the order of [`grouped`]; returns when all have
/// finished. Program ids run over `0..grid[axis]`; a grid with an extent of zero or below runs
/// no program. Error E0416 when
/// an extent is above `i32::MAX` (nothing runs then).
///
/// # Safety
///
/// `f` must implement the [`CpuKernelFn`] ABI for the kernel whose arguments `args` packs
/// (made by [`pack_args`]); the [`Bound`] they were packed from must stay alive and unused
/// until this returns; and programs must not write an element that another program reads or
/// writes.
pub unsafe fn launch_cpu(f: CpuKernelFn, args: &[u64], grid: [i64; 3]) -> Result<(), RunError> {
    let ([g0, g1, _], n) = grid_size(grid)?;
    let shared = SharedArgs(args.as_ptr());
    pool().install(|| {
        (0..n).into_par_iter().for_each(move |i| {
            let shared = shared;
            let (p0, p1) = grouped(i % (g0 * g1), g0, g1);
            let ids = [p0 as i64, p1 as i64, (i / (g0 * g1)) as i64, grid[0], grid[1], grid[2]];
            // SAFETY: by the contract of `launch_cpu`.
            unsafe { f(shared.0, ids.as_ptr()) };
        })
    });
    pool().spawn_broadcast(|_| poll_for_work(POLL));
    Ok(())
}

/// How long the launcher's threads keep looking for the next launch's programs after a
/// launch, before they go to sleep (as OpenMP runtimes keep theirs awake: Intel's
/// `KMP_BLOCKTIME`, 200 ms, GNU's `GOMP_SPINCOUNT`; OpenBLAS's threads too). Waking a
/// sleeping thread costs tens of microseconds to milliseconds on a VM, where an idle virtual
/// CPU is descheduled: back-to-back launches then ran mostly on the thread that woke first
/// (a 4096 x 4096 f32 row stream on a 2-core VM: 2 threads no faster than 1).
const POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// Runs the thread pool's pending jobs (the next launch's programs) as they come, for
/// `period` or until one ran, giving the CPU away between looks (`sched_yield`), so that the
/// thread that starts a launch and anything else runnable go first.
fn poll_for_work(period: std::time::Duration) {
    let end = std::time::Instant::now() + period;
    while std::time::Instant::now() < end {
        match rayon::yield_now() {
            Some(rayon::Yield::Idle) => std::thread::yield_now(),
            _ => return,
        }
    }
}

/// Programs along grid axis 0 per group of [`grouped`].
const GROUP: usize = 4;

/// The ids `(p0, p1)` of the `i`-th program of a `g0 x g1` grid in launch order: groups of
/// [`GROUP`] consecutive ids along axis 0 (fewer in the last group), each running over all of
/// axis 1, `p0` fastest within a group (Triton's grouped ordering of matmul blocks, here for
/// the CPU's caches). rayon gives each thread contiguous parts of this order, so for `gemm`,
/// whose axis 0 picks a row panel of A and axis 1 a column panel of B, a thread's consecutive
/// programs reuse four A panels and one B panel instead of one B panel and every A panel:
/// 2048^3 f32 with LLVM 173 -> 145-150 ms on a 2-core Zen 2 with 16 MiB of L3, 1024^3 17.8 ->
/// 17.0 ms. A bijection of `0..g0*g1`; 1-D grids keep their order.
fn grouped(i: usize, g0: usize, g1: usize) -> (usize, usize) {
    let width = GROUP * g1;
    let first = i / width * GROUP;
    let size = GROUP.min(g0 - first);
    (first + i % width % size, i % width / size)
}

/// Stack size of the launcher's threads: register tiles live in the kernel's stack frame
/// (up to 32 MiB, checked by the CPU backend, which also emits stack probes).
const PROGRAM_STACK: usize = 64 << 20;

/// Binds the pool's `i`-th thread to the `i`-th CPU that the process may use, as OpenMP's
/// `OMP_PROC_BIND=close` does, when the pool has one thread per such CPU. Unbound, the
/// workers drifted onto one CPU: Linux places a woken thread near the thread that wakes it, and two workers polling for the
/// next launch on one CPU (`sched_yield` in turn) look busy and cache-hot there, so the load
/// balancer left them together for the rest of the process: every launch on one core. Traced
/// with `perf sched` on a 2-core VM, where `examples/walker.tile` (2^20 rows, 1.4 ms a launch
/// on two cores) measured 2.3-3.1 ms in half of the `tilec run --repeat 30` processes that a
/// Python script using NumPy's threads started; bound, 1.4-1.5 ms in 15 of 16. Threads
/// outside the pool are not touched. Where the affinity cannot be read or set (or outside
/// Linux), the thread stays unbound.
fn bind_to_cpu(i: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `cpu_set_t` is plain data (zeroed is the empty set), and both calls get its size
    // and a pointer to one.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut allowed: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
            return;
        }
        let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &allowed)).collect();
        // Only a pool of one thread per allowed CPU: a smaller one (`RAYON_NUM_THREADS`, or a
        // container's CPU quota, which `available_parallelism` and so rayon follow) would be
        // tied to the first CPUs of the set, which other work may be using.
        if cpus.len() < 2 || rayon::current_num_threads() != cpus.len() {
            return;
        }
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpus[i], &mut one);
        libc::sched_setaffinity(0, size, &one);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = i;
}

/// The thread pool that runs programs: one thread per core, each bound to its CPU
/// ([`bind_to_cpu`]), with large stacks.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(PROGRAM_STACK)
            .thread_name(|i| format!("tilec-program-{i}"))
            .start_handler(bind_to_cpu)
            .build()
            .unwrap_or_else(|_| {
                rayon::ThreadPoolBuilder::new().num_threads(1).stack_size(PROGRAM_STACK).build().expect("a thread")
            })
    })
}

/// Evaluates the grid ([`launch_values`]), packs the arguments ([`pack_args`]) and runs all
/// programs ([`launch_cpu`]); the arrays in `bound` then hold the results. Errors as those.
///
/// # Safety
///
/// `f` must implement the [`CpuKernelFn`] ABI for `kernel`, compiled from `module`, and its
/// programs must not write an element that another program reads or writes.
pub unsafe fn run_cpu(
    f: CpuKernelFn,
    module: &Module,
    kernel: &Kernel,
    bound: &mut Bound,
) -> Result<LaunchValues, RunError> {
    let values = launch_values(module, kernel, bound)?;
    let args = pack_args(kernel, bound)?;
    // SAFETY: `args` was packed from `bound`, which is exclusively borrowed for the launch;
    // the rest is the caller's contract.
    unsafe { launch_cpu(f, &args, values.grid)? };
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::HostArray;
    use crate::bind::{bind, parse_scalar};
    use std::collections::HashMap;
    use tilec_midend::{Dim, FuncKind, Function, KernelParam, Loc, Op, OpKind, ParamKind, Type};

    /// `ids(out: mut i32[G2, G1, G0, 4])` with grid `(G0, G1, G2)`.
    fn ids_kernel() -> Kernel {
        let dims = ["G2", "G1", "G0"].iter().map(|v| Dim::Var(v.to_string())).chain([Dim::Fixed(4)]).collect();
        Kernel {
            name: "ids".into(),
            symbol: "ids".into(),
            params: vec![KernelParam {
                name: "out".into(),
                kind: ParamKind::Array { elem: Scalar::I32, dims, mutable: true, optional: false },
            }],
            body: tilec_midend::FuncId(0),
            launch: tilec_midend::FuncId(0),
            grid_rank: 3,
            block: None,
            has_flops: false,
            doc: None,
            loc: Default::default(),
        }
    }

    /// Each program adds 1 to its counter and records its ids.
    unsafe extern "C" fn write_ids(args: *const u64, ids: *const i64) {
        // SAFETY: called by `launch_cpu` with the slots of `ids_kernel` and six ids.
        unsafe {
            let out = *args as usize as *mut i32;
            let [p0, p1, p2, g0, g1, _] = *(ids as *const [i64; 6]);
            let slot = out.add((((p2 * g1 + p1) * g0 + p0) * 4) as usize);
            *slot += 1;
            *slot.add(1) = p0 as i32;
            *slot.add(2) = p1 as i32;
            *slot.add(3) = p2 as i32;
        }
    }

    fn bound_ids(g: [u64; 3]) -> Bound {
        let out = HostArray::zeros(Scalar::I32, &[g[2], g[1], g[0], 4]).unwrap();
        bind(&ids_kernel(), HashMap::from([("out".to_string(), ArgValue::Array(out))])).unwrap()
    }

    /// Every program of the grid runs once with its own ids, whatever the launch order (axis 0
    /// runs in groups of 4: extents below, at and above a group, and not a multiple of it).
    #[test]
    fn every_program_runs_once() {
        let k = ids_kernel();
        for g in [[7u64, 5, 3], [1, 1, 1], [4, 4, 1], [9, 2, 2], [3, 6, 1], [1, 9, 2], [32, 32, 1]] {
            let mut b = bound_ids(g);
            let args = pack_args(&k, &mut b).unwrap();
            assert_eq!(args[1..], [g[2], g[1], g[0], 4]);
            // SAFETY: `write_ids` implements the ABI of `ids_kernel`; programs write disjoint slots.
            unsafe { launch_cpu(write_ids, &args, g.map(|x| x as i64)).unwrap() };
            let out = b.array("out").unwrap().as_i32().unwrap();
            let (g0, g1) = (g[0] as i32, g[1] as i32);
            for (i, rec) in out.chunks(4).enumerate() {
                let i = i as i32;
                let (p0, p1, p2) = (i % g0, i / g0 % g1, i / (g0 * g1));
                assert_eq!(rec, [1, p0, p1, p2], "grid {g:?}, program {i}");
            }
        }
    }

    /// The grouped order: four ids along axis 0 at a time, each over all of axis 1.
    #[test]
    fn grouped_order() {
        let order: Vec<(usize, usize)> = (0..18).map(|i| grouped(i, 6, 3)).collect();
        let want = [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (1, 2), (2, 2), (3, 2)];
        assert_eq!(order[..12], want);
        assert_eq!(order[12..], [(4, 0), (5, 0), (4, 1), (5, 1), (4, 2), (5, 2)]);
        assert_eq!((0..5).map(|i| grouped(i, 5, 1)).collect::<Vec<_>>(), [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)]);
    }

    #[test]
    fn empty_and_too_large_grids() {
        let k = ids_kernel();
        let mut b = bound_ids([1, 1, 1]);
        let args = pack_args(&k, &mut b).unwrap();
        // SAFETY: as above; these grids run no program.
        unsafe {
            launch_cpu(write_ids, &args, [0, 1, 1]).unwrap();
            launch_cpu(write_ids, &args, [1, -3, 1]).unwrap();
            let e = launch_cpu(write_ids, &args, [1 << 31, 1, 1]).unwrap_err();
            assert_eq!(e.code(), "E0416");
        }
        assert_eq!(b.array("out").unwrap().as_i32().unwrap(), [0, 0, 0, 0]);
    }

    #[test]
    fn scalar_slots() {
        let scalar = |name: &str, s: Scalar| KernelParam { name: name.into(), kind: ParamKind::Scalar(s) };
        let k = Kernel {
            params: vec![
                scalar("a", Scalar::F32),
                scalar("b", Scalar::I32),
                scalar("c", Scalar::F64),
                scalar("d", Scalar::I64),
            ],
            ..ids_kernel()
        };
        let args = HashMap::from([
            ("a".to_string(), ArgValue::Scalar(parse_scalar("1.5", Scalar::F32).unwrap())),
            ("b".to_string(), ArgValue::Scalar(parse_scalar("-2", Scalar::I32).unwrap())),
            ("c".to_string(), ArgValue::Scalar(parse_scalar("0.1", Scalar::F64).unwrap())),
            ("d".to_string(), ArgValue::Scalar(parse_scalar("-3", Scalar::I64).unwrap())),
        ]);
        let mut b = bind(&k, args).unwrap();
        let slots = pack_args(&k, &mut b).unwrap();
        assert_eq!(slots, [1.5f32.to_bits() as u64, 0xffff_fffe, 0.1f64.to_bits(), (-3i64) as u64]);
        let mut other = bound_ids([1, 1, 1]);
        assert_eq!(pack_args(&k, &mut other).unwrap_err().code(), "E0417");
    }

    #[test]
    fn launch_values_from_dims() {
        // grid = (dim0(out) as i64, 1, 1), flops NaN.
        let k = ids_kernel();
        let mut f = Function::new("ids_launch", FuncKind::Launch);
        let p = f.new_value(Type::Array { elem: Scalar::I32, rank: 4, mutable: true });
        f.body.params.push(p);
        let op = |f: &mut Function, kind, args: Vec<_>, ty: Option<Scalar>| {
            let results: Vec<_> = ty.map(|s| f.new_value(Type::Scalar(s))).into_iter().collect();
            f.body.ops.push(Op { kind, args, results: results.clone(), regions: vec![], loc: Loc::default() });
            results.first().copied()
        };
        let d = op(&mut f, OpKind::Dim(0), vec![p], Some(Scalar::I32)).unwrap();
        let g = op(&mut f, OpKind::Cast(Scalar::I64), vec![d], Some(Scalar::I64)).unwrap();
        let one = op(&mut f, OpKind::Const(Const::Int(1, Scalar::I64)), vec![], Some(Scalar::I64)).unwrap();
        let nan = op(&mut f, OpKind::Const(Const::Float(f64::NAN, Scalar::F64)), vec![], Some(Scalar::F64)).unwrap();
        op(&mut f, OpKind::Return, vec![g, one, one, nan], None);
        let m = Module { funcs: vec![f], kernels: vec![k.clone()], sources: Vec::new(), debug: Vec::new() };
        let b = bound_ids([2, 3, 9]);
        assert_eq!(launch_values(&m, &k, &b).unwrap(), LaunchValues { grid: [9, 1, 1], flops: None });
        let bad = Kernel { launch: tilec_midend::FuncId(5), ..k.clone() };
        assert_eq!(launch_values(&m, &bad, &b).unwrap_err().code(), "E0417");
        let mut m2 = m.clone();
        m2.funcs[0].body.ops.truncate(1);
        let e = launch_values(&m2, &k, &b).unwrap_err();
        assert_eq!(e.code(), "E0415");
        assert!(e.to_string().contains("no `return`"), "{e}");
    }
}
