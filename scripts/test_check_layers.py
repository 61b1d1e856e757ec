"""check_layers.py finds an include from a lower layer to a higher one, and only that."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).with_name("check_layers.py")


def run(files):
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            p = pathlib.Path(d, name)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        return subprocess.run([sys.executable, str(SCRIPT), d], capture_output=True, text=True)


class CheckLayers(unittest.TestCase):
    def test_an_include_downwards_passes(self):
        r = run({"plan/a.cpp": '#include "analysis/measure.hpp"\n#include "plan/b.hpp"\n'})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_include_upwards_fails_naming_file_and_line(self):
        r = run({"device/gpu.hpp": '#pragma once\n#include "plan/probe.hpp"\n'})
        self.assertEqual(r.returncode, 1)
        self.assertIn("gpu.hpp:2: layer 'device' includes 'plan/'", r.stdout)

    def test_tests_may_include_any_layer(self):
        r = run({"trace/csv_test.cpp": '#include "session/probe/probe.hpp"\n'})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_table_is_read_from_cmake_with_what_each_layer_links_in_turn(self):
        sys.path.insert(0, str(SCRIPT.parent))
        import check_layers
        allowed = check_layers.allowed_from_cmake(
            "regime_layer(a DIRS a PUBLIC x::y)\n"
            "regime_layer(b DIRS b PUBLIC regime_a PRIVATE regime_c)\n"
            "regime_layer(c DIRS c\n   PUBLIC regime_b)\n")
        self.assertEqual(allowed["a"], set())
        self.assertEqual(allowed["b"], {"a"})  # PRIVATE links are not includes
        self.assertEqual(allowed["c"], {"a", "b"})
        self.assertIn("session", check_layers.ALLOWED["cli"])

    def test_a_cli_file_including_below_session_fails_naming_file_include_and_rule(self):
        r = run({"cli/limit.cpp": '#include "cli/command.hpp"\n\n#include "device/uri.hpp"\n'})
        self.assertEqual(r.returncode, 1)
        self.assertIn('limit.cpp:3: includes "device/uri.hpp": a CLI file includes only cli/, '
                      'session/ and common/ headers', r.stdout)

    def test_a_cli_file_may_include_cli_session_and_common(self):
        r = run({"cli/limit.cpp": '#include "cli/command.hpp"\n#include "common/error.hpp"\n'
                                  '#include "session/node/devices.hpp"\n',
                 "cli/limit_test.cpp": '#include "device/uri.hpp"\n'})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_unknown_folder_fails(self):
        r = run({"misc/x.cpp": "int x;\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a known layer", r.stdout)

    def test_a_session_sub_folder_belongs_to_the_layer_whose_dirs_list_it(self):
        # scheduler (session/scheduler) links session; session does not link scheduler.
        ok = run({"session/scheduler/job.cpp": '#include "session/study/study.hpp"\n'})
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        up = run({"session/study/study.cpp": '#include "session/scheduler/job.hpp"\n'})
        self.assertEqual(up.returncode, 1)
        self.assertIn("layer 'session' includes 'scheduler/'", up.stdout)

    def test_a_folder_under_session_that_no_layer_lists_fails(self):
        r = run({"session/misc/x.cpp": "int x;\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("folder 'session/misc' is not a known layer", r.stdout)

    def test_a_step_and_its_orchestrator_including_each_other_fail(self):
        r = run({"session/study/study.cpp": '#include "session/study/study_steps.hpp"\n',
                 "session/study/study_steps.hpp": '#include "session/study/study.hpp"\n',
                 "session/study/study.hpp": "\n"})
        self.assertEqual(r.returncode, 1)
        self.assertIn("session/study/study: and session/study/study_steps include each other",
                      r.stdout)
        apart = run({"session/study/study.cpp": '#include "session/study/study_steps.hpp"\n',
                     "session/study/study_steps.hpp": '#include "session/study/study_types.hpp"\n',
                     "session/study/study.hpp": '#include "session/study/study_types.hpp"\n'})
        self.assertEqual(apart.returncode, 0, apart.stdout + apart.stderr)


if __name__ == "__main__":
    unittest.main()
