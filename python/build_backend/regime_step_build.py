"""The build backend of the regime-step package (PEP 517, PEP 660), standard library only.

pip builds a package with its backend's own requirements; setuptools' backend needs the `wheel`
package (setuptools before 70.1), which a fresh `python3 -m venv` lacks, and offline nothing can
fetch it. This backend needs nothing, so `pip install ./python` works offline with or without
--no-build-isolation. It packs regime_step/ and the metadata of pyproject.toml's [project]; the
version is regime_step.__version__.

With REGIME_WHEEL_LIBRARY=PATH (the build sets it: cmake/python.cmake) the wheel also carries
that libregime_monitor.so inside the package, so the in-process monitor works wherever the
wheel is installed; such a wheel is tagged for this platform (py3-none-linux_x86_64). Run as a
script, it builds that wheel into the folder given: `regime_step_build.py OUTDIR`.
"""

import base64
import hashlib
import io
import os
import re
import sys
import sysconfig
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "regime_step"
LIBRARY_ENV = "REGIME_WHEEL_LIBRARY"
LIBRARY_NAME = "libregime_monitor.so"


def _library():
    """The monitor library to bundle, or None: pure Python."""
    path = os.environ.get(LIBRARY_ENV)
    if not path:
        return None
    if not os.path.isfile(path):
        raise FileNotFoundError("%s=%s: no such file (the libregime_monitor.so to bundle)"
                                % (LIBRARY_ENV, path))
    return path


def _tag():
    if _library() is None:
        return "py3-none-any"
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _project():
    """pyproject.toml's [project] strings and lists: tomllib where there is one (3.11+)."""
    path = os.path.join(ROOT, "pyproject.toml")
    try:
        import tomllib
    except ImportError:  # 3.8-3.10: the few `key = "value"` / `key = [...]` lines it has
        with open(path, encoding="utf-8") as f:
            text = f.read()
        section = text.split("[project]", 1)[1].split("\n[", 1)[0]
        project = {}
        for key, value in re.findall(r'^([\w-]+)\s*=\s*(".*?"|\[.*?\])', section, re.M | re.S):
            items = re.findall(r'"(.*?)"', value)
            project[key] = items if value.startswith("[") else items[0]
        return project
    with open(path, "rb") as f:
        return tomllib.load(f)["project"]


def _version():
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _metadata():
    project = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + _version()]
    if "description" in project:
        lines.append("Summary: " + project["description"])
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    return "\n".join(lines) + "\n"


def _dist_name():
    return "%s-%s" % (PACKAGE, _version())


def _package_files():
    """(archive name, path) of every file of the package, caches left out, in a stable order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                path = os.path.join(dirpath, name)
                out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(wheel_directory, contents):
    """A wheel of `contents` ([(archive name, bytes)]) plus its dist-info; returns its name."""
    info = _dist_name() + ".dist-info"
    contents = list(contents) + [
        (info + "/METADATA", _metadata().encode()),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: regime_step_build\n"
                           "Root-Is-Purelib: %s\nTag: %s\n"
                           % ("true" if _library() is None else "false", _tag())).encode()),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(name, data) for name, data in contents] + [info + "/RECORD,,"]
    contents.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "%s-%s.whl" % (_dist_name(), _tag())
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as whl:
        for name, data in contents:
            entry = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            entry.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            whl.writestr(entry, data)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for name, path in _package_files():
        if os.path.basename(path) == LIBRARY_NAME:
            continue  # a copy left in the source folder: only the one asked for is bundled
        with open(path, "rb") as f:
            files.append((name, f.read()))
    library = _library()
    if library is not None:
        with open(library, "rb") as f:
            files.append((PACKAGE + "/" + LIBRARY_NAME, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth line that puts this source folder on sys.path."""
    return _write_wheel(wheel_directory, [(PACKAGE + ".pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = _dist_name()
    filename = base + ".tar.gz"
    members = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
               ("build_backend/regime_step_build.py", os.path.abspath(__file__))]
    members += _package_files()
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, path in members:
            tar.add(path, arcname=base + "/" + name, recursive=False)
        pkg_info = _metadata().encode()
        entry = tarfile.TarInfo(base + "/PKG-INFO")
        entry.size = len(pkg_info)
        tar.addfile(entry, io.BytesIO(pkg_info))
    return filename


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: regime_step_build.py OUTDIR  (REGIME_WHEEL_LIBRARY=PATH bundles the "
                 "monitor library)")
    print(os.path.join(sys.argv[1], build_wheel(sys.argv[1])))
