"""A failure inside the driver's launch callback cannot raise through the driver: the session
notes it, and the note must say where in this package it happened."""
import pytest

from gwatch_nb.cuda.session import _raised_at
from gwatch_nb.errors import SassRewriteError
from gwatch_nb.sass.lines import line_table


def test_an_internal_failure_names_the_line_of_this_package_that_raised_it():
    with pytest.raises(SassRewriteError) as caught:
        line_table(b"not a cubin")
    where = _raised_at(caught.value)
    assert where.startswith(" (at gwatch_nb/sass/") and where.endswith(")")
    file, line = where[len(" (at "):-1].rsplit(":", 1)
    assert file.endswith(".py") and int(line) > 0


def test_a_failure_outside_this_package_names_no_place():
    try:
        raise ValueError("raised here, in a test")
    except ValueError as error:
        assert _raised_at(error) == ""
