import unittest

from textutil import slugify, title_case


class SlugifyTest(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")
        self.assertEqual(slugify("simple"), "simple")
        self.assertEqual(slugify("ABC 123"), "abc-123")

    def test_runs_collapse(self):
        self.assertEqual(slugify("  Rust 2024: What's new?  "), "rust-2024-what-s-new")
        self.assertEqual(slugify("a -- b\t\nc"), "a-b-c")

    def test_edges_trimmed(self):
        self.assertEqual(slugify("--already--slugged--"), "already-slugged")
        self.assertEqual(slugify("...dots..."), "dots")

    def test_non_ascii_is_a_separator(self):
        self.assertEqual(slugify("Crème brûlée"), "cr-me-br-l-e")

    def test_nothing_left(self):
        self.assertEqual(slugify(""), "")
        self.assertEqual(slugify("?!"), "")


class TitleCaseTest(unittest.TestCase):
    def test_title_case(self):
        self.assertEqual(title_case("hello big world"), "Hello Big World")


if __name__ == "__main__":
    unittest.main()
