"""The documentation test's own parts: how blocks and markers are read, how output is compared,
and that a block's commands see $? and PIPESTATUS as a shell session would."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_commands_test as dt  # noqa: E402

PAGE = """Text.

<!-- doc-test: exit 2 -->
<!-- doc-test: setup echo hi > f -->
```
$ regime classify --trace x.csv \\
    --json
regime: not found
$ echo $?
2
```

```text
regime probe --device D [--seconds S]
```

```sh
regime devices   # list
# a comment
regime limit show --device nvml:0
```
"""


class DocCommandsTest(unittest.TestCase):
    def blocks(self):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(PAGE)
        self.addCleanup(os.unlink, f.name)
        return dt.find_blocks(f.name)

    def test_a_console_block_has_its_prompts_continuations_output_and_markers(self):
        b = self.blocks()[0]
        self.assertTrue(dt.parse_commands(b))
        self.assertEqual(b.markers, ["exit 2", "setup echo hi > f"])
        self.assertEqual([c for c, _ in b.commands],
                         ["regime classify --trace x.csv \\\n    --json", "echo $?"])
        self.assertEqual(b.commands[0][1], ["regime: not found"])
        kinds = dt.parse_markers(b)
        self.assertEqual(kinds["exit"], [2])
        self.assertEqual(kinds["setup"], ["echo hi > f"])

    def test_a_here_document_belongs_to_its_command(self):
        b = dt.Block("page.md", 1, "", ["$ cat <<'SQL'", "SELECT 1;", "SQL", "SELECT 1;", "$ true"], [])
        self.assertTrue(dt.parse_commands(b))
        self.assertEqual(b.commands[0], ("cat <<'SQL'\nSELECT 1;\nSQL", ["SELECT 1;"]))
        self.assertEqual(b.commands[1], ("true", []))

    def test_a_text_block_is_not_run_and_a_sh_block_is_one_command_a_line(self):
        text, sh = self.blocks()[1:]
        self.assertFalse(dt.parse_commands(text))
        self.assertTrue(dt.parse_commands(sh))
        self.assertEqual([c for c, _ in sh.commands],
                         ["regime devices   # list", "regime limit show --device nvml:0"])

    def test_a_skip_without_a_reason_and_an_unknown_marker_are_refused(self):
        b = self.blocks()[0]
        b.markers = ["skip"]
        self.assertRaises(ValueError, dt.parse_markers, b)
        b.markers = ["skpi (typo)"]
        self.assertRaises(ValueError, dt.parse_markers, b)

    def test_numbers_and_paths_are_masked_but_words_are_not(self):
        self.assertEqual(dt.mask("  energy per step   34.31 J  [34.11, 34.44] in /tmp/a/b.csv,"),
                         dt.mask("energy per step 30.1 J [3, 4.0] in ~/x.csv"))
        self.assertNotEqual(dt.mask("regime: headroom (confidence 0.84)"),
                            dt.mask("regime: cap-bound (confidence 0.84)"))
        self.assertEqual(dt.key_lines(["a", "", "  ...", "[exit 4]", "b"]), ["a", "b"])

    def test_a_changed_decision_figure_fails_and_noise_within_the_tolerance_does_not(self):
        tol = dict(dt.DEFAULT_TOLERANCE)
        shown = "  unconstrained optimum: 280 W (energy per step -28.1%, time per step +46.3%)"
        self.assertFalse(dt.figures_agree(
            shown, "  unconstrained optimum: 420 W (energy per step -16.8%, time per step +15.0%)",
            tol))
        self.assertTrue(dt.figures_agree(
            shown, "  unconstrained optimum: 280.0 W (energy per step -28.14%, time per step +46.3%)",
            tol))
        # A percentage 0.8 points off fails by default and passes under a block's wider tolerance.
        self.assertFalse(dt.figures_agree("drift: +0.4%", "drift: -0.4%", tol))
        self.assertTrue(dt.figures_agree("drift: +0.4%", "drift: -0.4%", dict(tol, pct=3)))
        self.assertFalse(dt.figures_agree("regime: headroom (confidence 1.00)",
                                          "regime: headroom (confidence 0.83)", tol))
        # Numbers that are not decision figures stay masked: joules, steps, seconds.
        self.assertTrue(dt.figures_agree("energy 34.31 J, 18 steps, 5.0 s",
                                         "energy 30.10 J, 19 steps, 5.2 s", tol))

    def test_a_block_whose_figure_changed_is_a_problem_naming_both_lines(self):
        b = dt.Block("page.md", 1, "", [], [])
        b.commands = [("echo 'decision: 420 W (energy per step -16.8%)'",
                       ["decision: 280 W (energy per step -28.1%)"])]
        env = dict(os.environ, DOC_TEST_WORK=tempfile.gettempdir())
        kinds = dt.parse_markers(b)
        out, timed_out, _ = dt.run_block(b, kinds, env)
        problems = dt.check_block(b, kinds, out, timed_out)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("a figure changed", problems[0])
        self.assertIn("420 W", problems[0])

    def test_the_tolerance_marker_is_read_and_checked(self):
        b = dt.Block("page.md", 1, "", [], ["tolerance W=2% pct=3 (real time)"])
        self.assertEqual(dt.parse_markers(b)["tolerance"], {"W": 0.02, "pct": 3.0, "conf": 0.02})
        b.markers = ["tolerance pct=3"]  # no reason
        self.assertRaises(ValueError, dt.parse_markers, b)
        b.markers = ["tolerance joules=3 (why)"]
        self.assertRaises(ValueError, dt.parse_markers, b)

    def test_an_indented_block_of_commands_is_found_but_a_list_continuation_is_not(self):
        page = ("Run it:\n\n    $ regime probe --device sim:t4\n    regime: headroom\n\n"
                "- a list item\n\n    regime sweep --device sim:t4\n\nText.\n\n"
                "```\n    regime inside a fence\n```\n")
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(page)
        self.addCleanup(os.unlink, f.name)
        found = dt.indented_commands(f.name)
        self.assertEqual(len(found), 1, found)
        self.assertIn(":3: an indented block of commands", found[0])

    def test_commands_see_the_status_and_pipestatus_of_the_one_before(self):
        b = dt.Block("page.md", 1, "", [], [])
        b.commands = [("(exit 3)", []), ("echo $?", ["3"]),
                      ("(exit 5) | true", []), ("echo ${PIPESTATUS[0]}", ["5"]),
                      ("echo wrong", ["right"])]
        env = dict(os.environ, DOC_TEST_WORK=tempfile.gettempdir())
        kinds = dict(dt.parse_markers(dt.Block("page.md", 1, "", [], [])))
        out, timed_out, _ = dt.run_block(b, kinds, env)
        problems = dt.check_block(b, kinds, out, timed_out)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("`echo wrong`: 1 of 1 shown lines not in the output", problems[0])


if __name__ == "__main__":
    unittest.main()
