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


if __name__ == "__main__":
    unittest.main()
