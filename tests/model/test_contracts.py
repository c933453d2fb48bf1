"""Column contracts: validate() casts and orders, reports every missing column; empty() dtypes."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsys_diag.model import contracts as C
from nsys_diag.model.errors import SchemaError


@pytest.mark.parametrize("contract", C.ALL_CONTRACTS, ids=lambda c: c.name)
def test_empty_has_contract_columns_and_dtypes(contract):
    df = contract.empty()
    assert list(df.columns) == contract.names and len(df) == 0
    for col in contract.columns:
        dtype = df[col.name].dtype
        if col.dtype == "category":
            assert isinstance(dtype, pd.CategoricalDtype)
        elif col.dtype == "string":
            assert isinstance(dtype, pd.StringDtype)
        else:
            assert dtype == np.dtype(col.dtype)


def test_validate_lists_all_missing_columns():
    with pytest.raises(SchemaError) as err:
        C.API.validate(pd.DataFrame({"start_ns": [1]}))
    for name in ("end_ns", "global_tid", "name", "api_class"):
        assert name in str(err.value)


def test_validate_orders_casts_and_fills_missing_ids():
    raw = pd.DataFrame({
        "api_class": ["runtime"], "name": ["cudaLaunchKernel"], "correlation_id": [None],
        "tid": [7], "pid": [7], "global_pid": [1 << 48], "global_tid": [(1 << 48) | 7],
        "end_ns": [20.0], "start_ns": [10], "extra": ["dropped"],
    })
    out = C.API.validate(raw)
    assert list(out.columns) == C.API.names
    assert out["correlation_id"].tolist() == [C.MISSING]
    assert out["end_ns"].dtype == np.int64
    assert isinstance(out["name"].dtype, pd.CategoricalDtype)
