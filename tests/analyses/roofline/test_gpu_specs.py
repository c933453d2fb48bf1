"""``--gpu`` names: as nvidia-smi prints them, with or without ``NVIDIA``, and the short forms."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.roofline.gpu_specs import known_gpu_names, resolve_gpu_option
from nsys_diag.model.errors import UsageError


def test_resolve_full_names():
    spec, name, note = resolve_gpu_option("A100-SXM4-80GB")
    assert spec.key == "a100-80gb-sxm" and name == "NVIDIA A100-SXM4-80GB" and note is None
    spec, name, _ = resolve_gpu_option("NVIDIA H100 80GB HBM3")
    assert spec.key == "h100-sxm" and name == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("short,key", [("A100", "a100-80gb-sxm"), ("h100", "h100-sxm"),
                                       ("H200", "h200-sxm"), ("NVIDIA B200", "b200")])
def test_short_forms_pick_the_sxm_variant_with_most_memory(short, key):
    spec, _, note = resolve_gpu_option(short)
    assert spec.key == key and note and "most memory" in note


def test_unknown_name_is_a_usage_error_listing_known_ones():
    with pytest.raises(UsageError) as err:
        resolve_gpu_option("H300")
    assert err.value.exit_code == 2
    assert all(n in str(err.value) for n in ("A100 80GB SXM", "H200", "B200"))
    assert "A100" in known_gpu_names()
