"""The example regime.toml the package ships (/usr/share/doc/regime/examples/regime.toml) is
accepted as a config file: every key is an option of its section (checked on any command), and
every section's values are accepted by its command, run on a simulated GPU.

Run by ctest (example_config) with REGIME_BINARY set; scripts/test-package.sh runs the installed
copy the same way.
"""

import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.environ.get("REGIME_EXAMPLE_CONFIG") or os.path.join(HERE, "examples", "regime.toml")
SIM = ["--device", "sim:h200", "--workload", "sim:resnet50"]


def sections(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r"^\[([\w.-]+)\]", f.read(), re.M)


class ExampleConfig(unittest.TestCase):
    def setUp(self):
        self.regime = os.environ.get("REGIME_BINARY")
        if not self.regime:
            self.skipTest("REGIME_BINARY is not set (ctest sets it)")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.db = os.path.join(self.tmp.name, "runs.sqlite")

    def run_regime(self, config, *args):
        env = dict(os.environ, REGIME_STATE_DIR=os.path.join(self.tmp.name, "state"),
                   REGIME_SYSTEM_STATE_DIR=os.path.join(self.tmp.name, "system"),
                   XDG_CONFIG_HOME=os.path.join(self.tmp.name, "no-user-config"))
        return subprocess.run([self.regime, "--config", config] + list(args), env=env,
                              cwd=self.tmp.name, capture_output=True, text=True, timeout=120)

    def assert_accepted(self, *args):
        result = self.run_regime(EXAMPLE, *args)
        self.assertEqual(result.returncode, 0, "%s\n%s%s" % (args, result.stdout, result.stderr))
        self.assertNotIn("config file", result.stderr)
        return result.stdout + result.stderr

    def test_it_sets_the_commands_an_operator_defaults(self):
        self.assertEqual(sections(EXAMPLE), ["probe", "sweep", "study", "recommend", "export"])

    def test_every_key_is_an_option_of_its_section(self):
        self.assertIn("sim:h200", self.assert_accepted("devices"))

    def test_a_mistyped_key_is_refused_the_control(self):
        with open(EXAMPLE, encoding="utf-8") as f:
            text = f.read()
        bad = os.path.join(self.tmp.name, "bad.toml")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(text.replace("\nstrategy =", "\nstrategi =", 1))
        result = self.run_regime(bad, "devices")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'sweep.strategi', which is no option", result.stderr)

    def test_each_sections_values_are_accepted_by_its_command(self):
        out = self.assert_accepted("probe", *SIM, "--db", self.db, "--quiet")
        self.assertIn("saved as run 1", out)
        out = self.assert_accepted("sweep", *SIM, "--db", self.db, "--quiet")
        self.assertIn("kept as sweep:1", out)
        self.assert_accepted("recommend", "--run", "sweep:1", "--db", self.db)
        out = self.assert_accepted("study", *SIM, "--db", self.db, "--quiet", "--out",
                                   os.path.join(self.tmp.name, "study"))
        self.assertIn("study.json", out)
        # The example's listen address is replaced on the command line: a test serves on loopback.
        out = self.assert_accepted("export", "--device", "sim:h200", "--seconds", "1",
                                   "--listen", "127.0.0.1:0")
        self.assertIn("sim:h200", out)


if __name__ == "__main__":
    unittest.main()
