"""Every systemd unit Regime ships scores below 5 in `systemd-analyze security` (systemd's own
exposure scale: 0 safe, 10 unprotected) and keeps what its job needs: the restore and the agent
NVML's device nodes and CAP_SYS_ADMIN, the agent its socket folder, the exporter its port.

Run by ctest (systemd_units). `systemd-analyze security --offline=true FILE` reads the unit file
alone, so no running systemd is needed; skipped where systemd-analyze is absent (Debian: systemd,
which scripts/deps.sh installs).
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = sorted(f for f in os.listdir(HERE) if f.endswith(".service"))
LIMIT = 5.0
SCORE = re.compile(r"Overall exposure level for \S+: (\d+(?:\.\d+)?) ")


def exposure(path):
    """systemd-analyze's overall exposure of the unit file at `path`."""
    result = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", path],
                            capture_output=True, text=True, timeout=60)
    m = SCORE.search(result.stdout + result.stderr)
    if m is None:
        raise AssertionError("no exposure level from systemd-analyze for %s (exit %d):\n%s%s"
                             % (path, result.returncode, result.stdout, result.stderr))
    return float(m.group(1))


def settings(name):
    """The unit's [Service] settings: each key with the list of its values, in order."""
    out = {}
    section = None
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[Service]" and "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                out.setdefault(key.strip(), []).append(value.strip())
    return out


def words(unit, key):
    return " ".join(unit.get(key, [])).split()


class UnitSecurity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("systemd-analyze") is None:
            raise unittest.SkipTest("systemd-analyze is absent (Debian: systemd)")

    def test_the_units_are_the_three_shipped(self):
        self.assertEqual(UNITS, ["regime-export.service", "regime-restore.service",
                                 "regimed.service"])

    def test_every_unit_scores_below_five(self):
        for name in UNITS:
            with self.subTest(unit=name):
                self.assertLess(exposure(os.path.join(HERE, name)), LIMIT)

    def test_a_unit_without_its_hardening_scores_five_or_more(self):
        """The control: the same services with only what runs them score as systemd's unsafe
        ones do, so the check above can fail."""
        keep = ("Type", "ExecStart", "RemainAfterExit", "User", "Environment")
        with tempfile.TemporaryDirectory() as tmp:
            for name in UNITS:
                unit = settings(name)
                lines = ["[Service]"] + ["%s=%s" % (k, v) for k in keep for v in unit.get(k, [])]
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                with self.subTest(unit=name):
                    self.assertGreaterEqual(exposure(path), LIMIT)

    def test_every_unit_has_only_settings_systemd_knows(self):
        """A misspelt setting (ProtectSystm=) is ignored with a warning: `systemd-analyze
        verify` names it. The units' binaries are replaced by /bin/true, which verify can find
        where Regime is not installed."""
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name in UNITS + ["misspelt.service"]:
                with open(os.path.join(HERE, UNITS[0] if name == "misspelt.service" else name),
                          encoding="utf-8") as f:
                    text = re.sub(r"^ExecStart=/usr/bin/\S+", "ExecStart=/bin/true", f.read(),
                                  flags=re.M)
                if name == "misspelt.service":  # the control
                    text = text.replace("\nNoNewPrivileges=", "\nNoNewPrivilege=", 1)
                paths.append(os.path.join(tmp, name))
                with open(paths[-1], "w", encoding="utf-8") as f:
                    f.write(text)
            for path in paths:
                result = subprocess.run(["systemd-analyze", "verify", "--man=no", path],
                                        capture_output=True, text=True, timeout=60)
                with self.subTest(unit=os.path.basename(path)):
                    said = (result.stdout + result.stderr).strip()
                    if path.endswith("misspelt.service"):
                        self.assertIn("Unknown key 'NoNewPrivilege'", said)
                    else:
                        self.assertEqual((result.returncode, said), (0, ""))

    def assert_reaches_nvml(self, unit):
        self.assertEqual(unit.get("DevicePolicy"), ["closed"])
        allowed = " ".join(unit.get("DeviceAllow", []))
        for device in ("nvidiactl", "char-nvidia-frontend", "char-nvidia-uvm"):
            self.assertIn(device, allowed)
        self.assertNotIn("yes", unit.get("PrivateDevices", []))

    def test_the_restore_keeps_what_it_needs(self):
        unit = settings("regime-restore.service")
        self.assertEqual(unit["ExecStart"], ["/usr/bin/regime restore"])
        self.assertEqual(unit.get("User"), ["root"])
        self.assertIn("CAP_SYS_ADMIN", words(unit, "CapabilityBoundingSet"))
        self.assert_reaches_nvml(unit)
        # The journal (/var/lib/regime), the locks (/run/regime) and a job's store wherever it
        # lies are writable: no read-only /var or /run.
        self.assertNotIn("strict", unit.get("ProtectSystem", []))
        for key in ("ReadOnlyPaths", "InaccessiblePaths"):
            self.assertNotRegex(" ".join(unit.get(key, [])), r"/(var|run)\b")
        # A job's store may be a MariaDB server.
        self.assertIn("AF_INET", words(unit, "RestrictAddressFamilies"))
        self.assertNotIn("yes", unit.get("PrivateNetwork", []))

    def test_the_agent_keeps_what_it_needs(self):
        unit = settings("regimed.service")
        self.assertIn("CAP_SYS_ADMIN", words(unit, "CapabilityBoundingSet"))
        self.assert_reaches_nvml(unit)
        self.assertIn("/run/regime", words(unit, "ReadWritePaths"))
        self.assertIn("/var/lib/regime", words(unit, "ReadWritePaths"))
        self.assertIn("AF_UNIX", words(unit, "RestrictAddressFamilies"))

    def test_the_exporter_keeps_its_port(self):
        unit = settings("regime-export.service")
        self.assertRegex(unit["ExecStart"][0], r"--listen \S+:\d+")
        self.assertIn("AF_INET", words(unit, "RestrictAddressFamilies"))
        self.assertNotIn("yes", unit.get("PrivateNetwork", []))
        self.assertNotIn("any", " ".join(unit.get("IPAddressDeny", [])))
        self.assertEqual(words(unit, "CapabilityBoundingSet"), [])  # a port above 1024: none


if __name__ == "__main__":
    unittest.main()
