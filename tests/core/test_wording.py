"""Text for people: lists in words, text shortened at a word boundary with "…"."""

import pytest

from hilbench_annotate.toolkit.wording import plain_list, shorten


@pytest.mark.parametrize(
    ("items", "options", "said"),
    [
        ([], {}, ""),
        (["Realistic"], {}, "“Realistic”"),
        (["a", "b"], {}, "“a” and “b”"),
        (["a", "b", "c"], {}, "“a”, “b” and “c”"),
        (["sql", "swe"], {"quote": False, "last": "or"}, "sql or swe"),
    ],
)
def test_plain_list_reads_as_words(items, options, said):
    assert plain_list(items, **options) == said


def test_shorten_cuts_at_a_word_boundary_and_says_so():
    title = "Among the clients whose loan contract is running but who are in debt, who paid most"
    short = shorten(title, 40)
    assert short == "Among the clients whose loan contract…"
    assert len(short) <= 40
    # Every word kept is whole: the text before "…" is a prefix ending where a word ends.
    kept = short.removesuffix("…")
    assert title.startswith(kept) and title[len(kept)] in " ,"


def test_shorten_keeps_a_whole_last_word_that_fits_and_drops_trailing_punctuation():
    assert shorten("one two three", 9) == "one two…"  # "one two t" would cut "three"
    assert shorten("one two, three", 10) == "one two…"
    assert shorten("short enough", 40) == "short enough"
    assert shorten("  spaces \n and\tlines ", 40) == "spaces and lines"


def test_shorten_cuts_inside_a_word_only_when_one_word_is_longer_than_the_limit():
    assert shorten("x" * 50, 10) == "x" * 9 + "…"
