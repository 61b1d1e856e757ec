"""The serving workload's options and its round of prefill and decode steps, without a GPU or
PyTorch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve  # noqa: E402


def refused(argv):
    with open(os.devnull, "w") as null:
        old, sys.stderr = sys.stderr, null
        try:
            serve.parse_args(argv)
        except SystemExit:
            return True
        finally:
            sys.stderr = old
    return False


class RoundTest(unittest.TestCase):
    def test_a_round_is_the_prefill_groups_then_one_step_per_new_token(self):
        a = serve.parse_args(["--batch", "16", "--prefill-group", "4", "--new-tokens", "3"])
        self.assertEqual(serve.round_steps(a),
                         [("prefill", 0), ("prefill", 1), ("prefill", 2), ("prefill", 3),
                          ("decode", 0), ("decode", 1), ("decode", 2)])

    def test_the_defaults_fit_a_large_card_and_say_what_they_need(self):
        a = serve.parse_args([])
        # 3.35 G weights and 16 layers x 2 x 64 x 2560 x 4096 cache entries, in bf16.
        self.assertAlmostEqual(serve.memory_bytes(a) / 1e9, 49.65, delta=0.01)
        self.assertEqual(len(serve.round_steps(a)), 8 + 512)

    def test_bad_shapes_are_refused(self):
        self.assertTrue(refused(["--d-model", "1000", "--heads", "32"]))
        self.assertTrue(refused(["--batch", "10", "--prefill-group", "4"]))
        self.assertTrue(refused(["--new-tokens", "0"]))
        self.assertTrue(refused(["--seconds", "-1"]))
        self.assertFalse(refused(["--batch", "12", "--prefill-group", "4"]))


if __name__ == "__main__":
    unittest.main()
