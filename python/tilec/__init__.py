"""tilec: compile ``.tile`` kernels and run them on NumPy arrays, on the CPU, a Vulkan device
or a CUDA device (also on PyTorch and CuPy CUDA tensors, in place).

>>> import numpy as np, tilec
>>> A = np.eye(16, dtype=np.float32)[None].repeat(8, axis=0) * 4.0   # 8 SPD 16x16 matrices
>>> L = tilec.linalg.potrf_batched(A, eps=1e-6)                      # in place: L is A
>>> float(L[0, 0, 0])
2.0

``tilec.compile(path_or_source, target="cpu")`` returns a :class:`Module` whose kernels are
callables: positional arguments follow the kernel's parameters, keywords name them, and
keywords that name a const parameter (``BM=64``) or an element type (``T="f64"``) choose the
instance. Arrays are passed without copies (NumPy arrays, and anything with
``__array_interface__`` or CPU DLPack); ``mut`` arrays are updated in place and returned
(one array, a tuple of several, or ``None``). Kernels compiled with ``target="cuda"`` also
take CUDA arrays (``__cuda_array_interface__`` or CUDA DLPack: PyTorch and CuPy tensors),
used in place on the device, on the producer's stream, with no copy to the host
(``docs/python.md``, "CUDA tensors"). Each kernel is compiled on first use for the arrays'
dtypes and cached; programs are cached by source hash and target. Launches release
the GIL, so several Python threads may launch at once.

Errors are :class:`TileError` subclasses carrying ``code`` (``"E0410"``), ``rendered`` (the
diagnostics as ``tilec`` prints them) and ``codes`` (every diagnostic's code):
:class:`CompileError` (a ``ValueError``) for errors in the program, :class:`TileTypeError`
(a ``TypeError``) for missing, unknown or wrongly typed arguments (a CUDA tensor for a CPU
or Vulkan kernel included), :class:`TileValueError` (a ``ValueError``) for shapes,
read-only, overlapping or non-contiguous arrays, arrays on the wrong CUDA device and bad
scalar values, :class:`DeviceError` (a ``RuntimeError``) when a device or driver is missing
or fails.
``docs/errors.md`` explains every code.
"""

import hashlib
import inspect
import os
import sys
import threading
import warnings

import numpy as np

from . import _tilec

__all__ = [
    "__version__",
    "build_info",
    "compile",
    "Module",
    "Kernel",
    "TileError",
    "CompileError",
    "TileTypeError",
    "TileValueError",
    "DeviceError",
    "TileAssertionError",
    "UnknownKernelError",
    "linalg",
]


def build_info():
    """This build of tilec: a dict with ``version``, ``commit``, ``cpu_backends`` (the
    default first: ``["llvm", "cranelift"]`` where LLVM is built in), ``targets`` (``"cpu"``,
    ``"vulkan"``, and ``"cuda"`` with LLVM), ``llvm`` (its version, or None) and ``text``
    (what ``tilec --version`` and ``python -m tilec --version`` print)."""
    return dict(_tilec.build_info())


def _version(info):
    """``VERSION+BUILD`` (PEP 440), the build in the local part as PyTorch names its CUDA build
    (``2.11.0+cu130``): the commit, then each target, the CPU followed by its code generators
    (the default first, LLVM with its version)."""
    parts = [info["commit"].replace("-", ".")]
    for t in info["targets"]:
        parts.append(t)
        if t == "cpu":
            parts += ["llvm" + info["llvm"] if b == "llvm" and info["llvm"] else b for b in info["cpu_backends"]]
    return info["version"] + "+" + ".".join(parts)


#: The version and this build: ``"0.1.0+2fc82530d72f.cpu.llvm16.0.6.cranelift.vulkan.cuda"``
#: (the commit, the targets, the CPU's code generators, the default first, and LLVM's version;
#: ``"0.1.0+2fc82530d72f.cpu.cranelift.vulkan"`` without LLVM). :func:`build_info` gives the
#: same as a dict.
__version__ = _version(_tilec.build_info())


class TileError(Exception):
    """A tilec error: ``code`` (first error), ``codes`` (all), ``rendered`` (the text)."""

    def __init__(self, code, rendered, codes):
        super().__init__(rendered.rstrip())
        self.code = code
        self.rendered = rendered
        self.codes = list(codes)


class CompileError(TileError, ValueError):
    """The program has errors (syntax, names, types, shapes); ``codes`` lists every one."""


class TileTypeError(TileError, TypeError):
    """A missing or unknown argument, an array where a scalar belongs (or the reverse), a
    dtype that does not match the kernel's element type, or an array in memory the kernel's
    target cannot use (a CUDA tensor for a CPU or Vulkan kernel: E0442)."""


class TileValueError(TileError, ValueError):
    """A wrong shape, a read-only, overlapping, misaligned or non-contiguous array, an array
    whose memory description cannot be used (E0440), a CUDA array on another device than the
    kernel's (E0443), or a scalar out of its parameter's range."""


class UnknownKernelError(TileError, AttributeError):
    """A module has no kernel of that name (E0107); the message suggests the closest one."""


class TileAssertionError(TileError, AssertionError):
    """An ``assert(cond, "message")`` of the kernel was false in some program (E0445): the
    message names the first such program, the assertion's source line and its message."""


class DeviceError(TileError, RuntimeError):
    """No Vulkan or CUDA device or driver, or the device failed."""


_TYPE_CODES = {"E0216", "E0407", "E0408", "E0409", "E0410", "E0406", "E0442"}
_DEVICE_CODES = {f"E04{n}" for n in range(20, 37) if n != 29} | {"E0505"}


def _error(code, rendered, codes=None):
    codes = list(codes or [code])
    if code == "E0107":
        cls = UnknownKernelError
    elif code == "E0445":
        cls = TileAssertionError
    elif code in _TYPE_CODES:
        cls = TileTypeError
    elif code == "E0501":
        cls = TileValueError
    elif code in _DEVICE_CODES:
        cls = DeviceError
    elif code.startswith("E04"):
        cls = TileValueError
    else:
        cls = CompileError
    return cls(code, rendered, codes)


def _convert(raw):
    return _error(*raw.args)


def _raw(call, *args):
    """``call(*args)`` of the extension, its errors raised as :class:`TileError`."""
    try:
        return call(*args)
    except _tilec.RawError as e:
        raise _convert(e) from None


def _dlpack_device(name, x):
    """Where ``x``'s memory is by its ``__dlpack_device__()``: ``("host", None)``, ``("cuda",
    device index)``, or ``(None, None)`` when it does not say. Raises E0442 for a device tilec
    does not run on."""
    f = getattr(x, "__dlpack_device__", None)
    if f is None:
        return None, None
    try:
        kind, index = (int(v) for v in f())
    except (TypeError, ValueError) as e:
        text = f"argument `{name}`: __dlpack_device__() is not (device type, index): {e}"
        raise _error("E0440", f"error[E0440]: {text}\n") from None
    where = _raw(_tilec.dlpack_memory, name, kind, index)
    return where, (index if where == "cuda" else None)


def _cuda_interface(x):
    """``x.__cuda_array_interface__``, or None where it has none, or where it may misname the
    dtype: PyTorch's bfloat16 tensors go through DLPack (PyTorch 2.5 and 2.6 wrote bfloat16 as
    ``<f2``, float16's type string; earlier ones raise)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16:
        return None
    try:
        return getattr(x, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001
        return None


def _torch_stream(x):
    """The stream that a PyTorch CUDA tensor ``x`` is used on, which its interface (version 2)
    does not name: the current stream of its device, as the interface writes streams (1 for
    the legacy default stream). None for other producers."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return None
    return torch.cuda.current_stream(x.device).cuda_stream or 1


def _dlpack_capsule(name, x):
    """The DLPack capsule of CUDA array ``x``, made ready on the legacy default stream (the
    stream tilec then launches on): ``__dlpack__(stream=1)``, versioned where the producer
    can."""
    errors = []
    for kwargs in ({"stream": 1, "max_version": (1, 0)}, {"stream": 1}):
        try:
            return x.__dlpack__(**kwargs)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            errors.append(e)
    text = f"argument `{name}` cannot be read through DLPack on its CUDA device: {errors[-1]}"
    raise _error("E0440", f"error[E0440]: {text}\n")


def _interface(name, x, keep):
    """How array argument ``x`` is passed: ``(False, (name, address, shape, strides, typestr,
    read_only))`` for host memory (``__array_interface__``, CPU DLPack through NumPy), or
    ``(True, (name, description, device, stream))`` for CUDA memory, with its
    ``__cuda_array_interface__`` dict or DLPack capsule (read by the extension), its device
    index where the producer says it, and its stream where the description lacks one."""
    ai = getattr(x, "__array_interface__", None)
    if ai is None:
        where, device = _dlpack_device(name, x)
        cai = _cuda_interface(x) if where != "host" else None
        if cai is not None:
            stream = None if isinstance(cai, dict) and "stream" in cai else _torch_stream(x)
            return True, (name, cai, device, stream)
        if where == "cuda":
            capsule = _dlpack_capsule(name, x)
            keep.append(capsule)
            return True, (name, capsule, device, 1)
    if ai is None and hasattr(x, "__dlpack__"):
        try:
            x = np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise _error("E0440", f"error[E0440]: argument `{name}` cannot be read through DLPack on the host: {e}\n")
        keep.append(x)
        ai = x.__array_interface__
    if ai is None:
        if isinstance(x, (int, float, complex, np.generic)):
            raise _error("E0409", f"error[E0409]: argument `{name}` is an array parameter, but a number was given\n")
        raise _error(
            "E0440",
            f"error[E0440]: argument `{name}` ({type(x).__name__}) does not expose its memory "
            "(__array_interface__ or DLPack); pass a NumPy array\n",
        )
    data = ai.get("data")
    if not isinstance(data, tuple) or ai.get("mask") is not None:
        raise _error("E0440", f"error[E0440]: argument `{name}` does not expose its memory as an address\n")
    shape = tuple(int(d) for d in ai["shape"])
    strides = ai.get("strides")
    strides = None if strides is None else [int(s) for s in strides]
    return False, (name, int(data[0]), list(shape), strides, ai["typestr"], bool(data[1]))


class _Written:
    """Text from a kernel's source (a type, a default), shown as written in signatures."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _generic_defaults(sig):
    """For each generic parameter of kernel signature ``sig``, what it is when not given: the
    arrays' dtypes for an element type, the default as written (``32``) or an array extent
    (``A.shape[1]``) for a const parameter, else None (required)."""
    extents = {}
    for g, array, axis in sig.get("extents", []):
        extents.setdefault(g, f"{array}.shape[{axis}]")
    out = {}
    for name, is_const, text in sig["generics"]:
        if not is_const:
            out[name] = "the arrays' dtypes"
        elif " = " in text:
            out[name] = text.split(" = ", 1)[1].split(" in [", 1)[0]
        else:
            out[name] = extents.get(name)
    return out


def _signature(sig):
    """The :class:`inspect.Signature` of a kernel: its parameters in order, annotated with their
    types as written (``A: mut T[B, N, N]``; optional arrays default to None), then its generic
    parameters as keyword-only arguments (``*, T: float = the arrays' dtypes, BM: i32 = 32``)."""
    P = inspect.Parameter
    params = sig["params"]
    out = []
    for i, (name, _array, _mut, ty) in enumerate(params):
        # An optional array defaults to None where every later parameter is optional too
        # (Python's signatures allow no required parameter after a default).
        optional = all(p[3].endswith("?") for p in params[i:])
        out.append(P(name, P.POSITIONAL_OR_KEYWORD, default=None if optional else P.empty, annotation=_Written(ty)))
    defaults = _generic_defaults(sig)
    for name, is_const, text in sig["generics"]:
        ann = text.split(":", 1)[1].split(" = ", 1)[0].strip() if ":" in text else "type"
        default = defaults[name]
        out.append(
            P(name, P.KEYWORD_ONLY, default=P.empty if default is None else _Written(default), annotation=_Written(ann))
        )
    return inspect.Signature(out)


def _header(sig):
    """``name<generics>(parameters)`` as declared: ``potrf_batched<T: float>(A: mut T[B, N, N], eps: T)``."""
    gen = ", ".join(g[2] for g in sig["generics"])
    params = ", ".join(f"{p[0]}: {p[3]}" for p in sig["params"])
    return f"{sig['name']}{'<' + gen + '>' if gen else ''}({params})"


def _docstring(sig):
    """The kernel's docstring: its declaration, its ``///`` docs, then its parameters (type as
    written, what is passed, which arrays are written) and generic parameters."""
    lines = [_header(sig), ""]
    if sig["doc"]:
        lines += [sig["doc"].strip(), ""]
    lines += ["Parameters", "----------"]
    for name, array, mut, ty in sig["params"]:
        lines.append(f"{name} : {ty}")
        if array:
            what = "array, written in place" if mut else "array, read"
            if ty.endswith("?"):
                what += "; optional: None or left out"
        else:
            what = "scalar"
        lines.append(f"    {what}")
    defaults = _generic_defaults(sig)
    for name, is_const, text in sig["generics"]:
        declared, _, candidates = text.partition(" in [")
        declared = declared.split(":", 1)[1].strip() if ":" in declared else "type"
        lines.append(f"{name} : {'const ' if is_const else ''}{declared}")
        if is_const:
            d = defaults[name]
            tuned = f"; tuned among {candidates.rstrip(']')} (`tilec tune`, autotune=True)" if candidates else ""
            lines.append(f"    const parameter, a keyword ({name}=...)" + (f"; default {d}" if d else "; required") + tuned)
        else:
            lines.append(f"    element type, from the arrays' dtypes unless given ({name}=\"f64\" or np.float64)")
    lines += [
        "",
        "Shape symbols (M, N, ...) stand for the arrays' extents; one symbol must have one value",
        "in a call (E0412 otherwise).",
    ]
    mut = [p[0] for p in sig["params"] if p[2]]
    lines += ["", "Returns", "-------"]
    if len(mut) == 1:
        lines.append(f"{mut[0]}, the array given, written in place")
    elif mut:
        lines.append(f"({', '.join(mut)}), the arrays given (those not None), written in place")
    else:
        lines.append("None")
    return "\n".join(lines)


_DTYPE_NAMES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int32": "i32",
    "int64": "i64",
    "uint32": "u32",
}


def _generic_value(v):
    """A generic argument as the extension takes it: numbers as they are; element types as
    tilec's names, from tilec's own (``"f64"``), NumPy's (``"float64"``, ``np.float64``,
    ``np.dtype("float64")``, ``ml_dtypes.bfloat16``)."""
    if isinstance(v, (bool, int, float, np.integer, np.floating)):
        return v
    if isinstance(v, str):
        return _DTYPE_NAMES.get(v, v)
    try:
        name = np.dtype(v).name
    except TypeError:
        return v
    return _DTYPE_NAMES.get(name, name)


class Kernel:
    """A kernel of a :class:`Module`, called as a function (see the package docstring). Its
    ``__signature__`` and docstring give the parameters' types and shapes as declared and the
    kernel's ``///`` docs (``help(m.kernel)``, ``inspect.signature``)."""

    def __init__(self, module, sig):
        self._module = module
        self.name = sig["name"]
        self.__doc__ = _docstring(sig)
        self.__signature__ = _signature(sig)
        self._header = _header(sig)
        self.params = [p[0] for p in sig["params"]]
        self._arrays = {p[0] for p in sig["params"] if p[1]}
        self._mut = [p[0] for p in sig["params"] if p[2]]
        self.generics = [g[0] for g in sig["generics"]]

    def __repr__(self):
        return f"<tilec kernel {self._header} on {self._module.target}>"

    def __call__(self, *args, **kwargs):
        if len(args) > len(self.params):
            raise _error(
                "E0408",
                f"error[E0408]: kernel `{self.name}` takes {len(self.params)} arguments "
                f"({', '.join(self.params)}), {len(args)} given\n",
            )
        values = dict(zip(self.params, args))
        generics = []
        for k, v in kwargs.items():
            if k in values:
                raise _error("E0408", f"error[E0408]: argument `{k}` of kernel `{self.name}` is given twice\n")
            if k in self.generics:
                generics.append((k, _generic_value(v)))
            else:
                values[k] = v
        keep = []
        arrays, devices, scalars = [], [], []
        for k, v in values.items():
            if k in self._arrays:
                if v is None:
                    # Omitted: an optional array (`A: f32[N]?`) is bound empty; for another
                    # the launch reports it missing (E0407).
                    continue
                on_device, desc = _interface(k, v, keep)
                (devices if on_device else arrays).append(desc)
            elif k in self.params and isinstance(v, np.ndarray) and v.ndim > 0:
                raise _error("E0409", f"error[E0409]: argument `{k}` is a scalar parameter, but an array was given\n")
            else:
                # Scalars, and names that are no parameter (the extension reports them, E0408).
                scalars.append((k, v))
        try:
            _, lines, dropped = self._module._program.launch(
                self.name, arrays, scalars, generics, devices, self._module.autotune
            )
        except _tilec.RawError as e:
            raise _convert(e) from None
        # The kernel's `print` lines, in program order, on Python's stdout (so notebooks and
        # pytest capture them).
        for line in lines:
            print(line)
        if dropped:
            warnings.warn(
                f"W0106: {dropped} `print` line(s) dropped: the launch's debug buffer is full", RuntimeWarning, 2
            )
        out = tuple(values[m] for m in self._mut if values.get(m) is not None)
        return None if not out else out[0] if len(out) == 1 else out


class Module:
    """A compiled ``.tile`` program: its kernels are attributes (``m.potrf_batched``)."""

    def __init__(self, program, name, target):
        self._program = program
        self.name = name
        self.target = target
        self.autotune = False
        self.kernels = {s["name"]: Kernel(self, s) for s in program.kernels()}

    def __getattr__(self, name):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        program = self.__dict__.get("_program")
        if name.startswith("_") or program is None:
            raise AttributeError(name)
        # The driver's E0107, with the spelling suggestion every entry point gives.
        try:
            program.launch(name, [], [], [])
        except _tilec.RawError as e:
            raise _convert(e) from None
        raise AttributeError(name)

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __repr__(self):
        return f"<tilec module {self.name} on {self.target}: {', '.join(self.kernels)}>"


_programs = {}
_lock = threading.Lock()


def compile(
    source,
    *,
    target="cpu",
    device=None,
    backend=None,
    name=None,
    deny_warnings=False,
    autotune=False,
    prints=True,
    asserts=True,
):
    """Compiles a ``.tile`` program for ``target`` (``"cpu"``, ``"vulkan"`` or ``"cuda"``;
    ``device`` picks a GPU by index: by default the first, or for CUDA the device of the CUDA
    tensors passed, whose launches run on their device; ``backend`` is the CPU's code
    generator: by default LLVM where tilec was built with it (the first calls of an instance
    run Cranelift's code while LLVM compiles in the background, with the same results; later
    processes load LLVM's code from the compile cache), else Cranelift; ``"llvm"`` or
    ``"cranelift"`` picks one, as does the environment variable ``TILEC_CPU_BACKEND`` when
    ``backend`` is not given; ``deny_warnings=True`` makes every warning an error, as
    ``tilec --deny warnings``; ``autotune=True`` tunes a kernel with tuning candidates, ``const
    BM: i32 = 64 in [32, 64, 128]``, on its first call for each target, dtypes and extents
    (rounded up to powers of two), as ``tilec tune`` does, unless a tuning record exists or the
    call gives a tuned parameter; every call uses the recorded configuration either way);
    ``prints=False`` and ``asserts=False`` compile the kernels without their ``print`` calls and
    ``assert`` calls, which then cost nothing (``tilec --quiet-prints``, ``--no-asserts``). A
    kernel's ``print`` lines go to ``sys.stdout`` after each call, in program order; a failed
    ``assert`` raises :class:`TileAssertionError` (E0445).
    ``source`` is a path (``str`` ending in ``.tile`` or
    ``os.PathLike``) or the source text. Raises :class:`CompileError` with every diagnostic.
    Modules are cached by source hash, name and target."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and source.endswith(".tile")):
        path = os.fspath(source)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise _error("E0400", f"error[E0400]: cannot read `{path}`: {e}\n") from None
        name = name or path
    else:
        text = source
        name = name or "<string>.tile"
    if backend is None:
        backend = os.environ.get("TILEC_CPU_BACKEND") or None
    key = (
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
        name,
        target,
        device,
        backend,
        deny_warnings,
        autotune,
        prints,
        asserts,
    )
    with _lock:
        module = _programs.get(key)
    if module is not None:
        return module
    try:
        program = _tilec.Program(text, name, target, device, backend, deny_warnings, prints, asserts)
    except _tilec.RawError as e:
        raise _convert(e) from None
    module = Module(program, name, target)
    module.autotune = autotune
    with _lock:
        return _programs.setdefault(key, module)


from . import linalg  # noqa: E402  (uses `compile`)
