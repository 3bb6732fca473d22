import datetime

import pytest

from paimon_fast import field
from paimon_fast.core.predicate import Leaf
from paimon_fast.core.sqlpredicate import PredicateSyntaxError, parse_predicate


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a = 1", field("a") == 1),
        ("a == 1", field("a") == 1),
        ("a != 'x'", field("a") != "x"),
        ("a <> 'x'", field("a") != "x"),
        ("a < 1.5", field("a") < 1.5),
        ("a <= -2", field("a") <= -2),
        ("a > 1e3", field("a") > 1000.0),
        ("a >= 0", field("a") >= 0),
        ("3 < a", field("a") > 3),
        ("3 >= a", field("a") <= 3),
        ("a IN (1, 2, 3)", field("a").isin([1, 2, 3])),
        ("a not in ('x', 'y')", field("a").notin(["x", "y"])),
        ("a IS NULL", field("a").is_null()),
        ("a is not null", field("a").is_not_null()),
        ("a BETWEEN 1 AND 5", field("a").between(1, 5)),
        ("a NOT BETWEEN 1 AND 5", field("a").not_between(1, 5)),
        ("a LIKE 'ab%'", field("a").startswith("ab")),
        ("a LIKE '%ab'", field("a").endswith("ab")),
        ("a LIKE '%ab%'", field("a").contains("ab")),
        ("a LIKE 'a_b%'", field("a").like("a_b%")),
        ("a LIKE 'a%b'", field("a").like("a%b")),
        ("flag = TRUE", field("flag") == True),  # noqa: E712
        ("s = 'it''s'", field("s") == "it's"),
        ('"my col" = 1', field("my col") == 1),
        ("`odd``name` = 1", field("odd`name") == 1),
        ("d >= DATE '2024-02-29'", field("d") >= datetime.date(2024, 2, 29)),
        ("t < TIMESTAMP '2024-01-01 10:00:00'", field("t") < datetime.datetime(2024, 1, 1, 10)),
        ("a = 1 AND b = 2 AND c = 3", (field("a") == 1) & (field("b") == 2) & (field("c") == 3)),
        ("a = 1 OR b = 2 AND c = 3", (field("a") == 1) | ((field("b") == 2) & (field("c") == 3))),
        ("(a = 1 OR b = 2) AND c = 3", ((field("a") == 1) | (field("b") == 2)) & (field("c") == 3)),
        (
            "country = 'DE' AND (score > 90 OR id IN (1, 2))",
            (field("country") == "DE") & ((field("score") > 90) | field("id").isin([1, 2])),
        ),
        ("NOT a = 1", field("a") != 1),
        ("NOT (a < 1 OR b IS NULL)", (field("a") >= 1) & field("b").is_not_null()),
        ("NOT NOT a IN (1)", field("a").isin([1])),
        ("not (a between 1 and 2)", field("a").not_between(1, 2)),
    ],
)
def test_parse(text, expected):
    assert parse_predicate(text) == expected


def test_predicate_passes_through():
    p = field("x") == 1
    assert parse_predicate(p) is p


@pytest.mark.parametrize(
    "text, where",
    [
        ("", "empty"),
        ("a = ", "offset 4"),
        ("a = NULL NULL", "after the predicate"),
        ("a = 1 b", "after the predicate"),
        ("(a = 1", "expected '\\)'"),
        ("a IN ()", "literal"),
        ("a NOT LIKE 'x%'", "NOT LIKE"),
        ("NOT a LIKE 'x%'", "cannot"),
        ("a # 1", "unexpected character"),
        ("a IS 1", "NULL"),
        ("a NOT = 1", "IN, BETWEEN or LIKE"),
        ("a LIKE 3", "string"),
        ("d = DATE 'nope'", "DATE"),
    ],
)
def test_errors_say_where(text, where):
    with pytest.raises(PredicateSyntaxError, match=where):
        parse_predicate(text)


def test_syntax_error_is_value_error():
    with pytest.raises(ValueError):
        parse_predicate("a ==")


def test_keywords_are_not_columns_but_quoted_ones_are():
    assert parse_predicate('"and" = 1') == Leaf("equal", "and", (1,))
    with pytest.raises(PredicateSyntaxError):
        parse_predicate("and = 1")
