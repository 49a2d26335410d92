//! Tests of the CUDA launcher. The host-side parts (driver check, architecture, grid split,
//! params regions, error texts) always run; the launches need an NVIDIA GPU and its driver
//! and print a skip line without one, unless `TILEC_REQUIRE_CUDA=1` makes a missing device a
//! failure. The kernels are hand-written PTX following the launch ABI of `tilec-codegen-ptx`,
//! so that these tests need no LLVM.

use std::collections::HashMap;

use tilec_codegen_ptx::{ParamsLayout, PtxKernel};
use tilec_midend::{Const, Dim, Kernel, KernelParam, ParamKind, Scalar};

use super::device::{arch_for, grid_limits, version_text, MAX_GRID};
use super::driver::{guard, DRIVER_LIBRARY};
use super::launch::PARAMS_ALIGN;
use super::CudaDevice;
use crate::array::HostArray;
use crate::bind::{bind, ArgValue, Bound};
use crate::error::RunError;
use crate::params::{gpu_indexable, pack_params, params_words, split_grid, Chunk};

fn required() -> bool {
    std::env::var("TILEC_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// Whether the driver library loads at all (checked without the launcher's code).
fn driver_library_loads() -> bool {
    // SAFETY: loads the system's NVIDIA driver, trusted like any system library.
    unsafe { libloading::Library::new(DRIVER_LIBRARY) }.is_ok()
}

/// The default device, or `None` (with a skip line) when there is none and none is required.
fn device(test: &str) -> Option<CudaDevice> {
    match CudaDevice::open(None) {
        Ok(d) => Some(d),
        Err(e) if required() => panic!("TILEC_REQUIRE_CUDA=1, but: {e}"),
        Err(e) => {
            eprintln!("skipped {test}: no CUDA device ({}: {e})", e.code());
            None
        }
    }
}

#[test]
fn without_a_driver_open_says_so() {
    let opened = CudaDevice::open(None);
    if driver_library_loads() {
        match opened {
            Ok(d) => {
                eprintln!("CUDA device: {} [{}], {} bytes of shared memory", d.name(), d.arch(), d.max_shared_bytes())
            }
            Err(e) => eprintln!("CUDA driver present, but: {}: {e}", e.code()),
        }
        return;
    }
    let e = opened.unwrap_err();
    assert_eq!(e.code(), "E0430");
    let text = e.to_string();
    // It says what was tried, with the loader's answer, and how to fix it.
    assert!(
        text.starts_with(&format!(
            "CUDA driver ({DRIVER_LIBRARY}) not found: this machine has no NVIDIA driver, or it lies outside the \
             places tried ({DRIVER_LIBRARY} by name ("
        )),
        "{text}"
    );
    assert!(text.contains("the loader's cache and default folders): "), "{text}");
    #[cfg(not(windows))]
    assert!(text.contains("cannot open shared object file"), "{text}");
    #[cfg(not(windows))]
    assert!(text.contains("not in /usr/local/nvidia/lib64, /usr/local/nvidia/lib,"), "{text}");
    assert!(
        text.ends_with(&format!(
            "use --target cpu or --target vulkan, install the NVIDIA driver, or put the folder that holds \
             {DRIVER_LIBRARY} on LD_LIBRARY_PATH"
        )),
        "{text}"
    );
    // Again (the check is cached), and with an index.
    assert_eq!(CudaDevice::open(Some(3)).unwrap_err(), e);
}

#[test]
fn opens_a_device_when_required() {
    let opened = CudaDevice::open(None);
    if required() {
        assert!(opened.is_ok(), "TILEC_REQUIRE_CUDA=1: {opened:?}");
    }
    if let Ok(d) = opened {
        let (major, minor) = d.compute_capability();
        assert!(major >= 7);
        assert_eq!(d.arch(), arch_for(major as i32, minor as i32).unwrap());
        assert!(d.name().contains(&format!("(sm_{major}{minor}")), "{}", d.name());
        assert!(d.max_shared_bytes() >= 48 * 1024);
    }
}

#[test]
fn devices_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CudaDevice>();
}

#[test]
fn device_index_out_of_range_lists_devices() {
    let Some(d) = device("device_index_out_of_range_lists_devices") else {
        return;
    };
    let name = d.name();
    drop(d);
    let e = CudaDevice::open(Some(1000)).unwrap_err();
    assert_eq!(e.code(), "E0433");
    let text = e.to_string();
    assert!(text.starts_with("there is no CUDA device 1000 (devices: 0: "), "{text}");
    // The listing has the name and the architecture, not the driver version.
    let plain = name.split(" (sm_").next().unwrap();
    assert!(text.contains(plain), "{text}");
}

#[test]
fn architectures_are_clamped_to_sm_90() {
    assert_eq!(arch_for(7, 0).as_deref(), Some("sm_70"));
    assert_eq!(arch_for(7, 5).as_deref(), Some("sm_75"));
    assert_eq!(arch_for(8, 6).as_deref(), Some("sm_86"));
    assert_eq!(arch_for(8, 9).as_deref(), Some("sm_89"));
    assert_eq!(arch_for(9, 0).as_deref(), Some("sm_90"));
    assert_eq!(arch_for(10, 0).as_deref(), Some("sm_90"));
    assert_eq!(arch_for(12, 1).as_deref(), Some("sm_90"));
    assert_eq!(arch_for(6, 1), None);
    assert_eq!(arch_for(5, 2), None);
    assert_eq!(version_text(12080), "12.8");
    assert_eq!(version_text(11040), "11.4");
    assert_eq!(version_text(13000), "13.0");
}

#[test]
fn grids_split_within_cuda_limits() {
    assert_eq!(grid_limits([i32::MAX, 65535, 65535]), MAX_GRID);
    assert_eq!(grid_limits([0, -1, 1 << 20]), [1, 1, 65535]);
    assert_eq!(grid_limits([1 << 16, 1024, 64]), [1 << 16, 1024, 64]);
    // x never needs a split; y and z do above 65535.
    let max = i32::MAX as u32;
    assert_eq!(split_grid([max, 1, 1], MAX_GRID).unwrap(), [Chunk { offset: [0; 3], count: [max, 1, 1] }]);
    assert_eq!(
        split_grid([5, 70000, 3], MAX_GRID).unwrap(),
        [
            Chunk { offset: [0, 0, 0], count: [5, 65535, 3] },
            Chunk { offset: [0, 65535, 0], count: [5, 70000 - 65535, 3] },
        ]
    );
    let chunks = split_grid([2, 65536, 131071], MAX_GRID).unwrap();
    assert_eq!(chunks.len(), 2 * 3);
    assert_eq!(chunks[3], Chunk { offset: [0, 65535, 65535], count: [2, 1, 65535] });
    assert_eq!(chunks[5], Chunk { offset: [0, 65535, 131070], count: [2, 1, 1] });
    let programs: u64 = chunks.iter().map(|c| c.count.iter().map(|&n| n as u64).product::<u64>()).sum();
    assert_eq!(programs, 2 * 65536 * 131071);
    // Too many launches: E0416 in `launch`.
    assert_eq!(split_grid([1, max, max], MAX_GRID), None);
}

fn array_param(name: &str, elem: Scalar, dims: &[&str], mutable: bool) -> KernelParam {
    KernelParam {
        name: name.into(),
        kind: ParamKind::Array {
            elem,
            dims: dims.iter().map(|d| Dim::Var(d.to_string())).collect(),
            mutable,
            optional: false,
        },
    }
}

fn scalar_param(name: &str, s: Scalar) -> KernelParam {
    KernelParam { name: name.into(), kind: ParamKind::Scalar(s) }
}

fn kernel(symbol: &str, params: Vec<KernelParam>) -> Kernel {
    Kernel {
        name: symbol.into(),
        symbol: symbol.into(),
        params,
        body: tilec_midend::FuncId(0),
        launch: tilec_midend::FuncId(0),
        grid_rank: 3,
        block: None,
        has_flops: false,
        doc: None,
        loc: Default::default(),
    }
}

fn bound(k: &Kernel, args: Vec<(&str, ArgValue)>) -> Bound {
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    bind(k, args).unwrap()
}

fn ptx(k: &Kernel, text: &str) -> PtxKernel {
    PtxKernel {
        text: text.to_string(),
        entry: "tilec_main".into(),
        lanes: 32,
        programs_per_block: 1,
        params: ParamsLayout::of(k),
        shared_bytes: 0,
        arch: "sm_70".into(),
    }
}

/// `k(A: mut f32[N])`: `A[i] += 1` for `i = (program_id(0)) * 32 + lane < N`.
const ADD_ONE: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry tilec_main(
	.param .u64 params,
	.param .u64 a
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [params];
	ld.param.u64 	%rd2, [a];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	ld.global.u32 	%r1, [%rd1+12];
	mov.u32 	%r2, %ctaid.x;
	add.s32 	%r2, %r2, %r1;
	mov.u32 	%r3, %tid.x;
	shl.b32 	%r4, %r2, 5;
	add.s32 	%r4, %r4, %r3;
	ld.global.u32 	%r5, [%rd1+24];
	setp.ge.u32 	%p1, %r4, %r5;
	@%p1 bra 	DONE;
	mul.wide.u32 	%rd3, %r4, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.f32 	%f2, %f1, 0f3F800000;
	st.global.f32 	[%rd4], %f2;
DONE:
	ret;
}
"#;

fn add_one_kernel() -> Kernel {
    kernel("add_one", vec![array_param("A", Scalar::F32, &["N"], true)])
}

/// `k(out: mut i32[M], base: i32)`: every lane of program `p` in grid `g` writes
/// `base + p0 + 16 p1 + 256 p2 + 4096 lane` at `((p2 g1 + p1) g0 + p0) 32 + lane`.
const IDS: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry tilec_main(
	.param .u64 params,
	.param .u64 out
)
{
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [params];
	ld.param.u64 	%rd2, [out];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	ld.global.u32 	%r1, [%rd1];
	ld.global.u32 	%r2, [%rd1+4];
	ld.global.u32 	%r3, [%rd1+12];
	ld.global.u32 	%r4, [%rd1+16];
	ld.global.u32 	%r5, [%rd1+20];
	ld.global.u32 	%r6, [%rd1+28];
	mov.u32 	%r7, %ctaid.x;
	add.s32 	%r7, %r7, %r3;
	mov.u32 	%r8, %ctaid.y;
	add.s32 	%r8, %r8, %r4;
	mov.u32 	%r9, %ctaid.z;
	add.s32 	%r9, %r9, %r5;
	mov.u32 	%r10, %tid.x;
	mad.lo.s32 	%r11, %r9, %r2, %r8;
	mad.lo.s32 	%r11, %r11, %r1, %r7;
	shl.b32 	%r11, %r11, 5;
	add.s32 	%r11, %r11, %r10;
	add.s32 	%r12, %r6, %r7;
	shl.b32 	%r13, %r8, 4;
	add.s32 	%r12, %r12, %r13;
	shl.b32 	%r13, %r9, 8;
	add.s32 	%r12, %r12, %r13;
	shl.b32 	%r13, %r10, 12;
	add.s32 	%r12, %r12, %r13;
	mul.wide.u32 	%rd3, %r11, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r12;
	ret;
}
"#;

fn ids_kernel() -> Kernel {
    kernel("ids", vec![array_param("out", Scalar::I32, &["M"], true), scalar_param("base", Scalar::I32)])
}

fn ids_bound(k: &Kernel, m: usize) -> Bound {
    let out = HostArray::zeros(Scalar::I32, &[m as u64]).unwrap();
    bound(k, vec![("out", ArgValue::Array(out)), ("base", ArgValue::Scalar(Const::Int(-100, Scalar::I32)))])
}

fn ids_want(g: [u32; 3]) -> Vec<i32> {
    let m = (g[0] * g[1] * g[2] * 32) as usize;
    (0..m)
        .map(|i| {
            let (lane, p) = ((i % 32) as i32, (i / 32) as i32);
            let (p0, p1, p2) = (p % g[0] as i32, p / g[0] as i32 % g[1] as i32, p / (g[0] * g[1]) as i32);
            -100 + p0 + 16 * p1 + 256 * p2 + 4096 * lane
        })
        .collect()
}

fn f32_array(n: usize) -> HostArray {
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    HostArray::from_f32(&v, &[n as u64]).unwrap()
}

#[test]
fn params_regions_carry_the_launch_offsets() {
    let k = ids_kernel();
    let layout = ParamsLayout::of(&k);
    // The hand-written PTX reads `base` at word 7.
    assert_eq!((layout.offsets.as_slice(), layout.words), ([6, 7].as_slice(), 8));
    let g = [5u32, 70000, 3];
    let b = ids_bound(&k, 64);
    let words = params_words(&layout, &b, g);
    assert_eq!(words, [5, 70000, 3, 0, 0, 0, 64, (-100i32) as u32]);
    let chunks = split_grid(g, MAX_GRID).unwrap();
    let (bytes, stride) = pack_params(&words, &chunks, PARAMS_ALIGN);
    assert_eq!((stride, bytes.len()), (32, 64));
    let word =
        |c: usize, j: usize| u32::from_le_bytes(bytes[c * stride + 4 * j..c * stride + 4 * j + 4].try_into().unwrap());
    let region = |c: usize| (0..8).map(|j| word(c, j)).collect::<Vec<u32>>();
    assert_eq!(region(0), words);
    assert_eq!(region(1), [5, 70000, 3, 0, 65535, 0, 64, (-100i32) as u32]);
    // Regions are 16-byte aligned: 9 words take 48 bytes.
    let (bytes, stride) = pack_params(&[1; 9], &chunks[..1], PARAMS_ALIGN);
    assert_eq!((stride, bytes.len()), (48, 48));
    assert_eq!(&bytes[36..], &[0; 12]);
}

#[test]
fn guard_turns_panics_into_errors() {
    let e = guard("a test", || -> Result<(), RunError> { panic!("missing symbol cuFoo") }).unwrap_err();
    assert_eq!(e.code(), "E0431");
    assert_eq!(
        e.to_string(),
        "CUDA driver call a test failed: the CUDA driver bindings panicked: missing symbol cuFoo"
    );
    assert_eq!(guard("a test", || Ok(3)), Ok(3));
}

#[test]
fn error_texts() {
    let e = RunError::NoCudaDevice;
    assert_eq!(e.code(), "E0432");
    assert!(e.to_string().starts_with("no CUDA device"), "{e}");
    let e = RunError::CudaDeviceIndex { index: 2, devices: vec!["A (sm_80)".into(), "B (sm_90)".into()] };
    assert_eq!(
        (e.code(), e.to_string().as_str()),
        ("E0433", "there is no CUDA device 2 (devices: 0: A (sm_80), 1: B (sm_90))")
    );
    let e = RunError::CudaCapability { device: "Old".into(), major: 6, minor: 1, arch: None };
    assert_eq!(e.code(), "E0434");
    assert!(e.to_string().contains("compute capability 6.1 is below 7.0"), "{e}");
    let e = RunError::CudaCapability { device: "A100".into(), major: 8, minor: 0, arch: Some("sm_90".into()) };
    assert!(e.to_string().contains("compiled for sm_90") && e.to_string().ends_with("compile it for sm_80"), "{e}");
    let e = RunError::PtxJit {
        device: "X".into(),
        error: "CUDA_ERROR_INVALID_PTX".into(),
        log: "ptxas error: line 3\n".into(),
    };
    assert_eq!(e.code(), "E0435");
    assert_eq!(
        e.to_string(),
        "the CUDA driver could not compile the PTX for device `X`: CUDA_ERROR_INVALID_PTX\nptxas error: line 3"
    );
    let e = RunError::CudaSharedMemory { device: "X".into(), needed: 50000, available: 49152 };
    assert_eq!(e.code(), "E0436");
    assert!(e.to_string().contains("50000") && e.to_string().contains("49152"), "{e}");
}

#[test]
fn adds_one_on_the_device() {
    let Some(d) = device("adds_one_on_the_device") else {
        return;
    };
    let kern = add_one_kernel();
    let k = ptx(&kern, ADD_ONE);
    // The last program is partly out of bounds: its extra lanes store nothing.
    let n = 32 * 5 - 3;
    let mut b = bound(&kern, vec![("A", ArgValue::Array(f32_array(n)))]);
    let times = d.launch(&k, &kern, &mut b, [5, 1, 1], 3).unwrap();
    assert_eq!(times.len(), 3);
    let want: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    // Every run starts from the bound input, so three runs add 1 once.
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), want);
    // A smaller grid leaves the rest alone; an empty one runs nothing.
    let mut b = bound(&kern, vec![("A", ArgValue::Array(f32_array(n)))]);
    d.launch(&k, &kern, &mut b, [2, 1, 1], 1).unwrap();
    let a = b.array("A").unwrap().as_f32().unwrap();
    assert!((0..n).all(|i| a[i] == i as f32 + (i < 64) as u32 as f32));
    let mut b = bound(&kern, vec![("A", ArgValue::Array(f32_array(n)))]);
    let times = d.launch(&k, &kern, &mut b, [0, 1, 1], 2).unwrap();
    assert_eq!(times.len(), 2);
    assert_eq!(b.array("A").unwrap(), &f32_array(n));
}

#[test]
fn program_ids_across_split_launches() {
    let Some(d) = device("program_ids_across_split_launches") else {
        return;
    };
    let kern = ids_kernel();
    let k = ptx(&kern, IDS);
    let g = [7u32, 5, 3];
    let want = ids_want(g);
    for max in [MAX_GRID, [3, 2, 2], [1, 1, 1]] {
        let mut b = ids_bound(&kern, want.len());
        d.launch_split(&k, &kern, &mut b, g.map(i64::from), 1, max).unwrap();
        assert_eq!(b.array("out").unwrap().as_i32().unwrap(), want, "max {max:?}");
    }
    // Beyond the device's limit along y.
    let g = [1u32, 70000, 1];
    let want = ids_want(g);
    let mut b = ids_bound(&kern, want.len());
    d.launch(&k, &kern, &mut b, g.map(i64::from), 1).unwrap();
    assert_eq!(b.array("out").unwrap().as_i32().unwrap(), want);
}

#[test]
fn launch_errors() {
    let Some(d) = device("launch_errors") else {
        return;
    };
    let kern = add_one_kernel();
    let k = ptx(&kern, ADD_ONE);
    let mut b = bound(&kern, vec![("A", ArgValue::Array(f32_array(4)))]);

    let mut wide = k.clone();
    wide.lanes = 64;
    assert_eq!(d.launch(&wide, &kern, &mut b, [1, 1, 1], 1).unwrap_err().code(), "E0417");

    let mut big = k.clone();
    big.shared_bytes = d.max_shared_bytes() + 1;
    let e = d.launch(&big, &kern, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0436");
    assert!(e.to_string().contains(&big.shared_bytes.to_string()), "{e}");

    let mut newer = k.clone();
    newer.arch = "sm_999".into();
    assert_eq!(d.launch(&newer, &kern, &mut b, [1, 1, 1], 1).unwrap_err().code(), "E0434");

    assert_eq!(d.launch(&k, &kern, &mut b, [1 << 31, 1, 1], 1).unwrap_err().code(), "E0416");

    let ids = ids_kernel();
    assert_eq!(d.launch(&k, &ids, &mut b, [1, 1, 1], 1).unwrap_err().code(), "E0417");

    let mut garbage = k.clone();
    garbage.text = ".version 7.0\n.target sm_70\n.address_size 64\nthis is not PTX;\n".into();
    let e = d.launch(&garbage, &kern, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0435", "{e}");
    eprintln!("{e}");

    let mut missing = k.clone();
    missing.entry = "no_such_entry".into();
    assert_eq!(d.launch(&missing, &kern, &mut b, [1, 1, 1], 1).unwrap_err().code(), "E0431");

    // Nothing ran, and the device still works.
    assert_eq!(b.array("A").unwrap(), &f32_array(4));
    d.launch(&k, &kern, &mut b, [1, 1, 1], 1).unwrap();
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn launches_from_another_thread() {
    let Some(d) = device("launches_from_another_thread") else {
        return;
    };
    let kern = add_one_kernel();
    let k = ptx(&kern, ADD_ONE);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut b = bound(&kern, vec![("A", ArgValue::Array(f32_array(40)))]);
                d.launch(&k, &kern, &mut b, [2, 1, 1], 2).unwrap();
                let want: Vec<f32> = (0..40).map(|i| i as f32 + 1.0).collect();
                assert_eq!(b.array("A").unwrap().as_f32().unwrap(), want);
            });
        }
    });
}

#[cfg(unix)]
/// A fake driver for the library check: a shared library named `file` in `dir` that exports
/// every function the launcher needs (each returning 999, never called here), built with the
/// system C compiler. `tag` makes two fakes different libraries.
fn fake_driver(dir: &std::path::Path, file: &str, tag: u32) -> bool {
    let c = dir.join(format!("{file}.c"));
    let body: String =
        super::driver::SYMBOLS.iter().map(|s| format!("int {s}(void) {{ return 999 + {tag}; }}\n")).collect();
    std::fs::write(&c, body).expect("write C");
    std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join(file))
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success())
}

/// The driver check runs in a child process (the loader reads `LD_LIBRARY_PATH` at start):
/// with the toolkit's stub (`libcuda.so`) found before the driver (`libcuda.so.1`), cudarc
/// would call the stub, so the check fails with E0431 naming it; with `libcuda.so` a link to
/// the driver, it passes.
#[cfg(unix)]
#[test]
fn driver_check_rejects_a_stub_that_cudarc_would_load_first() {
    if driver_library_loads() {
        eprintln!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let root = std::env::temp_dir().join(format!("tilec-fake-cuda-{}", std::process::id()));
    let (drv, stub) = (root.join("driver"), root.join("stubs"));
    std::fs::create_dir_all(&drv).unwrap();
    std::fs::create_dir_all(&stub).unwrap();
    if !fake_driver(&drv, "libcuda.so.1", 0) || !fake_driver(&stub, "libcuda.so", 1) {
        eprintln!("skipped: no C compiler to build a fake driver");
        return;
    }
    let child = |path: String| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "cuda::tests::driver_check_child", "--ignored", "--nocapture"])
            .env("LD_LIBRARY_PATH", path)
            .output()
            .expect("run the child test");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let with_stub = child(format!("{}:{}", stub.display(), drv.display()));
    assert!(with_stub.contains("driver check: E0431") && with_stub.contains("`libcuda.so`"), "{with_stub}");
    std::os::unix::fs::symlink(drv.join("libcuda.so.1"), drv.join("libcuda.so")).unwrap();
    let linked = child(drv.display().to_string());
    assert!(linked.contains("driver check: ok"), "{linked}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Run by `driver_check_rejects_a_stub_that_cudarc_would_load_first` in a child process.
#[cfg(unix)]
#[test]
#[ignore = "run by driver_check_rejects_a_stub_that_cudarc_would_load_first with LD_LIBRARY_PATH set"]
fn driver_check_child() {
    match super::driver::check_driver() {
        Ok(()) => println!("driver check: ok"),
        Err(e) => println!("driver check: {}: {e}", e.code()),
    }
}

/// Arrays of 2^31 elements or more are refused for the GPU targets (E0419, naming the argument
/// and the count), before anything is allocated; one element fewer is fine.
#[test]
fn arrays_beyond_32_bit_indices_are_refused() {
    assert!(gpu_indexable("A", &[i32::MAX as u64]).is_ok());
    assert!(gpu_indexable("A", &[4096, 92, 92]).is_ok());
    assert!(gpu_indexable("A", &[]).is_ok());
    for (shape, n) in [(vec![65536u64, 256, 256], 1u64 << 32), (vec![1 << 31], 1 << 31), (vec![u64::MAX, 2], u64::MAX)]
    {
        let e = gpu_indexable("A", &shape).unwrap_err();
        assert_eq!(e.code(), "E0419");
        assert!(e.to_string().starts_with(&format!("argument `A`: {n} elements, more than the 2147483647")), "{e}");
    }
}
