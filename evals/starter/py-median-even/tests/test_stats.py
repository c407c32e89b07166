import unittest

from stats import mean, median


class MedianTest(unittest.TestCase):
    def test_odd_length(self):
        self.assertEqual(median([3, 1, 2]), 2)
        self.assertEqual(median([5, 9, 1, 7, 3]), 5)

    def test_single_value(self):
        self.assertEqual(median([42]), 42)

    def test_even_length(self):
        self.assertEqual(median([1, 2, 3, 4]), 2.5)
        self.assertEqual(median([1, 3]), 2)

    def test_even_length_unsorted(self):
        self.assertEqual(median([10, 2, 8, 4]), 6.0)
        self.assertAlmostEqual(median([0.5, -1.5, 2.0, 1.0]), 0.75)

    def test_empty_raises(self):
        with self.assertRaises(ValueError):
            median([])

    def test_input_not_modified(self):
        values = [4, 1, 3, 2]
        median(values)
        self.assertEqual(values, [4, 1, 3, 2])


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
        with self.assertRaises(ValueError):
            mean([])


if __name__ == "__main__":
    unittest.main()
