import unittest

from romans import from_roman, to_roman


class RomansTest(unittest.TestCase):
    def test_round_trip(self):
        for n in range(1, 4000):
            self.assertEqual(from_roman(to_roman(n)), n)

    def test_known(self):
        self.assertEqual(to_roman(1994), "MCMXCIV")

    def test_refused(self):
        with self.assertRaises(ValueError):
            from_roman("IIII")


if __name__ == "__main__":
    unittest.main()
