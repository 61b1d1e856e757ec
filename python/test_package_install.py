"""The helper installs as a package, offline: `pip install ./python` into a fresh virtual
environment (`python3 -m venv`, with the pip and setuptools it brings and no `wheel`), with or
without --no-build-isolation, then `import regime_step` from outside the source tree.

Run by ctest with the other Python tests. It uses Debian's interpreter (/usr/bin/python3, or
$REGIME_PYTHON). The package's build backend (build_backend/regime_step_build.py) is standard
library only, so pip has nothing to fetch.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.environ.get("REGIME_PYTHON") or "/usr/bin/python3"


def cmake_project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(regime VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else None


def clean_env():
    """The caller's environment without PIP_* settings; pip does not look for a newer pip."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class TestPackageInstall(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def source_copy(self):
        """A copy of the source, so the build's scratch files stay out of the checkout and
        parallel test runs do not meet in python/build."""
        src = os.path.join(self.tmp.name, "src")
        shutil.copytree(HERE, src, ignore=shutil.ignore_patterns("__pycache__", "build",
                                                                  "*.egg-info"))
        return src

    def installed_file_version(self, vpython, env):
        return self.run_ok([vpython, "-c",
                            "import regime_step; print(regime_step.__file__); "
                            "print(regime_step.__version__)"],
                           cwd=self.tmp.name, env=env).split()

    def test_pip_installs_it_offline_into_a_fresh_venv(self):
        """As a user would: `python3 -m venv`, then `pip install ./python`, no network."""
        if not os.access(PYTHON, os.X_OK):
            self.fail("no interpreter at %s: run scripts/deps.sh (or set REGIME_PYTHON)" % PYTHON)
        venv = os.path.join(self.tmp.name, "fresh")
        made = subprocess.run([PYTHON, "-m", "venv", venv], capture_output=True, text=True)
        if made.returncode != 0 and ("ensurepip" in made.stdout + made.stderr
                                     or "No module named venv" in made.stderr):
            self.skipTest("this python3 makes no venv with pip (Debian: python3-venv)")
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        vpython = os.path.join(venv, "bin", "python")
        env = clean_env()
        # The venv has no `wheel`: what setuptools' own backend needed, and could not fetch.
        self.assertNotEqual(subprocess.run([vpython, "-c", "import wheel"],
                                           capture_output=True).returncode, 0)
        src = self.source_copy()
        for flags in ([], ["--no-build-isolation"]):
            self.run_ok([vpython, "-m", "pip", "install", "--no-index", "--force-reinstall"]
                        + flags + [src], env=env, cwd=self.tmp.name)
            where, version = self.installed_file_version(vpython, env)
            self.assertTrue(os.path.realpath(where).startswith(os.path.realpath(venv) + os.sep),
                            where)
            self.assertEqual(version, cmake_project_version())
        # An editable install points at the source folder.
        self.run_ok([vpython, "-m", "pip", "install", "--no-index", "-e", src], env=env,
                    cwd=self.tmp.name)
        where, _ = self.installed_file_version(vpython, env)
        self.assertEqual(os.path.realpath(where),
                         os.path.realpath(os.path.join(src, "regime_step", "__init__.py")))

    def run_ok(self, argv, **kw):
        result = subprocess.run(argv, capture_output=True, text=True, **kw)
        self.assertEqual(result.returncode, 0,
                         "%s failed (%d):\n%s%s" % (" ".join(argv), result.returncode,
                                                    result.stdout, result.stderr))
        return result.stdout

    def test_pip_installs_it_offline_into_a_venv(self):
        if not os.access(PYTHON, os.X_OK):
            self.fail("no interpreter at %s: run scripts/deps.sh (or set REGIME_PYTHON)" % PYTHON)
        src = self.source_copy()
        venv = os.path.join(self.tmp.name, "venv")
        # Without a pip of its own (ensurepip takes seconds): the system's pip, seen through
        # --system-site-packages, installs into the venv all the same.
        self.run_ok([PYTHON, "-m", "venv", "--system-site-packages", "--without-pip", venv])
        vpython = os.path.join(venv, "bin", "python")
        # --no-index: nothing may come from the network; PIP_* settings of the caller are ignored.
        env = clean_env()
        self.run_ok([vpython, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                     "--no-deps", src], env=env, cwd=self.tmp.name)
        # Imported from outside the source tree, it is the installed copy.
        where = self.run_ok([vpython, "-c",
                             "import regime_step, sys; print(regime_step.__file__); "
                             "print(regime_step.__version__); "
                             "print(regime_step.enabled())"],
                            cwd=self.tmp.name, env=env).split()
        self.assertTrue(os.path.realpath(where[0]).startswith(os.path.realpath(venv) + os.sep),
                        where[0])
        self.assertEqual(where[1], cmake_project_version())
        self.assertEqual(where[2], "False")  # no REGIME_STEP_SOCKET: a no-op, as documented
        shown = self.run_ok([vpython, "-m", "pip", "show", "regime-step"], env=env)
        self.assertIn("Version: %s" % cmake_project_version(), shown)
        # Only the package is installed, not the tests beside it.
        listed = self.run_ok([vpython, "-m", "pip", "show", "-f", "regime-step"], env=env)
        self.assertNotIn("test_", listed)


# The libraries a host without Debian's libfmt (and without this GCC's libstdc++) lacks.
HIDDEN = ("libfmt.so", "libstdc++.so")
# What the wheel's library may need: glibc's libraries and libgcc_s, present on every glibc host.
SYSTEM_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                    "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}

# Run in a mount namespace where each file named after `--` is an empty file: the wheel's
# library must still load and run. The check that libfmt and libstdc++ cannot load there is the
# control that the hiding works.
WITHOUT_LIBS = """
import ctypes, os, sys
for name in ("libfmt.so.9", "libstdc++.so.6"):
    try:
        ctypes.CDLL(name)
        sys.exit("%s still loads: not hidden" % name)
    except OSError:
        pass
from regime_step import Monitor, MonitorError
import regime_step.monitor as rm
print(rm.library_path())
try:
    Monitor("nvml:0")
    sys.exit("Monitor opened with no NVML library")
except MonitorError as e:
    print("refused:", e)
"""


def wheel_path():
    """The wheel the build made ($REGIME_WHEEL_DIR, set by ctest's python_wheel test)."""
    folder = os.environ.get("REGIME_WHEEL_DIR")
    if not folder:
        raise unittest.SkipTest("REGIME_WHEEL_DIR is not set (ctest's python_wheel sets it)")
    wheels = sorted(f for f in os.listdir(folder) if f.endswith(".whl"))
    if len(wheels) != 1:
        raise AssertionError("expected one wheel in %s, found %s" % (folder, wheels))
    return os.path.join(folder, wheels[0])


def system_copies(prefixes):
    """The real files of the host's libraries whose names start with one of `prefixes`."""
    found = set()
    for folder in ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib"):
        for dirpath, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(dirpath, name)
                if name.startswith(prefixes) and ".so" in name and os.path.isfile(path):
                    found.add(os.path.realpath(path))
    return sorted(found)


class SelfContainedWheel(unittest.TestCase):
    """The wheel the build ships needs nothing but glibc and libgcc_s: it says which glibc it
    needs in its tag, carries its licence, and installed without pip into a fresh venv it loads
    and runs where libfmt and libstdc++ are absent."""

    def setUp(self):
        self.wheel = wheel_path()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.unpacked = os.path.join(self.tmp.name, "unpacked")
        with zipfile.ZipFile(self.wheel) as whl:
            whl.extractall(self.unpacked)
        self.library = os.path.join(self.unpacked, "regime_step", "libregime_monitor.so")

    def tool(self, *argv):
        if shutil.which(argv[0]) is None:
            self.skipTest("%s is absent (Debian: binutils)" % argv[0])
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def test_it_needs_only_glibc_and_libgcc_s(self):
        needed = re.findall(r"^\s*NEEDED\s+(\S+)", self.tool("objdump", "-p", self.library), re.M)
        self.assertTrue(needed, "objdump -p shows no NEEDED entry")
        self.assertLessEqual(set(needed), SYSTEM_LIBRARIES, needed)

    def test_its_tag_names_the_newest_glibc_symbol_it_needs(self):
        versions = re.findall(r"\bGLIBC_(\d+)\.(\d+)", self.tool("objdump", "-T", self.library))
        newest = max((int(a), int(b)) for a, b in versions)
        self.assertIn("-py3-none-manylinux_%d_%d_x86_64.whl" % newest,
                      os.path.basename(self.wheel))

    def test_it_carries_the_projects_licence(self):
        info = [d for d in os.listdir(self.unpacked) if d.endswith(".dist-info")]
        self.assertEqual(len(info), 1, info)
        with open(os.path.join(self.unpacked, info[0], "METADATA"), encoding="utf-8") as f:
            metadata = f.read()
        self.assertIn("\nLicense: Apache-2.0\n", metadata)
        self.assertIn("Classifier: License :: OSI Approved :: Apache Software License", metadata)
        with open(os.path.join(ROOT, "LICENSE"), "rb") as a, \
                open(os.path.join(self.unpacked, info[0], "LICENSE"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_it_runs_from_a_fresh_venv_where_libfmt_and_libstdcxx_are_absent(self):
        if shutil.which("unshare") is None:
            self.skipTest("unshare is absent (Debian: util-linux)")
        venv = os.path.join(self.tmp.name, "fresh")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
        vpython = os.path.join(venv, "bin", "python")
        site = subprocess.run([vpython, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
        with zipfile.ZipFile(self.wheel) as whl:  # what pip does with a wheel, without pip
            whl.extractall(site)
        os.chmod(os.path.join(site, "regime_step", "libregime_monitor.so"), 0o755)
        hidden = system_copies(HIDDEN)
        self.assertTrue(any("libfmt" in p for p in hidden), "no libfmt here to hide: %s" % hidden)
        userns = [] if os.geteuid() == 0 else ["--map-root-user"]
        hide = 'for f in "$@"; do [ "$f" = -- ] && break; mount --bind /dev/null "$f" || exit 9; ' \
               'shift; done; shift; exec "$@"'
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "REGIME_"))}
        env["REGIME_NVML_LIBRARY"] = os.path.join(self.tmp.name, "no", "libnvidia-ml.so.1")
        result = subprocess.run(["unshare", "--mount"] + userns + ["sh", "-c", hide, "sh"]
                                + hidden + ["--", vpython, "-c", WITHOUT_LIBS],
                                capture_output=True, text=True, env=env, cwd=self.tmp.name,
                                timeout=60)
        if result.returncode == 9 or "unshare failed" in result.stderr:
            self.skipTest("no mount namespace here: %s" % result.stderr.strip())
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        where, refused = result.stdout.splitlines()
        self.assertEqual(os.path.realpath(where),
                         os.path.realpath(os.path.join(site, "regime_step",
                                                       "libregime_monitor.so")))
        self.assertIn("libnvidia-ml.so.1", refused)


if __name__ == "__main__":
    unittest.main()
