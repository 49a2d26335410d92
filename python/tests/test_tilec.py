"""The tilec Python package against NumPy and SciPy: stdlib kernels on odd shapes in f32 and
f64, in-place semantics without copies, coded errors for bad arguments and programs, caching,
threads, the GPU targets (Vulkan on lavapipe; CUDA skipped without a driver), and the Dask
example on a local cluster."""

import ctypes
import json
import os
import pathlib
import subprocess
import sys
import threading
import types

import numpy as np
import pytest
import scipy.linalg

import tilec

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = {np.float32: 2e-4, np.float64: 1e-11}


def spd(batch, n, dtype, seed=0):
    m = np.random.default_rng(seed).standard_normal((batch, n, n))
    return (m @ m.transpose(0, 2, 1) / n + np.eye(n)).astype(dtype)


def rel(a, b):
    return np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 17, 33])
def test_potrf_matches_numpy_cholesky(dtype, n):
    a = spd(5, n, dtype)
    before = a.copy()
    out = tilec.linalg.potrf_batched(a, eps=1e-6 if dtype == np.float32 else 0.0)
    assert out is a  # written in place, returned
    want = np.linalg.cholesky(before.astype(np.float64))
    assert rel(np.tril(a), want) < TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trsm_and_potrs_match_scipy(dtype):
    n, m = 21, 9
    a = spd(3, n, dtype, seed=1)
    low = np.linalg.cholesky(a.astype(np.float64)).astype(dtype)
    x = np.random.default_rng(2).standard_normal((3, n, m)).astype(dtype)
    y = tilec.linalg.trsm_left_lower_batched(low, x.copy())
    for b in range(3):
        want = scipy.linalg.solve_triangular(low[b].astype(np.float64), x[b].astype(np.float64), lower=True)
        assert rel(y[b], want) < 10 * TOL[dtype]
    xr = np.random.default_rng(3).standard_normal((3, m, n)).astype(dtype)
    z = tilec.linalg.trsm_right_lower_t_batched(low, xr.copy())  # X L^T = B
    for b in range(3):
        want = scipy.linalg.solve_triangular(low[b].astype(np.float64), xr[b].T.astype(np.float64), lower=True).T
        assert rel(z[b], want) < 10 * TOL[dtype]
    s = tilec.linalg.potrs_batched(low, x.copy())
    assert rel(s, np.linalg.solve(a.astype(np.float64), x.astype(np.float64))) < 100 * TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_matches_matmul_with_const_parameters(dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((77, 50)).astype(dtype)
    b = rng.standard_normal((50, 131)).astype(dtype)
    c = rng.standard_normal((77, 131)).astype(dtype)
    want = 2.0 * (a.astype(np.float64) @ b) + 0.5 * c
    a0 = a.copy()
    got = tilec.linalg.gemm(a, b, c, alpha=2.0, beta=0.5, BM=64, BN=16)
    assert got is c and rel(c, want) < 10 * TOL[dtype]
    assert np.array_equal(a, a0)  # read parameters are not written
    # Positional scalars and the default blocking.
    c2 = np.full((77, 131), np.nan, dtype)
    tilec.linalg.gemm(a, b, c2, 1.0, 0.0)
    assert rel(c2, a.astype(np.float64) @ b) < 10 * TOL[dtype]


LINEAR = """
kernel linear(X: f32[M, 16], W: f32[16, 8], Bias: f32[8]?, Y: mut f32[M, 8], Stats: mut f32[M]?) grid(M) {
    let i = program_id(0);
    let y = X[i:i+1, :] @ W[:, :];
    if present(Bias) {
        y = y + Bias[0:8];
    }
    Y[i:i+1, :] = y;
    Stats[i] = sum(y);
}
"""


def test_optional_arrays_may_be_none_or_omitted():
    m = tilec.compile(LINEAR)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    want = x.astype(np.float64) @ w
    y = np.zeros((5, 8), np.float32)
    assert m.linear(x, w, None, y) is y  # Stats omitted: only Y is returned
    assert rel(y, want) < 1e-5
    y2, stats = np.zeros((5, 8), np.float32), np.zeros(5, np.float32)
    m.linear(X=x, W=w, Bias=b, Y=y2, Stats=stats)
    assert rel(y2, want + b) < 1e-5 and rel(stats, (want + b).sum(1)) < 1e-5
    with pytest.raises(tilec.TileError) as e:
        m.linear(x, None, None, y)  # W is not optional
    assert e.value.code == "E0407"


def test_arrays_are_not_copied():
    """A view into a larger buffer is written where it lies."""
    buf = np.zeros((4, 16, 16), np.float64)
    buf[1:3] = spd(2, 16, np.float64)
    view = buf[1:3]
    tilec.linalg.potrf_batched(view, eps=0.0)
    assert buf[1, 0, 0] != 0 and np.all(buf[0] == 0) and np.all(buf[3] == 0)
    assert np.allclose(np.tril(buf[1]) @ np.tril(buf[1]).T, spd(2, 16, np.float64)[0])


def test_bad_arguments_raise_coded_errors():
    g = tilec.linalg.gemm
    a = np.ones((4, 5), np.float32)
    b = np.ones((5, 6), np.float32)
    c = np.zeros((4, 6), np.float32)
    cases = [
        (lambda: g(a, b.astype(np.float64), c, 1.0, 0.0), tilec.TileTypeError, "E0216"),
        (lambda: g(a, np.ones((4, 6), np.float32), c, 1.0, 0.0), tilec.TileValueError, "E0412"),
        (lambda: g(a, b, c, 1.0), tilec.TileTypeError, "E0407"),
        (lambda: g(a, b, c, 1.0, 0.0, gamma=1.0), tilec.TileTypeError, "E0408"),
        (lambda: g(a, b, c, 1.0, 0.0, 1.0), tilec.TileTypeError, "E0408"),
        (lambda: g(a, b, c, a, 0.0), tilec.TileTypeError, "E0409"),
        (lambda: g(1.0, b, c, 1.0, 0.0), tilec.TileTypeError, "E0409"),
        (lambda: g(a, b, c, 1e300, 0.0), tilec.TileValueError, "E0414"),
        (lambda: g(a, b, np.ones((6, 4), np.float32).T, 1.0, 0.0), tilec.TileValueError, "E0440"),
        (lambda: g([[1.0]], b, c, 1.0, 0.0), tilec.TileValueError, "E0440"),
        (lambda: g(a, b, a[:, :4].copy()[:, :0], 1.0, 0.0), tilec.TileValueError, "E0412"),
        (lambda: g(a.astype(np.int64), b, c, 1.0, 0.0), tilec.TileTypeError, None),
    ]
    for i, (call, cls, code) in enumerate(cases):
        with pytest.raises(cls) as e:
            call()
        assert isinstance(e.value, tilec.TileError), i
        assert code is None or e.value.code == code, (i, e.value.code, str(e.value))
        assert e.value.code in e.value.rendered
    # Read-only and overlapping arrays.
    ro = c.copy()
    ro.setflags(write=False)
    with pytest.raises(ValueError) as e:
        g(a, b, ro, 1.0, 0.0)
    assert e.value.code == "E0437" and "read-only" in str(e.value)
    sq = np.ones((8, 8), np.float32)
    with pytest.raises(tilec.TileValueError) as e:
        g(sq, sq, sq, 1.0, 0.0)
    assert e.value.code == "E0438"
    assert np.all(sq == 1.0)
    # Kernels that do not exist.
    with pytest.raises(AttributeError, match="gemm"):
        tilec.linalg.gemmm


def test_compile_errors_carry_every_diagnostic(tmp_path):
    src = "kernel k(A: mut f32[N]) grid(N) block(16) {\n    A[0] = x + y;\n}\n"
    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(src)
    assert isinstance(e.value, ValueError)
    assert e.value.codes == ["E0101", "E0101"]
    assert "cannot find `x`" in e.value.rendered and "cannot find `y`" in e.value.rendered
    p = tmp_path / "bad.tile"
    p.write_text(src)
    with pytest.raises(tilec.CompileError) as e:
        tilec.compile(p)
    assert "bad.tile:2:12" in e.value.rendered
    with pytest.raises(tilec.TileError) as e:
        tilec.compile(str(tmp_path / "missing.tile"))
    assert e.value.code == "E0400"


def test_programs_and_instances_are_cached():
    src = "kernel twice<T: float>(A: mut T[N]) grid(N) block(16) { let i = program_id(0); A[i] = A[i] * 2.0; }\n"
    m1 = tilec.compile(src)
    assert tilec.compile(src) is m1
    assert tilec.compile(src, name="other.tile") is not m1
    for dtype in (np.float32, np.float64):
        x = np.arange(7, dtype=dtype)
        assert m1.twice(x) is x
        assert np.array_equal(x, 2 * np.arange(7))
    with pytest.raises(tilec.TileTypeError):
        m1.twice(np.arange(7, dtype=np.int32))
    x = np.arange(5, dtype=np.float32)
    m1.twice(x, T="f32")
    m1.twice(x, T=np.float32)
    assert np.array_equal(x, 4 * np.arange(5))


def test_two_threads_launch_at_once():
    inputs = [spd(64, 24, np.float64, seed=s) for s in range(4)]
    outs = [None] * 4
    errors = []

    def work(i):
        try:
            for _ in range(5):
                outs[i] = tilec.linalg.potrf_batched(inputs[i].copy(), eps=0.0)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert rel(np.tril(outs[i]), np.linalg.cholesky(inputs[i])) < 1e-12


def test_vulkan_target_matches_cpu():
    try:
        vk = tilec.linalg.on("vulkan")
        a = spd(6, 19, np.float32, seed=5)
        want = tilec.linalg.potrf_batched(a.copy(), eps=1e-6)
        got = vk.potrf_batched(a.copy(), eps=1e-6)
    except tilec.DeviceError as e:
        if os.environ.get("TILEC_REQUIRE_VULKAN"):
            raise
        pytest.skip(f"no Vulkan device: {e.code}")
    assert rel(np.tril(got), np.tril(want).astype(np.float64)) < 1e-5


def test_cuda_skips_cleanly_without_a_driver():
    cu = tilec.linalg.on("cuda")
    a = spd(2, 16, np.float32)
    try:
        cu.potrf_batched(a, eps=1e-6)
    except tilec.DeviceError as e:
        assert e.code in ("E0430", "E0432", "E0505") and isinstance(e, RuntimeError)
        pytest.skip(f"no CUDA: {e.code}")
    assert rel(np.tril(a), np.linalg.cholesky(spd(2, 16, np.float64))) < 1e-4


def test_dask_example_on_a_local_cluster():
    ex = ROOT / "python" / "examples" / "dask_cholesky.py"
    r = subprocess.run(
        [sys.executable, str(ex), "--batch", "3000", "--n", "33", "--chunk", "700", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3000 matrices 33x33 (float64), chunks of 700: max relative residual" in r.stdout


class DlpackOnly:
    """An array that exposes its memory through DLPack only (as PyTorch CPU tensors do)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_producers_are_written_in_place():
    a = spd(3, 9, np.float64, seed=6)
    want = np.linalg.cholesky(a)
    obj = DlpackOnly(a)
    assert not hasattr(obj, "__array_interface__")
    out = tilec.linalg.potrf_batched(obj, eps=0.0)
    assert out is obj
    assert rel(np.tril(a), want) < 1e-12


GROUP_SUM = """
/// S[z, :] = sum over h of P[h] X[z * H + h, :]; C, a const parameter, is X's column count.
kernel group_sum<T: float, const C: i32>(X: T[Z * H, C], P: T[H], S: mut T[Z, C]) grid(Z) block(16) {
    let z = program_id(0);
    let acc = tile<T, C>::zeros();
    for h in 0..H {
        acc += X[z * H + h, 0:C] * P[h];
    }
    S[z, 0:C] = acc;
}
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extent_expressions_and_const_parameters_from_shapes(dtype):
    m = tilec.compile(GROUP_SUM)
    rng = np.random.default_rng(8)
    for z, h, c in [(6, 3, 5), (2, 4, 9)]:
        x = rng.standard_normal((z * h, c)).astype(dtype)
        p = rng.standard_normal(h).astype(dtype)
        s = np.full((z, c), np.nan, dtype)
        m.group_sum(x, p, s)
        want = np.einsum("zhc,h->zc", x.astype(np.float64).reshape(z, h, c), p.astype(np.float64))
        assert rel(s, want) < 10 * TOL[dtype]
    with pytest.raises(tilec.TileValueError) as e:
        m.group_sum(np.zeros((7, 5), dtype), np.zeros(3, dtype), np.zeros((2, 5), dtype))
    assert e.value.code == "E0412" and "expected shape [Z * H, C] = [6, 5], got [7, 5]" in str(e.value)


def bf16_bits(x):
    """float32 -> bfloat16 bits, rounded to nearest even (finite inputs), as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def test_storage_types_f16_and_bf16():
    """float16 arrays and bfloat16 ones (ml_dtypes' 2-byte voids) compute in f32 and round
    what they store, in place."""
    a = spd(4, 13, np.float64, seed=9)
    h = a.astype(np.float16)
    tilec.linalg.potrf_batched(h, eps=1e-6)
    assert h.dtype == np.float16
    want = np.linalg.cholesky(a.astype(np.float16).astype(np.float64))
    assert rel(np.tril(h), want) < 3e-3
    # bfloat16 without ml_dtypes: the bits in a '<V2' array.
    b = bf16_bits(a.astype(np.float32)).view("V2")
    assert b.__array_interface__["typestr"] in ("<V2", "|V2")
    tilec.linalg.potrf_batched(b, eps=1e-6)
    got = (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    widened = (bf16_bits(a.astype(np.float32)).astype(np.uint32) << 16).view(np.float32)
    assert rel(np.tril(got), np.linalg.cholesky(widened.astype(np.float64))) < 2e-2
    # Stores round to nearest even: 1 + 2**-11 is a tie between 1 and 1 + 2**-10.
    m = tilec.compile(
        "kernel copy(X: f32[N], Y: mut f16[N]) grid(1) { Y[0:4] = X[0:4]; }"
    )
    y = np.zeros(3, np.float16)
    m.copy(np.array([1 + 2**-11, 1 + 3 * 2**-11, 7e4], np.float32), y)
    assert y.tolist() == [1.0, 1 + 2**-9, np.inf]


# CUDA arrays from fake producers: their descriptions are read and checked without a GPU, and
# every call with one must fail before anything could read its (fake) device memory.

FAKE_ADDRESS = 0x7F0000000000


class FakeCudaArray:
    """A CUDA array as CuPy describes its own: ``__cuda_array_interface__`` version 3 (entries
    replaced by keywords, removed by ``without``) and ``__dlpack_device__``, at a fake address."""

    def __init__(self, shape, typestr="<f4", device=0, without=(), **entries):
        self._cai = {"version": 3, "data": (FAKE_ADDRESS, False), "shape": tuple(shape), "typestr": typestr,
                     "strides": None, "stream": 1}
        self._cai.update(entries)
        for k in without:
            del self._cai[k]
        self.device = device

    @property
    def __cuda_array_interface__(self):
        return self._cai

    def __dlpack_device__(self):
        return (2, self.device)


class FakeNumbaArray(FakeCudaArray):
    """A CUDA array that does not say its device (``__cuda_array_interface__`` only)."""

    __dlpack_device__ = None


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeDlpackCuda:
    """A CUDA array that exposes DLPack only (as PyTorch's bfloat16 tensors must), its
    ``dltensor`` capsule made with ctypes (no deleter: the fake owns the tensor)."""

    def __init__(self, shape, code=2, bits=32, device_type=2, device=0, strides=None, name=b"dltensor"):
        def longs(xs):
            return ctypes.cast((ctypes.c_int64 * len(xs))(*xs), ctypes.POINTER(ctypes.c_int64)) if xs else None

        self._shape, self._strides = longs(shape), (None if strides is None else longs(strides))
        t = DLTensor(FAKE_ADDRESS, DLDevice(device_type, device), len(shape), DLDataType(code, bits, 1),
                     self._shape, self._strides, 0)
        self._managed = DLManagedTensor(t, None, None)
        self._name = name
        self.streams = []

    def __dlpack_device__(self):
        return (self._managed.dl_tensor.device.device_type, self._managed.dl_tensor.device.device_id)

    def __dlpack__(self, stream=None, max_version=None):
        self.streams.append(stream)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._managed), self._name, None)


def raises(cls, code, call, *texts):
    with pytest.raises(cls) as e:
        call()
    assert code is None or e.value.code == code, (code, str(e.value))
    for t in texts:
        assert t in str(e.value), (t, str(e.value))
    return e.value


def test_cuda_arrays_for_cpu_and_vulkan_kernels_raise_instead_of_being_read():
    for fake in (FakeCudaArray((2, 16, 16)), FakeNumbaArray((2, 16, 16)), FakeDlpackCuda((2, 16, 16))):
        e = raises(tilec.TileTypeError, "E0442", lambda: tilec.linalg.potrf_batched(fake, eps=1e-6),
                   "argument `A` is in CUDA device memory", "which the cpu target cannot read", "`.cpu()`")
        assert isinstance(e, TypeError)
    vk = tilec.linalg.on("vulkan")
    raises(tilec.TileTypeError, "E0442", lambda: vk.potrf_batched(FakeCudaArray((2, 16, 16)), eps=1e-6),
           "which the vulkan target cannot read")
    # A host array with a device array: the device one is named.
    raises(tilec.TileTypeError, "E0442",
           lambda: tilec.linalg.potrs_batched(spd(2, 8, np.float32), FakeCudaArray((2, 8, 3))), "argument `X`")
    # DLPack memory of a device tilec does not run on, for any target.
    raises(tilec.TileTypeError, "E0442",
           lambda: tilec.linalg.potrf_batched(FakeDlpackCuda((2, 4, 4), device_type=10), eps=0.0),
           "the memory of a ROCm device (DLPack device type 10), which tilec cannot use")


def test_cuda_array_descriptions_are_checked_before_the_driver():
    cu = tilec.linalg.on("cuda")
    shape = (2, 16, 16)
    cases = [
        (FakeCudaArray(shape, typestr="<c8"), tilec.TileValueError, "E0440", "has dtype `<c8`"),
        (FakeCudaArray(shape, strides=(1024, 4, 64)), tilec.TileValueError, "E0440", "is not C-contiguous",
         ".contiguous()"),
        (FakeCudaArray(shape, version=1), tilec.TileValueError, "E0440", "of version 1; tilec reads versions 2 and 3"),
        (FakeCudaArray(shape, without=["shape"]), tilec.TileValueError, "E0440",
         "__cuda_array_interface__ has no `shape`"),
        (FakeCudaArray(shape, without=["data"]), tilec.TileValueError, "E0440", "has no `data`"),
        (FakeCudaArray(shape, data=FAKE_ADDRESS), tilec.TileValueError, "E0440", "`data` is not a tuple"),
        (FakeCudaArray(shape, mask=object()), tilec.TileValueError, "E0440", "with a mask"),
        (FakeCudaArray(shape, stream=0), tilec.TileValueError, "E0440", "names CUDA stream 0"),
        (FakeCudaArray(shape, data=(FAKE_ADDRESS + 2, False)), tilec.TileValueError, "E0439", "not aligned"),
        (FakeCudaArray(shape, data=(FAKE_ADDRESS, True)), tilec.TileValueError, "E0437", "argument `A` is read-only"),
        (FakeCudaArray(shape, typestr="|b1"), tilec.TileTypeError, "E0406", "bool"),
        (FakeDlpackCuda(shape, code=5, bits=64), tilec.TileValueError, "E0440", "has dtype `complex64`"),
        (FakeDlpackCuda(shape, strides=(256, 1, 16)), tilec.TileValueError, "E0440", "is not C-contiguous"),
        (FakeDlpackCuda(shape, name=b"used_dltensor"), tilec.TileValueError, "E0440", "capsule named `used_dltensor`"),
    ]
    for fake, cls, code, *texts in cases:
        e = raises(cls, code, lambda: cu.potrf_batched(fake, eps=1e-6), *texts)
        if code not in ("E0406", "E0439"):
            assert "argument `A`" in str(e), str(e)
    # int32 and int64 fit no instance of potrf_batched<T: float>, as for host arrays.
    raises(tilec.TileTypeError, None, lambda: cu.potrf_batched(FakeCudaArray(shape, typestr="<i4"), eps=1e-6))
    raises(tilec.TileTypeError, None, lambda: cu.potrf_batched(FakeCudaArray(shape, typestr="<i8"), eps=1e-6))
    # Devices that disagree, with each other or with the module's.
    raises(tilec.TileValueError, "E0443",
           lambda: cu.potrs_batched(FakeCudaArray((2, 8, 8)), FakeCudaArray((2, 8, 3), device=1)),
           "argument `X` is on CUDA device 1, but argument `L` is on CUDA device 0")
    cu1 = tilec.linalg.on("cuda", device=1)
    raises(tilec.TileValueError, "E0443", lambda: cu1.potrf_batched(FakeCudaArray(shape), eps=1e-6),
           "argument `A` is on CUDA device 0, but the kernel runs on CUDA device 1", "device=0")


def test_valid_cuda_arrays_get_to_the_driver():
    """Without a driver: DeviceError E0430 (E0432/E0433/E0505 without a device, a device 1 or
    the PTX backend); on a GPU machine the fake address is no device memory: E0443."""
    cu = tilec.linalg.on("cuda")
    dl = FakeDlpackCuda((2, 16, 16))
    v2 = FakeCudaArray((2, 16, 16), version=2, without=["stream", "strides"])
    for call in (
        lambda: cu.potrf_batched(FakeCudaArray((2, 16, 16), device=1), eps=1e-6),
        lambda: cu.potrf_batched(FakeNumbaArray((2, 16, 16)), eps=1e-6),
        lambda: cu.potrf_batched(v2, eps=1e-6),
        lambda: cu.potrf_batched(dl, eps=1e-6),
        lambda: cu.potrs_batched(spd(2, 8, np.float32), FakeCudaArray((2, 8, 3))),  # host with device
    ):
        with pytest.raises(tilec.TileError) as e:
            call()
        assert e.value.code in ("E0430", "E0432", "E0433", "E0505", "E0443"), str(e.value)
        assert isinstance(e.value, tilec.DeviceError) == (e.value.code != "E0443")
    assert dl.streams == [1]  # asked for the legacy default stream, which the launch uses


def test_pytorch_tensors_use_their_current_stream(monkeypatch):
    """PyTorch's interface (version 2) names no stream: the tensor's current stream stands in
    (1, the legacy default stream, for PyTorch's default stream 0)."""
    streams = {"cuda:0": 0, "cuda:1": 0x5555AA00}

    class Tensor(FakeCudaArray):
        dtype = "float32"

        def __dlpack_device__(self):
            return (2, int(self.device[-1]))

    fake = types.ModuleType("torch")
    fake.Tensor = Tensor
    fake.bfloat16 = "bfloat16"
    fake.cuda = types.SimpleNamespace(current_stream=lambda d: types.SimpleNamespace(cuda_stream=streams[d]))
    monkeypatch.setitem(sys.modules, "torch", fake)
    t = Tensor((3,), version=2, without=["stream"])
    t.device = "cuda:0"
    assert tilec._torch_stream(t) == 1
    t.device = "cuda:1"
    assert tilec._torch_stream(t) == 0x5555AA00
    assert tilec._torch_stream(FakeCudaArray((3,))) is None
    _, (name, cai, device, stream) = tilec._interface("A", t, [])
    assert (name, cai["version"], stream) == ("A", 2, 0x5555AA00)


def test_pytorch_bfloat16_tensors_go_through_dlpack(monkeypatch):
    """PyTorch 2.5 and 2.6 describe bfloat16 CUDA tensors in their interface as '<f2' (float16's
    type string): tilec must not read that description, but the tensor's DLPack capsule."""

    class Tensor(FakeDlpackCuda):
        device = "cuda:0"

        @property
        def __cuda_array_interface__(self):
            return {"version": 2, "data": (0x7F0000000000, False), "shape": (2, 16, 16), "typestr": "<f2",
                    "strides": None}

    fake = types.ModuleType("torch")
    fake.Tensor = Tensor
    fake.bfloat16, fake.float16 = object(), object()
    fake.cuda = types.SimpleNamespace(current_stream=lambda d: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setitem(sys.modules, "torch", fake)
    t = Tensor((2, 16, 16))
    t.dtype = fake.bfloat16
    keep = []
    on_device, (name, desc, device, stream) = tilec._interface("A", t, keep)
    assert on_device and not isinstance(desc, dict) and stream == 1 and keep == [desc], desc
    t.dtype = fake.float16
    on_device, (name, desc, device, stream) = tilec._interface("A", t, [])
    assert on_device and desc["typestr"] == "<f2"


def test_kernels_have_signatures_and_docstrings():
    """`help()`, `inspect.signature` and `repr` show the parameters' types and shapes as
    declared, the generic parameters with their defaults, and the kernel's `///` docs."""
    import inspect
    import pydoc

    gemm = tilec.linalg.gemm
    assert str(inspect.signature(gemm)) == (
        "(A: T[M, K], B: T[K, N], C: mut T[M, N], alpha: T, beta: T, *, "
        "T: float = the arrays' dtypes, BM: i32 = 32, BN: i32 = 32, BK: i32 = 32)"
    )
    assert repr(gemm) == (
        "<tilec kernel gemm<T: float, const BM: i32 = 32 in [16, 32, 64], "
        "const BN: i32 = 32 in [16, 32, 64, 128], const BK: i32 = 32 in [16, 32, 64]>"
        "(A: T[M, K], B: T[K, N], C: mut T[M, N], alpha: T, beta: T) on cpu>"
    )
    text = pydoc.render_doc(gemm, renderer=pydoc.plaintext)
    for want in [
        "C <- alpha A B + beta C",  # the kernel's /// docs
        "C : mut T[M, N]\n        array, written in place",
        "BM : const i32 = 32\n        const parameter, a keyword (BM=...); default 32; tuned among 16, 32, 64",
        "T : float\n        element type",
    ]:
        assert want in text, text
    m = tilec.compile(LINEAR)
    # Optional arrays default to None where every later parameter is optional too.
    assert str(inspect.signature(m.linear)) == (
        "(X: f32[M, 16], W: f32[16, 8], Bias: f32[8]?, Y: mut f32[M, 8], Stats: mut f32[M]? = None)"
    )
    assert "(Y, Stats), the arrays given" in m.linear.__doc__
    # A const parameter written as an extent defaults to that extent.
    g = tilec.compile(GROUP_SUM).group_sum
    assert str(inspect.signature(g)).endswith("*, T: float = the arrays' dtypes, C: i32 = X.shape[1])")
    assert g.__doc__.startswith("group_sum<T: float, const C: i32>(X: T[Z * H, C], P: T[H], S: mut T[Z, C])\n\nS[z, :] = sum over h")
    # The signature binds as the call does.
    inspect.signature(gemm).bind(1, 2, 3, 1.0, 0.0, BM=64)


def test_potrf_leaves_the_tiles_above_the_diagonal_as_docs_python_says():
    """docs/python.md: the factor is in the lower triangle, the diagonal tiles' strict upper
    triangles are zeroed, the 16x16 tiles above the diagonal keep the input; np.tril gives L."""
    a = spd(3, 40, np.float64, seed=4)
    l = tilec.linalg.potrf_batched(a.copy(), eps=1e-12)
    want = np.linalg.cholesky(a)
    assert rel(np.tril(l), want) < 1e-12
    for i0 in range(0, 40, 16):
        for j0 in range(i0 + 16, 40, 16):
            assert np.array_equal(l[:, i0:i0 + 16, j0:j0 + 16], a[:, i0:i0 + 16, j0:j0 + 16])
        d = l[:, i0:i0 + 16, i0:i0 + 16]
        assert not np.triu(d, 1).any()


def test_mistakes_a_new_user_made_get_the_right_code_and_advice_in_python_terms():
    """Each case as a new user hit it (issue 31): the code, the argument's name, and advice in
    Python's words, never the command line's (`--target`, `--generic`)."""
    g = tilec.linalg.gemm
    p = np.ones((8, 8), np.float32)
    c = np.zeros((8, 8), np.float32)
    misaligned = np.zeros(70, np.uint8)[2:66].view(np.float32).reshape(4, 4)
    square = tilec.compile("kernel sq<const K: i32>(A: mut f32[K, K]) grid(1) { A[0, 0] = 1.0; }").sq
    small = tilec.compile("kernel k(A: mut f32[N], n: i32) grid(1) { A[0] = n as f32; }").k
    cases = [
        # A misspelt keyword names no parameter (not "a scalar parameter").
        (lambda: g(p, p, y=c, alpha=1.0, beta=0.0), tilec.TileTypeError, "E0408", ["no parameter `y`", "BM"]),
        # Something that is not a number for a scalar: what was given.
        (lambda: g(p, p, c, "3", 0.0), tilec.TileTypeError, "E0409", ["`alpha`", "takes a number", "`str` ('3')"]),
        (lambda: g(p, p, c, None, 0.0), tilec.TileTypeError, "E0409", ["`alpha`", "`None` was given"]),
        # An integer out of range: the argument named.
        (lambda: small(np.zeros(2, np.float32), 2**40), tilec.TileValueError, "E0414", ["argument `n`"]),
        # A const parameter given a float: coded, with the keyword to pass.
        (lambda: g(p, p, c, 1.0, 0.0, BM=64.0), tilec.CompileError, "E0302", ["takes an integer", "`BM=16`"]),
        # A const value that breaks the kernel: every error names the instance.
        (lambda: g(p, p, c, 1.0, 0.0, BM=0), tilec.CompileError, "E0204", ["with T = f32, BM = 0, BN = 32"]),
        # Unknown type names and targets: a value error with what is accepted.
        (lambda: g(p, p, c, 1.0, 0.0, T="float33"), tilec.TileValueError, "E0501", ['T="float33"', "np.float32"]),
        (lambda: tilec.compile("kernel k(A: mut f32[N]) grid(1) { A[0] = 1.0; }", target="gpu"),
         tilec.TileValueError, "E0501", ['target "gpu"', '"vulkan"']),
        # Misaligned memory: the argument named.
        (lambda: tilec.linalg.row_sum(misaligned, np.zeros(4, np.float32)), tilec.TileValueError, "E0439",
         ["argument `X`"]),
        # A shape declared with a const parameter: shown by its name.
        (lambda: square(np.zeros((3, 4), np.float32), K=3), tilec.TileValueError, "E0412",
         ["expected shape [K, K] = [3, 3], got [3, 4]"]),
    ]
    for i, (call, cls, code, wants) in enumerate(cases):
        with pytest.raises(cls) as e:
            call()
        assert e.value.code == code, (i, e.value.code, str(e.value))
        for w in wants:
            assert w in str(e.value), (i, w, str(e.value))
        assert "--generic" not in e.value.rendered and "--target" not in e.value.rendered, (i, e.value.rendered)
    # Advice from the device layer, in Python's words (whatever the machine has).
    try:
        tilec.linalg.on("cuda").row_sum(p, np.zeros(8, np.float32))
    except tilec.DeviceError as e:
        assert "--target" not in str(e), str(e)
    # Element types by NumPy's names, types and dtypes pick the instance.
    for t in ["float64", np.float64, np.dtype("float64"), "f64"]:
        c64 = np.zeros((8, 8))
        g(p.astype(np.float64), p.astype(np.float64), c64, 1.0, 0.0, T=t)
        assert np.all(c64 == 8.0)
    # A 0-d array is a scalar.
    c[:] = 0
    g(p, p, c, np.array(2.0, np.float32), 0.0)
    assert np.all(c == 16.0)
    # The kernels of an imported module are the module's (docs/language.md §2.1).
    m = tilec.compile("import linalg;\n")
    assert "potrf_batched" in m.kernels
    a = spd(2, 5, np.float64)
    m.potrf_batched(a, 0.0)
    assert rel(np.tril(a), np.linalg.cholesky(spd(2, 5, np.float64))) < 1e-12


def test_entry_points_agree():
    """tests/entry_points.json through the Python package: the same code, texts and source
    label as `tilec run` and the Rust API give (tests/tests/entry_points.rs)."""
    import json

    table = json.loads((ROOT / "tests" / "entry_points.json").read_text())
    dtypes = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
    for case in table["cases"]:
        kwargs = {n: np.zeros(shape, dtypes[d]) for n, (d, shape) in case["arrays"].items()}
        for n, v in case.get("scalars", {}).items():
            kwargs[n] = int(v) if v.lstrip("-").isdigit() else float(v)
        for n, v in case.get("generics", {}).items():
            kwargs[n] = int(v) if v.lstrip("-").isdigit() else v
        try:
            m = tilec.compile(case["program"], target=case["target"], deny_warnings=case.get("deny_warnings", False))
            getattr(m, case["kernel"])(**kwargs)
            got = None
        except tilec.TileError as e:
            got = e
        what = case["name"]
        if case["code"] is None:
            assert got is None, (what, got and got.rendered)
            continue
        assert got is not None, f"{what}: succeeded, expected {case['code']}"
        assert got.code == case["code"], (what, got.rendered)
        for s in case.get("contains", []):
            assert s in got.rendered, (what, s, got.rendered)
        assert ("╭─[" in got.rendered) == case.get("label", False), (what, got.rendered)


def test_autotune_tunes_on_first_call_and_records_the_winner(tmp_path, monkeypatch):
    """``autotune=True``: the first call tunes (`REPS` 2000 is far slower than 1, both give the
    same result) and records the winner in the cache folder; the results are right."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    src = """
kernel work<const REPS: i32 = 2000 in [1, 2000]>(X: f32[N], Y: mut f32[N]) grid(cdiv(N, 1024)) {
    let i0 = program_id(0) * 1024;
    let t = tile<f32, 1024>::zeros();
    t[:] = X[i0:i0+1024];
    let acc = tile<f32, 1024>::zeros();
    for r in 0..REPS {
        acc = acc * 0.0 + t * 2.0;
    }
    Y[i0:i0+1024] = acc;
}
"""
    m = tilec.compile(src, name="autotune.tile", autotune=True)
    x = np.arange(1 << 15, dtype=np.float32) % 7
    y = np.zeros_like(x)
    m.work(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    records = list((tmp_path / "tune").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["kernel"] == "work" and record["config"] == {"REPS": "1"}
    y2 = np.zeros_like(x)
    m.work(x, y2)
    np.testing.assert_array_equal(y2, 2 * x)


def test_version_names_the_build():
    """``tilec.__version__`` is a PEP 440 version whose local part names the commit, the
    targets and the CPU's code generators with LLVM's version, as ``build_info()`` and
    ``python -m tilec --version`` (what ``tilec --version`` prints) do."""
    from packaging.version import Version

    info = tilec.build_info()
    v = Version(tilec.__version__)
    assert v.public == info["version"]
    local = tilec.__version__.split("+", 1)[1].split(".")
    assert local[0] == info["commit"].split("-")[0]
    for t in info["targets"]:
        assert t in local
    backends = info["cpu_backends"]
    assert backends[-1] == "cranelift" and set(backends) <= {"llvm", "cranelift"}
    if "llvm" in backends:
        assert backends[0] == "llvm" and info["llvm"].startswith("16.")
        assert "cuda" in info["targets"] and ("llvm" + info["llvm"]) in tilec.__version__
        assert "CPU code generators: LLVM (default), Cranelift" in info["text"]
    else:
        assert info["llvm"] is None and "built without LLVM" in info["text"]
    r = subprocess.run([sys.executable, "-m", "tilec", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == info["text"], r.stdout + r.stderr



PRINTS = """
kernel scale(X: mut f32[B, 4], s: f32) grid(B) {
    let b = program_id(0);
    let t = X[b, 0:4];
    print("row", b, t);
    assert(s > 0.0, "s is positive");
    X[b, 0:4] = t * s;
}
"""


def test_kernel_prints_go_to_stdout_in_program_order(capsys):
    """``print`` in a kernel: one line per program on ``sys.stdout`` after the call, in
    program order, formatted here from the inputs; ``prints=False`` compiles them out."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    m = tilec.compile(PRINTS, name="prints.tile")
    m.scale(X=x.copy(), s=2.0)
    want = [
        f"prints.tile:5 scale[{b}] row: b = {b}, t = [{', '.join(repr(float(v)) for v in x[b])}]" for b in range(3)
    ]
    assert capsys.readouterr().out.splitlines() == want
    y = x.copy()
    tilec.compile(PRINTS, name="prints.tile", prints=False).scale(X=y, s=2.0)
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(y, 2 * x)


def test_a_failed_kernel_assert_raises():
    """A false ``assert`` raises ``TileAssertionError`` (E0445, an ``AssertionError``) naming
    the first failing program and the message (the launch ran to its end: arrays passed in
    place hold what it wrote); ``asserts=False`` runs regardless."""
    x = np.ones((3, 4), dtype=np.float32)
    m = tilec.compile(PRINTS, name="prints.tile", prints=False)
    with pytest.raises(AssertionError) as e:
        m.scale(X=x, s=-1.0)
    assert isinstance(e.value, tilec.TileAssertionError) and e.value.code == "E0445"
    assert "assertion failed in scale[0]: s is positive" in str(e.value)
    np.testing.assert_array_equal(x, -np.ones((3, 4), dtype=np.float32))
    y = np.ones((3, 4), dtype=np.float32)
    tilec.compile(PRINTS, name="prints.tile", prints=False, asserts=False).scale(X=y, s=-3.0)
    np.testing.assert_array_equal(y, np.full((3, 4), -3.0, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 32, 64])
def test_getrf_and_getrs_match_scipy_and_numpy(dtype, n):
    """``linalg.getrf_batched`` gives SciPy's ``lu_factor`` (the same factors and 0-based
    pivots in float64; in float32 factors that reproduce ``P A``), ``info`` 0 on regular
    matrices and ``k + 1`` at a zero pivot, and ``getrs_batched`` solves as ``np.linalg.solve``."""
    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (6, n, n)).astype(dtype)
    a[5, :, 0] = 0  # singular: the first pivot is zero
    lu, piv, info = a.copy(), np.zeros((6, n), np.int32), np.full(6, -1, np.int32)
    tilec.linalg.getrf_batched(A=lu, ipiv=piv, info=info)
    np.testing.assert_array_equal(info, [0, 0, 0, 0, 0, 1])
    eps = np.finfo(dtype).eps
    for b in range(5):
        ref_lu, ref_piv = scipy.linalg.lu_factor(a[b].astype(np.float64))
        if dtype == np.float64:
            np.testing.assert_array_equal(piv[b], ref_piv)
            np.testing.assert_allclose(lu[b], ref_lu, rtol=0, atol=1e-12)
        # P A = L U within a few n eps |A|.
        l, u = np.tril(lu[b].astype(np.float64), -1) + np.eye(n), np.triu(lu[b].astype(np.float64))
        pa = a[b].astype(np.float64)
        for k in range(n):
            pa[[k, piv[b, k]]] = pa[[piv[b, k], k]]
        assert np.abs(pa - l @ u).max() <= 4 * n * eps * np.abs(a[b]).max()
    x = rng.uniform(-1, 1, (5, n, 3)).astype(dtype)
    got = x.copy()
    tilec.linalg.getrs_batched(LU=lu[:5].copy(), ipiv=piv[:5].copy(), X=got)
    if dtype == np.float64:
        ref = np.linalg.solve(a[:5], x)
        assert np.abs(got - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())
    # The residual of A X = B within a few n eps |A| |X| (row sums of |A| up to n max |A|).
    res = np.abs(a[:5].astype(np.float64) @ got.astype(np.float64) - x).max()
    assert res <= 8 * n * eps * n * np.abs(a[:5]).max() * np.abs(got).max()


def _pack(a, w):
    """The stack ``a`` (B, ...) in the compact layout (B / w, ..., w), a copy (for 1 x 1
    matrices ``np.ascontiguousarray`` would give a view of ``a``, which the kernels write)."""
    return np.moveaxis(a.reshape(a.shape[0] // w, w, *a.shape[1:]), 1, -1).copy()


def _unpack(c):
    """The inverse of ``_pack``."""
    return np.moveaxis(c, -1, 1).reshape(-1, *c.shape[1:-1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_compact_lu_and_svd_match_scipy_and_numpy(dtype, n):
    """``linalg.getrf_compact_batched`` and ``getrs_compact_batched`` on 16 matrices packed 8 at
    a time give SciPy's ``lu_factor`` pivots (float64) and solve as ``np.linalg.solve``, a
    singular matrix's ``info`` in its own lane; ``gesvj_compact_batched`` gives NumPy's
    singular values and ``A = U S V^T``."""
    rng = np.random.default_rng(n + 11)
    a = rng.uniform(-1, 1, (16, n, n)).astype(dtype)
    a[3, :, 0] = 0  # singular: the first pivot is zero
    lu, piv, info = _pack(a, 8), np.zeros((2, n, 8), np.int32), np.full((2, 8), -1, np.int32)
    tilec.linalg.getrf_compact_batched(A=lu, ipiv=piv, info=info)
    want = np.zeros(16, np.int32)
    want[3] = 1
    np.testing.assert_array_equal(info.reshape(16), want)
    if dtype == np.float64:
        for b in (0, 5, 15):
            np.testing.assert_array_equal(_unpack(piv)[b], scipy.linalg.lu_factor(a[b].astype(np.float64))[1])
    x = rng.uniform(-1, 1, (16, n, 2)).astype(dtype)
    got = _pack(x, 8)
    tilec.linalg.getrs_compact_batched(LU=lu, ipiv=piv, X=got)
    ok = [b for b in range(16) if b != 3]
    a64, got64 = a[ok].astype(np.float64), _unpack(got)[ok].astype(np.float64)
    eps = np.finfo(dtype).eps
    assert np.abs(a64 @ got64 - x[ok]).max() <= 8 * n * eps * n * np.abs(a64).max() * np.abs(got64).max()
    u, s, v = _pack(a, 8), np.zeros((2, n, 8), dtype), np.zeros((2, n, n, 8), dtype)
    info = np.full((2, 8), 7, np.int32)
    tilec.linalg.gesvj_compact_batched(A=u, S=s, V=v, info=info, tol=float(np.sqrt(n) * eps), max_sweeps=30)
    np.testing.assert_array_equal(info, 0)
    u, s, v = _unpack(u).astype(np.float64), _unpack(s).astype(np.float64), _unpack(v).astype(np.float64)
    for b in range(16):
        ab = a[b].astype(np.float64)
        bound = 8 * n * eps * max(np.linalg.norm(ab), 1e-300)
        np.testing.assert_allclose(s[b], np.linalg.svd(ab, compute_uv=False), rtol=0, atol=bound)
        assert np.abs(u[b] * s[b] @ v[b].T - ab).max() <= bound


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_compact_syev_matches_numpy_eigh(dtype, n):
    """``linalg.syev_compact_batched`` on 16 symmetric matrices packed 8 at a time gives NumPy's
    ``eigh`` eigenvalues (ascending), ``A = V W V^T`` and ``V^T V = I``; a NaN matrix's
    ``info`` is ``N + 1`` in its own lane."""
    rng = np.random.default_rng(n + 23)
    a = rng.uniform(-1, 1, (16, n, n))
    a = (a + a.transpose(0, 2, 1)).astype(dtype)
    a[9, n - 1, 0] = np.nan
    eps = np.finfo(dtype).eps
    w, v, info = np.zeros((2, n, 8), dtype), np.zeros((2, n, n, 8), dtype), np.full((2, 8), -1, np.int32)
    tilec.linalg.syev_compact_batched(A=_pack(a, 8), E=w, V=v, info=info, tol=float(eps))
    want = np.zeros(16, np.int32)
    want[9] = n + 1
    np.testing.assert_array_equal(_unpack(info).reshape(16), want)
    w, v = _unpack(w).astype(np.float64), _unpack(v).astype(np.float64)
    for b in [b for b in range(16) if b != 9]:
        ab = a[b].astype(np.float64)
        bound = 8 * n * eps * np.linalg.norm(ab)
        np.testing.assert_allclose(w[b], np.linalg.eigvalsh(ab), rtol=0, atol=bound)
        assert np.abs(v[b] * w[b] @ v[b].T - ab).max() <= bound
        assert np.abs(v[b].T @ v[b] - np.eye(n)).max() <= 8 * n * eps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_compact_gesvd_matches_numpy_svd(dtype, n):
    """``linalg.gesvd_compact_batched`` on 16 matrices packed 8 at a time gives NumPy's ``svd``
    singular values (descending), ``A = U S V^T``, ``U^T U = I`` and ``V^T V = I``, also for a
    rank-deficient matrix; a NaN matrix's ``info`` is ``N + 1`` in its own lane."""
    rng = np.random.default_rng(n + 29)
    a = rng.uniform(-1, 1, (16, n, n)).astype(dtype)
    a[3, :, n - 1] = a[3, :, 0]
    a[9, 0, n - 1] = np.nan
    eps = np.finfo(dtype).eps
    u, s, v, e = _pack(a, 8), np.zeros((2, n, 8), dtype), np.zeros((2, n, n, 8), dtype), np.zeros((2, n, 8), dtype)
    info = np.full((2, 8), -1, np.int32)
    tilec.linalg.gesvd_compact_batched(A=u, S=s, V=v, E=e, info=info, tol=float(eps))
    want = np.zeros(16, np.int32)
    want[9] = n + 1
    np.testing.assert_array_equal(_unpack(info).reshape(16), want)
    u, s, v = _unpack(u).astype(np.float64), _unpack(s).astype(np.float64), _unpack(v).astype(np.float64)
    for b in [b for b in range(16) if b != 9]:
        ab = a[b].astype(np.float64)
        bound = 8 * n * eps * max(np.linalg.norm(ab), 1e-300)
        np.testing.assert_allclose(s[b], np.linalg.svd(ab, compute_uv=False), rtol=0, atol=bound)
        assert np.abs(u[b] * s[b] @ v[b].T - ab).max() <= bound
        assert np.abs(u[b].T @ u[b] - np.eye(n)).max() <= 8 * n * eps
        assert np.abs(v[b].T @ v[b] - np.eye(n)).max() <= 8 * n * eps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n", [(1, 1), (7, 7), (33, 20), (64, 40)])
def test_geqrf_orgqr_gels_match_scipy_and_numpy(dtype, m, n):
    """``linalg.geqrf_batched`` gives SciPy's ``qr(mode='raw')`` (LAPACK's layout and taus),
    ``orgqr_batched`` its Q (orthonormal, Q R = A), and ``gels_batched`` NumPy's ``lstsq``."""
    rng = np.random.default_rng(m * 100 + n)
    a = rng.uniform(-1, 1, (4, m, n)).astype(dtype)
    f, tau = a.copy(), np.zeros((4, n), dtype)
    tilec.linalg.geqrf_batched(A=f, tau=tau)
    eps = np.finfo(dtype).eps
    tol = 50 * m * eps
    for b in range(4):
        (h, t), _ = scipy.linalg.qr(a[b].astype(np.float64), mode="raw")
        np.testing.assert_allclose(f[b], h, rtol=0, atol=tol)
        np.testing.assert_allclose(tau[b], t, rtol=0, atol=tol)
    q = f.copy()
    tilec.linalg.orgqr_batched(A=q, tau=tau)
    for b in range(4):
        qb, r = q[b].astype(np.float64), np.triu(f[b].astype(np.float64))[:n]
        assert np.abs(qb.T @ qb - np.eye(n)).max() <= 8 * m * eps
        assert np.abs(qb @ r - a[b]).max() <= 8 * m * eps * np.abs(a[b]).max()
    x = rng.uniform(-1, 1, (4, m, 2)).astype(dtype)
    got, info = x.copy(), np.full(4, 7, np.int32)
    tilec.linalg.gels_batched(A=a.copy(), X=got, info=info)
    np.testing.assert_array_equal(info, 0)
    for b in range(4):
        ref = np.linalg.lstsq(a[b].astype(np.float64), x[b].astype(np.float64), rcond=None)[0]
        np.testing.assert_allclose(got[b, :n], ref, rtol=0, atol=1e3 * eps * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 6, 33, 64])
def test_syevj_matches_numpy_eigh(dtype, n):
    """``linalg.syevj_batched`` gives NumPy's ``eigh``: the eigenvalues ascending, orthonormal
    eigenvectors with ``A V = V diag(W)``; a repeated eigenvalue and a NaN matrix included."""
    rng = np.random.default_rng(n + 7)
    a = rng.standard_normal((4, n, n))
    a = a + a.transpose(0, 2, 1)
    if n:
        a[1] = np.eye(n) + 1.0  # eigenvalue 1, n - 1 times
        a[2, n - 1, 0] = np.nan
    a = a.astype(dtype)
    w, v, info = np.zeros((4, n), dtype), np.zeros((4, n, n), dtype), np.full(4, 7, np.int32)
    eps = np.finfo(dtype).eps
    tilec.linalg.syevj_batched(A=a.copy(), W=w, V=v, info=info, tol=float(eps), max_sweeps=100)
    np.testing.assert_array_equal(info, [0, 0, n + 1 if n else 0, 0])
    for b in (0, 1, 3):
        ab = a[b].astype(np.float64)
        ref = np.linalg.eigvalsh(ab)
        bound = 8 * max(n, 1) * eps * max(np.linalg.norm(ab), 1e-300)
        np.testing.assert_allclose(w[b], ref, rtol=0, atol=bound)
        vb = v[b].astype(np.float64)
        assert np.abs(vb.T @ vb - np.eye(n)).max(initial=0) <= 8 * max(n, 1) * eps
        assert np.abs(ab @ vb - vb * w[b].astype(np.float64)).max(initial=0) <= bound


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n", [(1, 1), (8, 8), (33, 20), (20, 33), (64, 40)])
def test_gesvj_matches_numpy_svd(dtype, m, n):
    """``linalg.gesvj_batched`` gives NumPy's ``svd``: singular values descending, ``A = U S
    V^T`` with V orthogonal; a rank-deficient matrix included."""
    rng = np.random.default_rng(m * 100 + n)
    a = rng.uniform(-1, 1, (3, m, n))
    a[1, :, n - 1] = a[1, :, 0]
    a = a.astype(dtype)
    u, s, v, info = a.copy(), np.zeros((3, n), dtype), np.zeros((3, n, n), dtype), np.full(3, 7, np.int32)
    eps = np.finfo(dtype).eps
    tilec.linalg.gesvj_batched(A=u, S=s, V=v, info=info, tol=float(np.sqrt(m) * eps), max_sweeps=30)
    np.testing.assert_array_equal(info, 0)
    k = min(m, n)
    for b in range(3):
        ab = a[b].astype(np.float64)
        bound = 8 * max(m, n) * eps * np.linalg.norm(ab)
        np.testing.assert_allclose(s[b, :k], np.linalg.svd(ab, compute_uv=False), rtol=0, atol=bound)
        np.testing.assert_allclose(s[b, k:], 0, rtol=0, atol=bound)
        vb, ub = v[b].astype(np.float64), u[b].astype(np.float64)
        assert np.abs(vb.T @ vb - np.eye(n)).max() <= 8 * n * eps
        assert np.abs(ub * s[b].astype(np.float64) @ vb.T - ab).max() <= bound


SMALL_MATS = """
kernel mats<T: float>(A: T[P, 3, 3], Inv: mut T[P, 3, 3], Det: mut T[P], U: mut T[P, 3, 3],
                      S: mut T[P, 3], V: mut T[P, 3, 3], W: mut T[P, 3], Q: mut T[P, 3, 3]) grid(cdiv(P, 32)) {
    let p0 = program_id(0) * 32;
    let f = A[p0:p0+32];
    Inv[p0:p0+32] = inverse(f);
    Det[p0:p0+32] = determinant(f);
    let (u, s, v) = svd(f);
    U[p0:p0+32] = u;
    S[p0:p0+32] = s;
    V[p0:p0+32] = v;
    let (w, q) = sym_eig(f);
    W[p0:p0+32] = w;
    Q[p0:p0+32] = q;
}
"""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_matrix_functions_match_numpy(dtype):
    """Small matrices per lane (language §3.6) give NumPy's ``inv``, ``det``, ``svd`` and
    ``eigh`` on 3x3 stacks: random, near-singular, rank-deficient and a repeated eigenvalue;
    ``U`` and ``V`` rotations with the last singular value negative where ``det(A) < 0``."""
    rng = np.random.default_rng(37)
    p = 70
    a = rng.uniform(-1, 1, (p, 3, 3))
    a[1] = np.diag([1.0, 1.0, 2.0])
    a[2, :, 2] = a[2, :, 0]
    a[3] = a[3] @ np.diag([1.0, 1e-3, 1e-6])
    a = a.astype(dtype)
    outs = dict(Inv=np.zeros((p, 3, 3), dtype), Det=np.zeros(p, dtype), U=np.zeros((p, 3, 3), dtype),
                S=np.zeros((p, 3), dtype), V=np.zeros((p, 3, 3), dtype), W=np.zeros((p, 3), dtype),
                Q=np.zeros((p, 3, 3), dtype))
    tilec.compile(SMALL_MATS).mats(a, **outs)
    eps = np.finfo(dtype).eps
    a64 = a.astype(np.float64)
    norm = np.linalg.norm(a64, axis=(1, 2))
    bound = 4 * 3 * eps * norm
    u, s, v = (outs[k].astype(np.float64) for k in "USV")
    assert (np.linalg.norm(a64 - u @ (s[:, :, None] * np.swapaxes(v, 1, 2)), axis=(1, 2)) <= bound).all()
    np.testing.assert_allclose(np.abs(s), np.linalg.svd(a64, compute_uv=False), rtol=0, atol=bound.max())
    np.testing.assert_allclose(np.linalg.det(u), 1, atol=12 * eps)
    np.testing.assert_allclose(np.linalg.det(v), 1, atol=12 * eps)
    det = np.linalg.det(a64)
    clear = np.abs(det) > 1e-3
    assert ((s[clear, 2] < 0) == (det[clear] < 0)).all()
    sym = np.tril(a64) + np.swapaxes(np.tril(a64, -1), 1, 2)
    np.testing.assert_allclose(outs["W"], np.linalg.eigvalsh(sym), rtol=0, atol=bound.max())
    q = outs["Q"].astype(np.float64)
    assert (np.linalg.norm(sym - q @ (outs["W"][:, :, None] * np.swapaxes(q, 1, 2)), axis=(1, 2)) <= bound).all()
    ok = np.abs(det) > 1e-2
    cond = np.linalg.cond(a64[ok])
    inv_err = np.linalg.norm(outs["Inv"][ok] - np.linalg.inv(a64[ok]), axis=(1, 2)) / np.linalg.norm(
        np.linalg.inv(a64[ok]), axis=(1, 2))
    assert (inv_err <= 4 * 3 * cond * 3 * eps).all()
    np.testing.assert_allclose(outs["Det"][ok], det[ok], rtol=float((4 * 3 * cond.max() * eps)))
