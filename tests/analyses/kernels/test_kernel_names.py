"""Kernel-name keys: signature, base name, family (shared by the ncu join, compare, Tensor Cores)."""
from __future__ import annotations

import pytest

from nsys_diag.analyses.kernels.labels import without_parameters
from nsys_diag.analyses.kernels.names import (kernel_base_name, kernel_signature_key,
                                             normalize_kernel_name)

FMHA = ("void fmha_fwd_loop_kernel<FMHA_kernel_traits<(int)128, (int)32, (int)16, (int)1, (int)4, "
        "(unsigned int)8, __half>, (bool)0, (bool)0, (bool)0>(FMHA_fprop_params)")


@pytest.mark.parametrize("name,family", [
    # real spellings from NCU_CSV.md §4 and the nsys traces
    ("ampere_sgemm_32x32_sliced1x4_tn", "ampere_sgemm"),
    ("ampere_sgemm_128x128_tn", "ampere_sgemm"),
    ("volta_h884gemm_64x64_ldg8_nn", "volta_h884gemm"),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "turing_fp16_s1688gemm_fp16"),
    ("nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "nvjet_tst"),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", "nvjet_hsh"),
    ("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
     "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
     "_kernel__5x_cublas", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"),
    ("cutlass_80_tensorop_s16816gemm_relu_f16_256x128_32x3_nn_align8", "cutlass_80_tensorop_s16816gemm_relu_f16"),
    ("void cutlass::Kernel<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_32x32_128x2_tn_align8>(T1::Params)",
     "cutlass_80_wmma_tensorop_f16_s161616gemm_f16"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GemmShape<128, 128, 32>>>"
     "(T1::Params)", "GemmUniversal"),
    ("void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*, "
     "float const*, float*, float const*, float const*, float const*)", "splitKreduce_kernel"),
    (FMHA, "fmha_fwd_loop_kernel"),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, Flash_kernel_traits"
     "<128, 128, 64, 4, bfloat16_t>>, 0, 0, 0, 0, 0, 1, 0, 0>(Flash_fwd_params)", "flash_fwd_kernel"),
    ("void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>,"
     " at::detail::Array<char *, 3>>(int, at::native::AddFunctor<float>, at::detail::Array<char *, 3>)",
     "vectorized_elementwise_kernel"),
    ("void at::native::<unnamed>::softmax_warp_forward<float, float, float, 10, false, false>(float *, "
     "const float *, int, int, int, const bool *, int, bool)", "softmax_warp_forward"),
    ("void at::native::elementwise_kernel<128, 2, [lambda(int) (instance 1)]>(int, T3)", "elementwise_kernel"),
    # Triton / Inductor
    ("triton_poi_fused_add_0", "triton_poi_fused_add"),
    ("triton_red_fused__softmax_12", "triton_red_fused__softmax"),
    ("triton_per_fused_native_layer_norm_3", "triton_per_fused_native_layer_norm"),
    ("fused_attention_kernel_0123456789abcdef", "fused_attention_kernel"),
    # mangled (ncu --print-kernel-base mangled)
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10AddFunctorIfEEEEviT0_",
     "vectorized_elementwise_kernel"),
    ("_Z6kernelPf", "kernel"),
    # plain / odd input
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
    ("foo<unbalanced(", "foo"),
    ("", ""),
    (None, ""),
])
def test_family(name, family):
    assert normalize_kernel_name(name) == family


def test_ncu_and_nsys_spellings_share_a_signature():
    old_ncu = FMHA
    nsys = ("void fmha_fwd_loop_kernel<FMHA_kernel_traits<128, 32, 16, 1, 4, 8, __half>, 0, 0, 0>"
            "(FMHA_fprop_params)")
    assert kernel_signature_key(old_ncu) == kernel_signature_key(nsys)
    assert kernel_signature_key("void k<float, 128>(float const*, int)") == \
        kernel_signature_key("k<float,128>(const float *, int)")
    assert kernel_signature_key("void a::f<x<int> >(int)") == kernel_signature_key("a::f<x<int>>()")


def test_template_arguments_still_distinguish_signatures():
    add = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    mul = "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>(int)"
    assert kernel_signature_key(add) != kernel_signature_key(mul)
    assert kernel_base_name(add) == kernel_base_name(mul) == "vectorized_elementwise_kernel"


def test_tile_variants_differ_at_base_level_only():
    a, b = "ampere_sgemm_128x128_tn", "ampere_sgemm_32x32_sliced1x4_tn"
    assert kernel_base_name(a) != kernel_base_name(b)
    assert normalize_kernel_name(a) == normalize_kernel_name(b)


def test_names_without_tiles_are_kept_whole():
    for n in ("flash_fwd_kernel", "reduce_kernel", "sgemm_tn", "kernel2x", "conv2d_fprop"):
        assert normalize_kernel_name(n) == n


@pytest.mark.parametrize("name, words", [
    ("void sptrsv_level_kernel<double>(const int *, const int *, const double *, const int *, "
     "int, int, double *)", "sptrsv_level_kernel<double>"),
    ("void at::native::(anonymous namespace)::fill<float>(float *, int)",
     "at::native::(anonymous namespace)::fill<float>"),
    ("Fan2", "Fan2"),
    ("saxpy(double *, double *, double *, double, int)", "saxpy"),
    ("void k<(int)4>(" + "float *, " * 40 + "int)", "k<(int)4>"),
])
def test_a_kernel_name_in_a_sentence_drops_its_parameter_list_whole(name, words):
    assert without_parameters(name) == words


def test_a_name_still_too_long_for_a_sentence_is_cut_with_an_ellipsis():
    out = without_parameters("void " + "x" * 200 + "(int)", max_len=80)
    assert len(out) == 80 and out.endswith("…") and "(" not in out
