#!/usr/bin/env python3
"""CUDA tensors from Python on a GPU: tilec's ``potrf_batched`` on PyTorch CUDA tensors (and
CuPy arrays where CuPy imports), in place on the device, checked against float64 NumPy.

For each case, 256 SPD 92x92 float32 matrices are built on the GPU, copied to the host once
for the reference (``np.linalg.cholesky`` in float64 of the same float32 values), and
factored by ``tilec.linalg.on("cuda").potrf_batched`` on the tensor itself. A case passes when
the call returns the same tensor object, the tensor is still on its CUDA device at the same
address (written in place, no copy), and the lower triangle is within ``tol`` of the reference
(max |L - ref| / max(max |ref|, 1)). The cases:

  torch-cuda         a torch tensor made on the default stream (``__cuda_array_interface__``);
  torch-cuda-stream  the same made and factored inside ``torch.cuda.stream(side)``: tilec
                     launches on the tensor's current stream, after the work that made it;
  torch-cuda-dlpack  the tensor behind a wrapper that exposes DLPack only (as bfloat16 tensors
                     must), read through ``__dlpack__(stream=1)``;
  cupy-cuda          a CuPy array (``__cuda_array_interface__`` version 3 with its stream).

Each case emits one record through ``emit``: ``dict(part=CASE, ok=True/False, max_rel_err,
ms, ...)``, or ``ok=None`` with the ``reason`` where it cannot run (no torch or CuPy, no CUDA
device): nothing here raises. tilec must be importable (the bundle's ``python/`` on
PYTHONPATH, or a package built with ``tools/python.sh --ptx``); where a GPU is there and tilec
is not, or was built without the PTX backend, the cases fail.

    python3 tools/gpu_torch_check.py [--batch 256] [--n 92] [--tol 2e-4]

prints the records as JSON lines; exit status 1 when a case failed. tools/gpu_check.py runs it in a
process of its own (its part ``python``); :func:`check_torch_cuda` is the same from Python.
"""
import json
import sys
import time

import numpy as np


def _rel_err(got, ref):
    """max |tril(got) - ref| / max(max |ref|, 1), in float64."""
    got = np.tril(np.asarray(got, np.float64))
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1.0))


def _factor(a, host, ptr):
    """Factors CUDA array ``a`` in place with tilec: ``host`` is a float64 copy of its input,
    ``ptr()`` its device address. Returns what the call returned, the float64 reference, the
    address before the call and the call's wall time in milliseconds."""
    import tilec

    ref = np.linalg.cholesky(host)
    before = ptr()
    t0 = time.perf_counter()
    out = tilec.linalg.on("cuda").potrf_batched(a, eps=1e-6)
    ms = (time.perf_counter() - t0) * 1e3
    return out, ref, before, ms


def _checked(out, a, ref, got, before, after, on_device, ms, tol):
    """The record of a factorization: ``out`` returned for ``a``, ``got`` its values on the
    host, its address before and after, whether it stayed on its device."""
    err = _rel_err(got, ref)
    same = out is a
    ok = bool(same and on_device and before == after and err <= tol)
    rec = dict(ok=ok, max_rel_err=err, tol=tol, ms=round(ms, 3), same_object=same, on_device=on_device,
               in_place=before == after)
    if not ok:
        rec["error"] = "; ".join(
            why
            for why, bad in (
                ("the call did not return the tensor it was given", not same),
                ("the tensor left its CUDA device", not on_device),
                ("the tensor's memory moved (a copy, not in place)", before != after),
                (f"max relative error {err:.3g} above {tol:g}", err > tol),
            )
            if bad
        )
    return rec


class _DlpackOnly:
    """A CUDA tensor seen through DLPack only."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kwargs):
        return self._t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def _torch_case(torch, batch, n, tol, stream, dlpack):
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev).manual_seed(0)

    def run():
        m = torch.randn(batch, n, n, device=dev, dtype=torch.float32, generator=gen)
        a = m @ m.transpose(1, 2) / n + torch.eye(n, device=dev, dtype=torch.float32)
        host = a.double().cpu().numpy()  # the reference's input (a synchronizing copy)
        # More work on the stream after the copy, so that tilec's launch must follow it: the
        # same matrices again, rebuilt in place.
        a.copy_(m @ m.transpose(1, 2) / n + torch.eye(n, device=dev, dtype=torch.float32))
        arg = _DlpackOnly(a) if dlpack else a
        out, ref, before, ms = _factor(arg, host, a.data_ptr)
        return out, arg, a, ref, before, ms

    if stream:
        side = torch.cuda.Stream(device=dev)
        with torch.cuda.stream(side):
            out, arg, a, ref, before, ms = run()
            got = a.cpu().numpy()
    else:
        out, arg, a, ref, before, ms = run()
        got = a.cpu().numpy()
    on_device = bool(a.is_cuda and a.device == dev)
    rec = _checked(out, arg, ref, got, before, a.data_ptr(), on_device, ms, tol)
    rec.update(batch=batch, n=n, dtype="float32", device=torch.cuda.get_device_name(dev), torch=torch.__version__)
    return rec


def _cupy_case(cp, batch, n, tol):
    rs = cp.random.RandomState(0)
    m = rs.standard_normal((batch, n, n), dtype=cp.float32)
    a = m @ m.transpose(0, 2, 1) / n + cp.eye(n, dtype=cp.float32)
    host = cp.asnumpy(a).astype(np.float64)
    out, ref, before, ms = _factor(a, host, lambda: a.data.ptr)
    got = cp.asnumpy(a)
    on_device = isinstance(a, cp.ndarray) and a.device.id == 0
    rec = _checked(out, a, ref, got, before, a.data.ptr, on_device, ms, tol)
    rec.update(batch=batch, n=n, dtype="float32", cupy=cp.__version__)
    return rec


def _torch():
    """torch with a CUDA device, or the reason there is none."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, f"torch does not import: {type(e).__name__}: {e}"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} sees no CUDA device"
    return torch, None


def _cupy():
    """CuPy with a CUDA device, or the reason there is none."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001
        return None, f"cupy does not import: {type(e).__name__}: {e}"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "cupy sees no CUDA device"
    except Exception as e:  # noqa: BLE001
        return None, f"cupy sees no CUDA device: {type(e).__name__}: {e}"
    return cupy, None


def check_torch_cuda(emit, tol=2e-4, batch=256, n=92):
    """Runs every case (see the module docstring), emitting one record per case through
    ``emit(dict(part=CASE, ok=..., ...))``; ``tol`` is the largest relative error allowed.
    Returns False when a case failed, else True (cases that could not run, with ``ok=None``
    and the reason, do not fail). Never raises."""
    ok = True

    def case(part, fn):
        nonlocal ok
        try:
            rec = fn()
        except Exception as e:  # noqa: BLE001  (a tilec error included: E0505 without the PTX backend)
            rec = dict(ok=False, error=f"{type(e).__name__}: {e}"[:800])
        rec = dict(part=part, **rec)
        try:
            emit(rec)
        except Exception as e:  # noqa: BLE001
            print(f"gpu_torch_check: emit failed: {e}", file=sys.stderr)
        ok = ok and rec.get("ok") is not False

    torch, why = _torch()
    for part, stream, dlpack in (
        ("torch-cuda", False, False),
        ("torch-cuda-stream", True, False),
        ("torch-cuda-dlpack", False, True),
    ):
        if torch is None:
            case(part, lambda: dict(ok=None, reason=why))
        else:
            case(part, lambda s=stream, d=dlpack: _torch_case(torch, batch, n, tol, s, d))
    cp, why = _cupy()
    case("cupy-cuda", (lambda: dict(ok=None, reason=why)) if cp is None else (lambda: _cupy_case(cp, batch, n, tol)))
    return ok


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--n", type=int, default=92)
    p.add_argument("--tol", type=float, default=2e-4)
    args = p.parse_args(argv)
    ok = check_torch_cuda(lambda rec: print(json.dumps(rec), flush=True), args.tol, args.batch, args.n)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
