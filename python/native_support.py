"""What the native_test_*.py tests share: the variables ctest sets, and the fake NVML's."""

import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def needed_env(name):
    """The variable's value; the test is skipped where it is unset (outside ctest)."""
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest("%s is not set (ctest sets it)" % name)
    return value


def fake_nvml_env(tmp):
    """The environment that points NVML at the fake library, its state kept in `tmp`."""
    return {"REGIME_NVML_LIBRARY": needed_env("REGIME_FAKE_NVML"),
            "FAKE_NVML_CONFIG": os.path.join(ROOT, "tests/fake_nvml/example_config.json"),
            "FAKE_NVML_STATE": os.path.join(tmp, "nvml-state.json")}
