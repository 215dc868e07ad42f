"""What a browser posts of an unchanged textarea is the stored text (issue 45, item 2): every
line end comes back CRLF, lone CRs included, and the textarea's first newline is dropped by
the HTML parser. An edit of a file whose line ends were all CRLF keeps CRLF."""

from authoring.drafts import draft_from_form
from hilbench_annotate.vocabulary import Domain


def _draft(stored: str, posted: str) -> str:
    environment = {"gold_sql": stored, "descriptions": {"t": stored}}
    data = {"env.gold_sql": posted, "env.descriptions.t": posted}
    draft = draft_from_form(domain=Domain.SQL, data=data, environment=environment)
    env = draft["environment"]
    assert env["gold_sql"] == env["descriptions"]["t"]
    return env["gold_sql"]


def test_lone_cr_line_ends_are_kept_through_an_unchanged_save():
    assert _draft("a,b\rc,d\r", "a,b\r\nc,d\r\n") == "a,b\rc,d\r"


def test_a_leading_blank_line_the_browser_dropped_is_kept():
    assert _draft("\r\nSELECT 1\r\n", "SELECT 1\r\n") == "\r\nSELECT 1\r\n"


def test_an_edit_keeps_crlf_only_where_every_line_end_was_crlf():
    assert _draft("a\r\nb\r\n", "a\r\nB\r\n") == "a\r\nB\r\n"
    assert _draft("a\nb\r\n", "a\r\nB\r\n") == "a\nB\n"
    assert _draft("a\nb\n", "a\r\nB\r\n") == "a\nB\n"
