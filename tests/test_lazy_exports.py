"""``lazy_exports``: a package's names served from their home modules on first use, the
framework they need checked first, unknown names refused as by any module."""

from __future__ import annotations

import sys

import pytest

import ragtrace.integrations.langchain as langchain_package
import ragtrace.review as review_package
from ragtrace._lazy_exports import lazy_exports

HOME = "ragtrace.integrations.langchain._instrumentation"


def test_a_name_is_served_from_its_home_module() -> None:
    serve = lazy_exports("shop.package", {"instrument": HOME})
    from ragtrace.integrations.langchain._instrumentation import instrument

    assert serve("instrument") is instrument
    assert langchain_package.instrument is instrument  # the package's own table
    from ragtrace.review._calibration import fit_thresholds

    assert review_package.fit_thresholds is fit_thresholds


def test_a_name_the_table_lacks_is_an_attribute_error_naming_the_package() -> None:
    serve = lazy_exports("shop.package", {"instrument": HOME})
    with pytest.raises(AttributeError, match=r"module 'shop\.package' has no attribute 'nope'"):
        serve("nope")
    with pytest.raises(AttributeError, match=r"'ragtrace\.review'"):
        _ = review_package.no_such_name


def test_a_missing_framework_is_an_import_error_naming_the_extra() -> None:
    missing = "a_framework_that_is_not_installed"
    assert missing not in sys.modules
    serve = lazy_exports(
        "shop.package", {"instrument": HOME}, needs=(missing, "pip install 'shop[framework]'")
    )
    with pytest.raises(ImportError, match=r"pip install 'shop\[framework\]'"):
        serve("instrument")
