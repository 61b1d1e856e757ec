"""long_functions.py measures every function of a file, after a digit separator too."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).with_name("long_functions.py")
sys.path.insert(0, str(SCRIPT.parent))
import long_functions  # noqa: E402


def body(name: str, lines: int) -> str:
    """A function of `lines` lines, signature to closing brace."""
    return f"int {name}() {{\n" + "  x();\n" * (lines - 2) + "}\n"


def run(files, limit=100):
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            pathlib.Path(d, name).write_text(text)
        return subprocess.run([sys.executable, str(SCRIPT), "--limit", str(limit), d],
                              capture_output=True, text=True)


class LongFunctions(unittest.TestCase):
    def test_a_function_over_the_limit_fails_naming_it_and_its_length(self):
        r = run({"a.cpp": body("short_one", 10) + body("long_one", 12)}, limit=11)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a.cpp:11: long_one is 12 lines", r.stdout)
        self.assertNotIn("short_one", r.stdout)

    def test_a_digit_separator_does_not_hide_what_follows(self):
        text = "constexpr int kLimit = 60'000;\n" + body("after", 12)
        self.assertEqual(list(long_functions.functions(text)), [("after", 2, 13)])
        r = run({"a.cpp": text}, limit=11)
        self.assertEqual(r.returncode, 1)
        self.assertIn("after is 12 lines", r.stdout)

    def test_separators_in_hex_and_fractions_are_kept(self):
        for number in ["0xFF'FF", "1'000.5", "0b1010'1010", "1'000'000u"]:
            self.assertEqual(long_functions.blank(f"x = {number};"), f"x = {number};")

    def test_character_literals_are_still_blanked(self):
        self.assertEqual(long_functions.blank("f('{', u8'}', L'{');"),
                         "f(   , u8   , L   );")
        text = "char c = '{';\n" + body("g", 5)
        self.assertEqual(list(long_functions.functions(text)), [("g", 2, 6)])


if __name__ == "__main__":
    unittest.main()
