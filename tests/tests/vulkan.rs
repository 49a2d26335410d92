//! Vulkan (Mesa's lavapipe in CI): every stdlib kernel and every example agrees with the CPU
//! target, with lavapipe's subgroup at 4, 8 and 16 lanes (`LP_NATIVE_VECTOR_WIDTH` 128, 256,
//! 512, which must be set before the driver loads: each width runs in a child process), and
//! `tilec run --target vulkan` factors 4096 SPD matrices of 92x92 within 1e-4 of the f64
//! reference. Without a Vulkan device the tests are skipped, unless `TILEC_REQUIRE_VULKAN=1`
//! (set by tools/test.sh, which installs lavapipe).

mod cases;

use cases::Case;
use std::collections::HashMap;
use std::process::Command;
use tilec_frontend::GenericArg;
use tilec_midend::Scalar;
use tilec_runtime::VulkanDevice;

/// Opens the default device, or None (with a message) when Vulkan is absent and not required.
fn device() -> Option<VulkanDevice> {
    tilec_tests::vulkan_device()
}

fn check(dev: &VulkanDevice, c: &Case, elem: Scalar, tol: f64) {
    let cpu_args = c.args(elem);
    let runner = tilec_tests::cpu_runner(&c.src, c.kernel, &cpu_args, &HashMap::new()).expect("compiles");
    let (cpu, _) = runner.run(cpu_args).expect("runs on the CPU");
    let fixed: HashMap<String, GenericArg> = [("T".to_string(), GenericArg::Type(elem))].into();
    let vulkan = tilec::Target::Vulkan { device: None };
    let bound = tilec_tests::run_on(vulkan, &c.src, c.kernel, c.args(elem), &fixed)
        .unwrap_or_else(|e| panic!("{}: {e}", c.kernel));
    for out in &c.outs {
        let got = bound.array(out).unwrap().to_f64_vec();
        let want = cpu.array(out).unwrap().to_f64_vec();
        let err = cases::diff(c, &got, &want);
        assert!(
            err <= tol,
            "{} {elem:?} on {} (subgroup {}): `{out}` differs from the CPU by {err:e} ({})",
            c.kernel,
            dev.name(),
            dev.subgroup_size(),
            cases::worst(&got, &want)
        );
    }
}

/// Run by `vulkan_agrees_with_cpu_at_4_8_16_lanes` in a child process per subgroup size.
#[test]
#[ignore = "run by vulkan_agrees_with_cpu_at_4_8_16_lanes with LP_NATIVE_VECTOR_WIDTH set"]
fn vulkan_agrees_with_cpu_child() {
    let Some(dev) = device() else { return };
    if let Ok(w) = std::env::var("LP_NATIVE_VECTOR_WIDTH") {
        if dev.name().starts_with("llvmpipe") {
            assert_eq!(
                dev.subgroup_size(),
                w.parse::<u32>().unwrap() / 32,
                "lavapipe's subgroup follows LP_NATIVE_VECTOR_WIDTH"
            );
        }
    }
    let all: Vec<Case> = [
        cases::factorizations(),
        cases::solves(),
        cases::products(),
        cases::examples(),
        cases::math(),
        cases::masks(),
        cases::constructs(),
        // Not `cases::sorts()`: lavapipe's shader compiler took over 20 GB on its ten sorting
        // networks in one kernel (docs/language.md §16); the fuzzer's small sorts run here.
        cases::long_vectors(),
        cases::short_vectors(),
        cases::dyn_ranges(),
        cases::gathers(),
        cases::atomics(),
        cases::half_arith(),
        cases::optional(),
        cases::lines(),
        cases::transposes(),
        cases::staged(),
        cases::fn_results(),
        cases::shapes(),
        cases::ranges(),
        cases::broadcasts(),
        cases::lu(),
        cases::small_mats(),
    ]
    .into_iter()
    .flatten()
    .collect();
    // f64 once (at 16 lanes on lavapipe): its shaders are twice the work to compile.
    let wide = std::env::var("LP_NATIVE_VECTOR_WIDTH").map_or(true, |w| w == "512");
    for c in &all {
        let start = std::time::Instant::now();
        check(&dev, c, Scalar::F32, 1e-5);
        if dev.supports_f64() && wide {
            check(&dev, c, Scalar::F64, 1e-12);
        }
        // The slow cases (mostly lavapipe's shader compiles), for keeping the suite's time down.
        let secs = start.elapsed().as_secs_f64();
        if secs > 5.0 {
            eprintln!("slow: {} ({} lanes) took {secs:.1} s", c.kernel, dev.subgroup_size());
        }
    }
    if dev.supports_f64() && wide {
        // The f64 transcendental functions are expanded into f64 arithmetic (not the device's
        // f32 ones): a few ulp from the CPU's libm.
        check(&dev, &cases::math_edges_f64(), Scalar::F64, 1e-15);
    }
}

#[test]
fn vulkan_agrees_with_cpu_at_4_8_16_lanes() {
    if device().is_none() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for width in ["128", "256", "512"] {
        let status = Command::new(&exe)
            .args(["--exact", "vulkan_agrees_with_cpu_child", "--ignored", "--nocapture"])
            .env("LP_NATIVE_VECTOR_WIDTH", width)
            .status()
            .expect("runs the child test");
        assert!(status.success(), "Vulkan results differ from the CPU with LP_NATIVE_VECTOR_WIDTH={width}");
    }
}

#[test]
fn cli_potrf_4096x92x92_on_vulkan_within_1e4() {
    if device().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tilec-vk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("spd.npy"), dir.join("l.npy"));
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let run = tilec_tests::cli_ok;
    run(&["gen-spd", "--batch", "4096", "--n", "92", "--dtype", "f32", "--seed", "9", "-o", input.to_str().unwrap()]);
    let a = format!("A={}", input.display());
    let o = format!("A={}", output.display());
    let printed = run(&[
        "run",
        &format!("{root}/stdlib/linalg.tile"),
        "--kernel",
        "potrf_batched",
        "--target",
        "vulkan",
        "--arg",
        &a,
        "--arg",
        "eps=1e-6",
        "--out",
        &o,
    ]);
    assert!(printed.contains("potrf_batched__f32: grid [4096, 1, 1]") && printed.contains(" on "), "{printed}");
    let inp = tilec_runtime::read_npy(&input).unwrap().to_f64_vec();
    let l = tilec_runtime::read_npy(&output).unwrap().to_f64_vec();
    let reference: Vec<f64> = inp.chunks(92 * 92).flat_map(|m| tilec_tests::cholesky_f64(m, 92)).collect();
    let err = tilec_tests::max_rel_err_lower(&l, &reference, 92);
    assert!(err <= 1e-4, "relative error {err:e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cuda_like_missing_device_index_is_a_clean_error() {
    if device().is_none() {
        return;
    }
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let argv: Vec<String> = [
        "tilec",
        "run",
        &format!("{root}/examples/colsum.tile"),
        "--kernel",
        "colsum",
        "--target",
        "vulkan",
        "--device",
        "99",
        "--arg",
        "X=/nonexistent.npy",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    assert_eq!(code, 2);
}

/// A launch counts W0103's registers per lane for the device's subgroup: a 64 x 64 f32 tile
/// is 4096 / subgroup registers per lane, over 255 on lavapipe's 8 lanes (512), not on a
/// 32-lane GPU (128).
#[test]
fn register_warning_uses_the_devices_subgroup_size() {
    let Some(dev) = device() else { return };
    let src = tilec::SourceSet::with_stdlib(
        "big.tile",
        "kernel big(A: f32[N, 64], Y: mut f32[N, 64]) grid(cdiv(N, 64)) {\n\
         \x20   let a = A[program_id(0) * 64:program_id(0) * 64 + 64, 0:64];\n\
         \x20   Y[0:64, 0:64] = a;\n\
         }\n",
    );
    let session = tilec::driver::Session::new(src, Default::default());
    let target = tilec::Target::Vulkan { device: None };
    session.instance("big", target, &Default::default()).expect("compiles");
    let regs = 4096u32.div_ceil(dev.subgroup_size());
    let w0103: Vec<String> =
        session.take_warnings().into_iter().filter(|w| w.code == "W0103").map(|w| w.message).collect();
    assert_eq!(w0103.len(), usize::from(regs > 255), "subgroup {}: {w0103:?}", dev.subgroup_size());
    if regs > 255 {
        assert!(w0103[0].contains(&format!("{regs} registers per lane")), "{w0103:?}");
    }
}
