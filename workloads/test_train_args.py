"""The reference workload's options and its data-stall schedule, without a GPU or PyTorch."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402


class StallScheduleTest(unittest.TestCase):
    def test_each_cycle_trains_then_stalls(self):
        a = train.parse_args(["--model", "vgg16", "--stall-every", "8", "--stall-seconds", "4"])
        # 8 s of training, then 4 s of stall, then training again.
        self.assertEqual([train.stalled(a, 100.0, 100.0 + x) for x in (0, 7.9, 8.1, 11.9, 12.1)],
                         [False, False, True, True, False])

    def test_no_stalls_unless_asked_and_none_before_the_first_step(self):
        plain = train.parse_args(["--model", "vgg16"])
        self.assertFalse(train.stalled(plain, 100.0, 109.0))
        a = train.parse_args(["--model", "vgg16", "--stall-every", "8"])
        self.assertFalse(train.stalled(a, None, 109.0))

    def test_bad_stall_options_are_refused(self):
        for bad in (["--stall-every", "-1"], ["--stall-seconds", "0"], ["--stall-wait-ms", "-5"]):
            with self.assertRaises(SystemExit), open(os.devnull, "w") as null:
                old, sys.stderr = sys.stderr, null
                try:
                    train.parse_args(["--model", "vgg16"] + bad)
                finally:
                    sys.stderr = old


if __name__ == "__main__":
    unittest.main()
