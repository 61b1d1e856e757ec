"""The build backend of the regime-step package (PEP 517, PEP 660), standard library only.

pip builds a package with its backend's own requirements; setuptools' backend needs the `wheel`
package (setuptools before 70.1), which a fresh `python3 -m venv` lacks, and offline nothing can
fetch it. This backend needs nothing, so `pip install ./python` works offline with or without
--no-build-isolation. It packs regime_step/ and the metadata of pyproject.toml's [project]; the
version is regime_step.__version__.

With REGIME_WHEEL_LIBRARY=PATH (the build sets it: cmake/python.cmake) the wheel also carries
that libregime_monitor.so inside the package, so the in-process monitor works wherever the
wheel is installed. Such a wheel is tagged for the oldest glibc the library needs, read from its
symbol versions (py3-none-manylinux_2_34_x86_64: pip then refuses it with a clear message on an
older host instead of an ImportError later), when it needs nothing but glibc and libgcc_s (the
build links fmt and libstdc++ in: cmake/python.cmake); otherwise py3-none-linux_x86_64. Run as a
script, it builds that wheel into the folder given: `regime_step_build.py OUTDIR`.
"""

import base64
import hashlib
import io
import os
import re
import struct
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


# What a manylinux wheel may need besides itself (PEP 600): glibc's libraries and libgcc_s.
SYSTEM_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                    "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
SHT_DYNAMIC, SHT_GNU_VERNEED, DT_NEEDED = 6, 0x6FFFFFFE, 1


def elf_needs(path):
    """(the libraries a 64-bit little-endian ELF file needs, the highest GLIBC_x.y symbol version
    it needs as (x, y), or None): its DT_NEEDED entries and its version needs, as objdump -p
    shows them."""
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:6] != b"\x7fELF\x02\x01":
        raise ValueError("%s: not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQII", elf, shoff + i * shentsize) for i in range(shnum)]

    def string(link, offset):
        start = sections[link][4] + offset
        return elf[start:elf.index(b"\0", start)].decode()

    needed, glibc = [], None
    for _, kind, _, _, offset, size, link, _ in sections:
        if kind == SHT_DYNAMIC:
            for pos in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", elf, pos)
                if tag == DT_NEEDED:
                    needed.append(string(link, value))
        elif kind == SHT_GNU_VERNEED:
            entry = offset
            while True:  # Elf64_Verneed, each with its Elf64_Vernaux list
                _, count, _, aux, next_entry = struct.unpack_from("<HHIII", elf, entry)
                pos = entry + aux
                for _ in range(count):
                    _, _, _, name, next_aux = struct.unpack_from("<IHHII", elf, pos)
                    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", string(link, name))
                    if m:
                        glibc = max(glibc or (0, 0), (int(m.group(1)), int(m.group(2))))
                    pos += next_aux
                if not next_entry:
                    break
                entry += next_entry
    return needed, glibc


def _tag():
    library = _library()
    if library is None:
        return "py3-none-any"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    needed, glibc = elf_needs(library)
    if platform.startswith("linux_") and glibc and set(needed) <= SYSTEM_LIBRARIES:
        platform = "manylinux_%d_%d_%s" % (glibc + (platform[len("linux_"):],))
    return "py3-none-" + platform


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
        pattern = r'^([\w-]+)\s*=\s*(".*?"|\[.*?\]|\{.*?\})'
        for key, value in re.findall(pattern, section, re.M | re.S):
            items = re.findall(r'"(.*?)"', value)
            if value.startswith("{"):  # an inline table of strings: license = {text = "..."}
                project[key] = dict(re.findall(r'([\w-]+)\s*=\s*"(.*?)"', value))
            else:
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
    if "license" in project:
        lines.append("License: " + project["license"]["text"])
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    return "\n".join(lines) + "\n"


def _license_file():
    """The project's LICENSE: beside pyproject.toml in an sdist, one folder up in the source tree;
    None in a copy of python/ alone."""
    for path in (os.path.join(ROOT, "LICENSE"), os.path.join(os.path.dirname(ROOT), "LICENSE")):
        if os.path.isfile(path):
            return path
    return None


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
    if _license_file() is not None:
        with open(_license_file(), "rb") as f:
            contents.append((info + "/LICENSE", f.read()))
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
    if _license_file() is not None:
        members.append(("LICENSE", _license_file()))
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
