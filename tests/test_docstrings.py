"""The examples in the public docstrings run and print what they say: every module of the package."""

import doctest
import importlib
import pkgutil

import pytest

import robustream

EVERY_MODULE = ["robustream", *sorted(m.name for m in pkgutil.walk_packages(robustream.__path__, "robustream."))]
# modules whose docstrings must carry examples (a module that loses them all fails here)
WITH_EXAMPLES = [
    "robustream",  # save_model
    "robustream.batch",
    "robustream.blas",
    "robustream.datasets",
    "robustream.evaluate",
    "robustream.learners.base",
    "robustream.learners.coreset_svm",
    "robustream.learners.ordi",
    "robustream.learners.ramp",
    "robustream.learners.registry",
    "robustream.learners.rgd",
    "robustream.ramp",
    "robustream.replay",
    "robustream.rows",
    "robustream.sketch",
    "robustream.solver",
    "robustream.validation",
]


@pytest.mark.parametrize("name", EVERY_MODULE)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0 or name not in WITH_EXAMPLES


def test_the_modules_with_examples_exist():
    assert set(WITH_EXAMPLES) <= set(EVERY_MODULE)
