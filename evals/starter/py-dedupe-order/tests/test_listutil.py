import unittest

from listutil import chunks, dedupe


class DedupeTest(unittest.TestCase):
    def test_keeps_first_occurrence_order(self):
        self.assertEqual(dedupe([3, 1, 3, 2, 1]), [3, 1, 2])
        self.assertEqual(dedupe([9, 8, 7, 8, 9]), [9, 8, 7])

    def test_strings(self):
        words = ["pear", "apple", "pear", "fig", "apple", "kiwi", "banana", "cherry"]
        self.assertEqual(dedupe(words), ["pear", "apple", "fig", "kiwi", "banana", "cherry"])

    def test_empty(self):
        self.assertEqual(dedupe([]), [])

    def test_input_not_modified(self):
        values = [2, 2, 1]
        dedupe(values)
        self.assertEqual(values, [2, 2, 1])


class ChunksTest(unittest.TestCase):
    def test_chunks(self):
        self.assertEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
        with self.assertRaises(ValueError):
            chunks([1], 0)


if __name__ == "__main__":
    unittest.main()
