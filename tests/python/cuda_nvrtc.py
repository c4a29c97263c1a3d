"""NVRTC through ctypes, without CuPy or a GPU: compiles the CUDA header to PTX the
way ``cupy.RawModule`` does (same source, options and name expressions), so the
run-time compilation path is checked on machines without a device."""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib.util
import os


def find_nvrtc() -> str | None:
    """A libnvrtc: the nvidia-cuda-nvrtc wheel's, else the system's, else None."""
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    for root in roots:
        hits = sorted(glob.glob(os.path.join(root, "cuda_nvrtc", "lib", "libnvrtc.so*")))
        hits = [h for h in hits if "builtins" not in h and ".alt." not in h]
        if hits:
            return hits[0]
    for pattern in ("/usr/local/cuda*/lib64/libnvrtc.so*", "/usr/local/cuda*/targets/*/lib/libnvrtc.so*"):
        hits = sorted(h for h in glob.glob(pattern) if "builtins" not in h)
        if hits:
            return hits[0]
    return ctypes.util.find_library("nvrtc")


def compile_to_ptx(library: str, source: str, options: list[str], names: list[str]) -> tuple[str, dict[str, str]]:
    """(PTX, {name expression: lowered name}); RuntimeError with NVRTC's log on failure."""
    nvrtc = ctypes.CDLL(library)
    prog = ctypes.c_void_p()
    check = _checker(nvrtc)
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel_sums.cuh", 0, None, None))
    try:
        for name in names:
            check(nvrtc.nvrtcAddNameExpression(prog, name.encode()))
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        status = nvrtc.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        check(nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size)))
        log = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        if status != 0:
            raise RuntimeError(f"NVRTC failed ({status}):\n{log.value.decode(errors='replace')}")
        check(nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size)))
        ptx = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetPTX(prog, ptx))
        lowered = {}
        for name in names:
            out = ctypes.c_char_p()
            check(nvrtc.nvrtcGetLoweredName(prog, name.encode(), ctypes.byref(out)))
            lowered[name] = out.value.decode()
        return ptx.value.decode(), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))


def _checker(nvrtc: ctypes.CDLL):
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int) -> None:
        if status != 0:
            raise RuntimeError(f"NVRTC: {nvrtc.nvrtcGetErrorString(status).decode()}")

    return check
