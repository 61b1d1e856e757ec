"""NVML through ctypes for the bench scripts that run on a GPU machine (what pynvml does, without
pynvml): the library by its plain name, initialised, and one GPU's handle."""
import ctypes


def open_gpu(index):
    """(the NVML library, the handle of GPU `index`); exits with a plain message on failure."""
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        raise SystemExit("nvmlInit failed")
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
        raise SystemExit("no GPU %d" % index)
    return nvml, handle
