"""Built-in GPU peak table for roofline ceilings when ncu did not export ``.peak_sustained``.

Peaks are modelled the way Nsight Compute computes them (NCU_CSV.md §6.5): a per-SM, per-clock
rate × SM count × SM clock. ncu profiles at locked base clocks, so the clock that matters is the
*profiled* one (``sm__cycles_elapsed.avg.per_second``), not the boost clock; without a profiled
clock we fall back to the published datasheet value (or rate × SMs × boost clock).

Rates are FLOP (or OP) per SM per clock, dense (no 2:4 sparsity), derived from NVIDIA datasheet
peaks ÷ (SM count × boost clock); each SKU's datasheet values are kept in ``datasheet`` with the
source in a comment, and a unit test checks rate × SMs × boost against them.

Precision keys (shared with ``roofline.py``):
``fp64`` / ``fp32`` / ``fp16`` — CUDA-core FMA pipes (FMA = 2 FLOP; FP16 packed half2);
``tensor_fp16`` — Tensor Core FP16/BF16 inputs, FP32 accumulate (BF16 has the same rate);
``tensor_tf32``, ``tensor_fp8``, ``tensor_int8`` (OPS), ``tensor_fp64``.
DRAM bandwidth in bytes/s (decimal: 1 TB/s = 1e12 B/s), as published.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

PRECISIONS = ("fp64", "fp32", "fp16", "tensor_fp16", "tensor_tf32", "tensor_fp8", "tensor_int8",
              "tensor_fp64")

T = 1e12  # TFLOP/s
G = 1e9  # GB/s

# ---- per-architecture rates (FLOP per SM per clock, dense) ----------------------------------
# Derived from the datasheet peaks below ÷ (SMs × boost clock); e.g. A100 FP32 19.5 TFLOP/s ÷
# (108 × 1.41 GHz) = 128, FP16 Tensor 312 TFLOP/s ÷ (108 × 1.41 GHz) = 2048 (NCU_CSV.md §6.5).
ARCH_RATES: dict[tuple[int, int], dict[str, float]] = {
    # Volta GV100 (V100): 64 FP32 lanes + 32 FP64 lanes + 8 tensor cores (64 FMA/clk each) per SM
    (7, 0): {"fp64": 64, "fp32": 128, "fp16": 256, "tensor_fp16": 1024},
    # Turing TU10x (T4, Quadro RTX): FP64 at 1/32 of FP32; 8 tensor cores per SM
    (7, 5): {"fp64": 4, "fp32": 128, "fp16": 256, "tensor_fp16": 1024, "tensor_int8": 2048},
    # Ampere GA100 (A100, A30): 3rd-gen tensor cores, TF32, FP64 tensor
    (8, 0): {"fp64": 64, "fp32": 128, "fp16": 512, "tensor_fp16": 2048, "tensor_tf32": 1024,
             "tensor_int8": 4096, "tensor_fp64": 128},
    # Ampere GA10x (A10, A40, RTX A6000, RTX 30): 128 FP32 lanes; FP16 non-tensor = FP32 rate
    (8, 6): {"fp64": 4, "fp32": 256, "fp16": 256, "tensor_fp16": 1024, "tensor_tf32": 512,
             "tensor_int8": 2048},
    # Ada AD10x (L4, L40S, RTX 40): FP8 tensor added
    (8, 9): {"fp64": 4, "fp32": 256, "fp16": 256, "tensor_fp16": 1024, "tensor_tf32": 512,
             "tensor_fp8": 2048, "tensor_int8": 2048},
    # Hopper GH100 (H100, H200)
    (9, 0): {"fp64": 128, "fp32": 256, "fp16": 512, "tensor_fp16": 4096, "tensor_tf32": 2048,
             "tensor_fp8": 8192, "tensor_int8": 8192, "tensor_fp64": 256},
    # Blackwell GB100 (B200): FP32/FP64 from the HGX datasheet; tensor ≈ 2× Hopper per SM
    (10, 0): {"fp64": 128, "fp32": 256, "tensor_fp16": 8192, "tensor_tf32": 4096,
              "tensor_fp8": 16384, "tensor_int8": 16384, "tensor_fp64": 128},
    # Blackwell GB20x client (RTX 50): CUDA-core rates only (tensor rates vary by SKU)
    (12, 0): {"fp64": 4, "fp32": 256, "fp16": 256},
}

# GeForce / some workstation parts run FP16/BF16 tensor math with FP32 accumulate at half rate.
_HALF_RATE_FP32_ACC = {"tensor_fp16": 0.5, "tensor_tf32": 0.5, "tensor_fp8": 0.5}


@dataclass(frozen=True)
class GpuSpec:
    key: str
    display: str
    cc: tuple[int, int]
    sm_count: int
    boost_clock_hz: float
    dram_bytes_per_s: float | None
    datasheet: dict[str, float] = field(default_factory=dict)  # published peaks at boost, dense
    rate_scale: dict[str, float] = field(default_factory=dict)  # SKU deviations from ARCH_RATES
    source: str = ""

    def rate(self, precision: str) -> float | None:
        """FLOP per SM per clock for ``precision`` (None when not in the table)."""
        r = ARCH_RATES.get(self.cc, {}).get(precision)
        if r is None:
            return None
        return r * self.rate_scale.get(precision, 1.0)

    def peak_flop_per_s(self, precision: str, clock_hz: float | None = None) -> float | None:
        """Peak at ``clock_hz`` (the profiled SM clock) or, without one, the datasheet peak."""
        r = self.rate(precision)
        if clock_hz is not None and clock_hz > 0:
            return None if r is None else r * self.sm_count * clock_hz
        if precision in self.datasheet:
            return self.datasheet[precision]
        return None if r is None else r * self.sm_count * self.boost_clock_hz


def _spec(key, display, cc, sms, boost_mhz, dram_gbs, datasheet, source, rate_scale=None):
    return GpuSpec(key, display, cc, sms, boost_mhz * 1e6, None if dram_gbs is None else dram_gbs * G,
                   {k: v * T for k, v in datasheet.items()}, dict(rate_scale or {}), source)


# ---- the table (datasheet values in TFLOP/s, dense; DRAM in GB/s) ---------------------------
SPECS: tuple[GpuSpec, ...] = (
    # Source: NVIDIA Tesla V100 datasheet (images.nvidia.com/content/technologies/volta/pdf/
    # volta-v100-datasheet-update-us-1165301-r5.pdf): SXM2 7.8/15.7/125 TF, PCIe 7/14/112 TF,
    # V100S 8.2/16.4/130 TF; HBM2 900 GB/s (V100S 1134 GB/s). SMs/boost from the Volta whitepaper.
    _spec("v100-sxm2", "V100 SXM2", (7, 0), 80, 1530, 900,
          {"fp64": 7.8, "fp32": 15.7, "tensor_fp16": 125}, "NVIDIA V100 datasheet / Volta whitepaper"),
    _spec("v100-pcie", "V100 PCIe", (7, 0), 80, 1380, 900,
          {"fp64": 7.0, "fp32": 14.0, "tensor_fp16": 112}, "NVIDIA V100 datasheet"),
    _spec("v100s-pcie", "V100S PCIe", (7, 0), 80, 1597, 1134,
          {"fp64": 8.2, "fp32": 16.4, "tensor_fp16": 130}, "NVIDIA V100S datasheet"),
    # Source: NVIDIA T4 datasheet (T4-datasheet-951643): FP32 8.1 TF, FP16 tensor 65 TF,
    # INT8 130 TOPS, 320 GB/s GDDR6; 40 SMs, 1590 MHz boost (Turing whitepaper).
    _spec("t4", "T4", (7, 5), 40, 1590, 320,
          {"fp32": 8.1, "tensor_fp16": 65, "tensor_int8": 130}, "NVIDIA T4 datasheet"),
    # Source: Quadro RTX 6000 datasheet: FP32 16.3 TF, tensor 130.5 TF, 672 GB/s; 72 SMs, 1770 MHz.
    _spec("quadro-rtx-6000", "Quadro RTX 6000", (7, 5), 72, 1770, 672,
          {"fp32": 16.3, "tensor_fp16": 130.5}, "NVIDIA Quadro RTX 6000 datasheet"),
    # Source: NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf) and the
    # A100 whitepaper: FP64 9.7, FP64 TC 19.5, FP32 19.5, TF32 156, FP16/BF16 TC 312, INT8 624,
    # FP16 non-tensor 78 TF; 108 SMs, 1410 MHz. HBM: 40GB 1,555 GB/s; 80GB PCIe 1,935; 80GB SXM 2,039.
    *(
        _spec(key, disp, (8, 0), 108, 1410, bw,
              {"fp64": 9.7, "fp32": 19.5, "fp16": 78, "tensor_fp16": 312, "tensor_tf32": 156,
               "tensor_int8": 624, "tensor_fp64": 19.5}, "NVIDIA A100 datasheet / A100 whitepaper")
        for key, disp, bw in (("a100-40gb-sxm", "A100 40GB SXM", 1555),
                              ("a100-40gb-pcie", "A100 40GB PCIe", 1555),
                              ("a100-80gb-pcie", "A100 80GB PCIe", 1935),
                              ("a100-80gb-sxm", "A100 80GB SXM", 2039))
    ),
    # Source: NVIDIA A30 datasheet: FP64 5.2, FP32 10.3, TF32 82, FP16 165, INT8 330; 933 GB/s;
    # 56 SMs, 1440 MHz.
    _spec("a30", "A30", (8, 0), 56, 1440, 933,
          {"fp64": 5.2, "fp32": 10.3, "tensor_fp16": 165, "tensor_tf32": 82, "tensor_int8": 330},
          "NVIDIA A30 datasheet"),
    # Source: NVIDIA A10 datasheet: FP32 31.2, TF32 62.5, FP16/BF16 125, INT8 250; 600 GB/s;
    # 72 SMs, 1695 MHz.
    _spec("a10", "A10", (8, 6), 72, 1695, 600,
          {"fp32": 31.2, "tensor_fp16": 125, "tensor_tf32": 62.5, "tensor_int8": 250},
          "NVIDIA A10 datasheet"),
    # Source: NVIDIA A40 datasheet: FP32 37.4, TF32 74.8, FP16 149.7, INT8 299.3; 696 GB/s;
    # 84 SMs, 1740 MHz.
    _spec("a40", "A40", (8, 6), 84, 1740, 696,
          {"fp32": 37.4, "tensor_fp16": 149.7, "tensor_tf32": 74.8, "tensor_int8": 299.3},
          "NVIDIA A40 datasheet"),
    # Source: NVIDIA RTX A6000 datasheet: FP32 38.7 TF, 768 GB/s; 84 SMs, 1800 MHz.
    _spec("rtx-a6000", "RTX A6000", (8, 6), 84, 1800, 768, {"fp32": 38.7},
          "NVIDIA RTX A6000 datasheet"),
    # Source: NVIDIA L4 datasheet: FP32 30.3, TF32 60, FP16/BF16 121, FP8 242.5, INT8 242.5
    # (dense = half the sparse figures printed); 300 GB/s; 58 SMs, 2040 MHz.
    _spec("l4", "L4", (8, 9), 58, 2040, 300,
          {"fp32": 30.3, "tensor_fp16": 121, "tensor_tf32": 60, "tensor_fp8": 242.5,
           "tensor_int8": 242.5}, "NVIDIA L4 datasheet"),
    # Source: NVIDIA L40S datasheet: FP32 91.6, TF32 183, FP16/BF16 362.05, FP8 733, INT8 733
    # (dense); 864 GB/s; 142 SMs, 2520 MHz.
    _spec("l40s", "L40S", (8, 9), 142, 2520, 864,
          {"fp32": 91.6, "tensor_fp16": 362.05, "tensor_tf32": 183, "tensor_fp8": 733,
           "tensor_int8": 733}, "NVIDIA L40S datasheet"),
    # Source: NVIDIA L40 datasheet: FP32 90.5, TF32 90.5, BF16/FP16 181.05, FP8 362 (dense);
    # 864 GB/s; 142 SMs, 2490 MHz. Tensor FP32-accumulate at half the L40S rate.
    _spec("l40", "L40", (8, 9), 142, 2490, 864,
          {"fp32": 90.5, "tensor_fp16": 181.05, "tensor_tf32": 90.5, "tensor_fp8": 362},
          "NVIDIA L40 datasheet", _HALF_RATE_FP32_ACC),
    # Source: NVIDIA RTX 6000 Ada datasheet: FP32 91.1 TF, 960 GB/s; 142 SMs, 2505 MHz.
    _spec("rtx-6000-ada", "RTX 6000 Ada", (8, 9), 142, 2505, 960, {"fp32": 91.1},
          "NVIDIA RTX 6000 Ada datasheet"),
    # Source: NVIDIA H100 datasheet (h100-datasheet-2430615): SXM FP64 34, FP64 TC 67, FP32 67,
    # TF32 494.7, BF16/FP16 989.4, FP8 1978.9 (dense = half the sparse figures), 3.35 TB/s;
    # PCIe FP64 26, FP32 51, TF32 378, BF16 756, FP8 1513, 2.0 TB/s; NVL FP64 30, FP32 60,
    # TF32 418, BF16 835, FP8 1671, 3.9 TB/s. SMs: SXM/NVL 132, PCIe 114 (Hopper whitepaper);
    # boost SXM 1980 MHz, PCIe 1755 MHz, NVL 1785 MHz.
    _spec("h100-sxm", "H100 SXM", (9, 0), 132, 1980, 3350,
          {"fp64": 34, "fp32": 67, "tensor_fp16": 989.4, "tensor_tf32": 494.7,
           "tensor_fp8": 1978.9, "tensor_int8": 1978.9, "tensor_fp64": 67}, "NVIDIA H100 datasheet"),
    _spec("h100-pcie", "H100 PCIe", (9, 0), 114, 1755, 2000,
          {"fp64": 26, "fp32": 51, "tensor_fp16": 756, "tensor_tf32": 378, "tensor_fp8": 1513,
           "tensor_int8": 1513, "tensor_fp64": 51}, "NVIDIA H100 datasheet"),
    _spec("h100-nvl", "H100 NVL", (9, 0), 132, 1785, 3900,
          {"fp64": 30, "fp32": 60, "tensor_fp16": 835, "tensor_tf32": 418, "tensor_fp8": 1671,
           "tensor_int8": 1671, "tensor_fp64": 60}, "NVIDIA H100 datasheet"),
    # Source: NVIDIA H200 datasheet: SXM same compute as H100 SXM, 141 GB HBM3e at 4.8 TB/s;
    # H200 NVL FP64 30, FP32 60, BF16 835, FP8 1671, 4.8 TB/s.
    _spec("h200-sxm", "H200 SXM", (9, 0), 132, 1980, 4800,
          {"fp64": 34, "fp32": 67, "tensor_fp16": 989.4, "tensor_tf32": 494.7,
           "tensor_fp8": 1978.9, "tensor_int8": 1978.9, "tensor_fp64": 67}, "NVIDIA H200 datasheet"),
    _spec("h200-nvl", "H200 NVL", (9, 0), 132, 1785, 4800,
          {"fp64": 30, "fp32": 60, "tensor_fp16": 835, "tensor_fp8": 1671, "tensor_int8": 1671},
          "NVIDIA H200 datasheet"),
    # Source: NVIDIA HGX B200 datasheet (per GPU): FP64/FP64 TC 37, FP16/BF16 2.25 PF, TF32 1.1 PF,
    # FP8 4.5 PF, INT8 4.5 POPS (dense = half the sparse figures), HBM3e 8 TB/s. 148 SMs and the
    # 1.965 GHz clock are the device attributes of the real B200 ncu exports (NCU_CSV.md §6.5);
    # FP32 is not published: rate 256 × 148 × 1.965 GHz ≈ 74 TF.
    _spec("b200", "B200", (10, 0), 148, 1965, 8000,
          {"fp64": 37, "tensor_fp16": 2250, "tensor_tf32": 1100, "tensor_fp8": 4500,
           "tensor_int8": 4500, "tensor_fp64": 37}, "NVIDIA HGX B200 datasheet"),
    # Source: NVIDIA Ampere GA102 whitepaper (RTX 3090: FP32 35.6, FP16 TC w/ FP32 acc 71 dense,
    # 936 GB/s, 82 SMs, 1695 MHz; RTX 3080: 29.8, 59.5, 760 GB/s, 68 SMs, 1710 MHz) and GA104
    # (RTX 3070: 20.3, 40.6, 448 GB/s, 46 SMs, 1725 MHz); RTX 3090 Ti / 3060 product pages.
    _spec("rtx-3090-ti", "GeForce RTX 3090 Ti", (8, 6), 84, 1860, 1008, {"fp32": 40.0},
          "NVIDIA RTX 3090 Ti product page", _HALF_RATE_FP32_ACC),
    _spec("rtx-3090", "GeForce RTX 3090", (8, 6), 82, 1695, 936,
          {"fp32": 35.6, "tensor_fp16": 71}, "NVIDIA GA102 whitepaper", _HALF_RATE_FP32_ACC),
    _spec("rtx-3080", "GeForce RTX 3080", (8, 6), 68, 1710, 760,
          {"fp32": 29.8, "tensor_fp16": 59.5}, "NVIDIA GA102 whitepaper", _HALF_RATE_FP32_ACC),
    _spec("rtx-3070", "GeForce RTX 3070", (8, 6), 46, 1725, 448,
          {"fp32": 20.3, "tensor_fp16": 40.6}, "NVIDIA GA104 whitepaper", _HALF_RATE_FP32_ACC),
    _spec("rtx-3060", "GeForce RTX 3060", (8, 6), 28, 1777, 360, {"fp32": 12.7},
          "NVIDIA RTX 3060 product page", _HALF_RATE_FP32_ACC),
    # Source: NVIDIA Ada Lovelace whitepaper (RTX 4090: FP32 82.6, FP16 TC w/ FP32 acc 165.2
    # dense, 1008 GB/s, 128 SMs, 2520 MHz; RTX 4080: 48.7, 97.5, 716.8 GB/s, 76 SMs, 2505 MHz);
    # RTX 4070 Ti / 4070 / 4060 Ti product pages.
    _spec("rtx-4090", "GeForce RTX 4090", (8, 9), 128, 2520, 1008,
          {"fp32": 82.6, "tensor_fp16": 165.2}, "NVIDIA Ada whitepaper", _HALF_RATE_FP32_ACC),
    _spec("rtx-4080", "GeForce RTX 4080", (8, 9), 76, 2505, 716.8,
          {"fp32": 48.7, "tensor_fp16": 97.5}, "NVIDIA Ada whitepaper", _HALF_RATE_FP32_ACC),
    _spec("rtx-4070-ti", "GeForce RTX 4070 Ti", (8, 9), 60, 2610, 504, {"fp32": 40.1},
          "NVIDIA RTX 4070 Ti product page", _HALF_RATE_FP32_ACC),
    _spec("rtx-4070", "GeForce RTX 4070", (8, 9), 46, 2475, 504, {"fp32": 29.1},
          "NVIDIA RTX 4070 product page", _HALF_RATE_FP32_ACC),
    _spec("rtx-4060-ti", "GeForce RTX 4060 Ti", (8, 9), 34, 2535, 288, {"fp32": 22.1},
          "NVIDIA RTX 4060 Ti product page", _HALF_RATE_FP32_ACC),
    # Source: NVIDIA RTX 5090 product page: 170 SMs (21,760 CUDA cores), 2407 MHz, 1,792 GB/s.
    _spec("rtx-5090", "GeForce RTX 5090", (12, 0), 170, 2407, 1792, {"fp32": 104.8},
          "NVIDIA RTX 5090 product page"),
)

_BY_KEY = {s.key: s for s in SPECS}

# Ordered patterns on the normalised device name (most specific first).
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\ba100\b.*\b80 ?gb\b.*\bpcie\b|\ba100\b.*\bpcie\b.*\b80 ?gb\b", "a100-80gb-pcie"),
    (r"\ba100\b.*\bpcie\b", "a100-40gb-pcie"),
    (r"\ba100\b.*\b80 ?gb\b", "a100-80gb-sxm"),
    (r"\ba100\b", "a100-40gb-sxm"),
    (r"\ba30\b", "a30"),
    (r"\ba10\b", "a10"),
    (r"\ba40\b", "a40"),
    (r"\brtx a6000\b", "rtx-a6000"),
    (r"\bh100\b.*\bnvl\b", "h100-nvl"),
    (r"\bh100\b.*\b(?:pcie|hbm2e)\b", "h100-pcie"),
    (r"\bh100\b", "h100-sxm"),
    (r"\bh200\b.*\bnvl\b", "h200-nvl"),
    (r"\bh200\b", "h200-sxm"),
    (r"\bb200\b", "b200"),
    (r"\bv100s\b", "v100s-pcie"),
    (r"\bv100\b.*\bpcie\b", "v100-pcie"),
    (r"\bv100\b", "v100-sxm2"),
    (r"\bt4\b", "t4"),
    (r"\bl40s\b", "l40s"),
    (r"\bl40\b", "l40"),
    (r"\bl4\b", "l4"),
    (r"\brtx 6000 ada\b", "rtx-6000-ada"),
    (r"^rtx 6000$|\bquadro rtx 6000\b", "quadro-rtx-6000"),
    (r"\brtx 3090 ti\b", "rtx-3090-ti"),
    (r"\brtx 3090\b(?! ti)", "rtx-3090"),
    (r"\brtx 3080\b(?! ti)", "rtx-3080"),
    (r"\brtx 3070\b(?! ti)", "rtx-3070"),
    (r"\brtx 3060\b(?! ti)", "rtx-3060"),
    (r"\brtx 4090\b(?! d)", "rtx-4090"),
    (r"\brtx 4080\b(?! super)", "rtx-4080"),
    (r"\brtx 4070 ti\b(?! super)", "rtx-4070-ti"),
    (r"\brtx 4070\b(?! ti| super)", "rtx-4070"),
    (r"\brtx 4060 ti\b", "rtx-4060-ti"),
    (r"\brtx 5090\b", "rtx-5090"),
)
_COMPILED = tuple((re.compile(p), k) for p, k in _PATTERNS)
_MOBILE = re.compile(r"\b(?:laptop|mobile|max q|notebook)\b")


def _normalise_device_name(name: str) -> str:
    s = name.lower()
    s = re.sub(r"[-_/,()]+", " ", s)
    s = re.sub(r"\b(?:nvidia|tesla|geforce)\b", " ", s)
    if "quadro rtx 6000" not in s:
        s = re.sub(r"\bquadro\b", " ", s)
    return re.sub(r"\s+", " ", s).strip()


def lookup_gpu(name: str | None) -> GpuSpec | None:
    """Spec for a device name as nsys/ncu print it ('NVIDIA A100-SXM4-40GB'); None if unknown.

    Laptop/mobile variants are never matched to desktop/data-centre entries.
    """
    if not name:
        return None
    s = _normalise_device_name(str(name))
    if not s or _MOBILE.search(s):
        return None
    for rx, key in _COMPILED:
        if rx.search(s):
            return _BY_KEY[key]
    return None


def arch_rates(cc_major: int, cc_minor: int) -> dict[str, float] | None:
    """Per-SM per-clock rates for a compute capability (nearest known minor of the major)."""
    rates = ARCH_RATES.get((cc_major, cc_minor))
    if rates is not None:
        return rates
    same_major = sorted(k for k in ARCH_RATES if k[0] == cc_major and k[1] <= cc_minor)
    return ARCH_RATES[same_major[-1]] if same_major else None


SHORT_FORMS = {"a100": "a100-80gb-sxm", "h100": "h100-sxm", "h200": "h200-sxm", "b200": "b200"}
"""``--gpu`` short forms: the SXM variant with the most memory of each data-centre part."""


def known_gpu_names() -> list[str]:
    """What ``--gpu`` accepts, for the usage error: the table's names and the short forms."""
    return sorted({s.display for s in SPECS} | {k.upper() for k in SHORT_FORMS})


def resolve_gpu_option(text: str) -> tuple[GpuSpec, str, str | None]:
    """``--gpu NAME`` → (spec, the name to record, a note when a short form was expanded).

    NAME as ``nvidia-smi`` prints it, with or without ``NVIDIA `` (``A100-SXM4-80GB``,
    ``H100 80GB HBM3``), or a short form (``A100``, ``H100``, ``H200``, ``B200``) that picks the
    SXM variant with the most memory. An unknown name raises ``UsageError`` listing the known ones.
    """
    from nsys_diag.model.errors import UsageError

    raw = (text or "").strip()
    short = _normalise_device_name(raw)
    if short in SHORT_FORMS:
        spec = _BY_KEY[SHORT_FORMS[short]]
        return spec, f"NVIDIA {spec.display}", (
            f"--gpu {raw}: taken as {spec.display} (the SXM variant with the most memory); "
            "name the exact model as nvidia-smi prints it to choose another")
    found = lookup_gpu(raw)
    if found is None:
        raise UsageError(f"--gpu {raw!r}: unknown GPU; known: {', '.join(known_gpu_names())} "
                         "(or the name as nvidia-smi prints it, e.g. 'A100-SXM4-80GB', "
                         "'H100 80GB HBM3')")
    name = raw if raw.lower().startswith("nvidia") else f"NVIDIA {raw}"
    return found, name, None
