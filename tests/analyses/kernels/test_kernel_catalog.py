"""Kernel-name catalogue: categories and Tensor Core evidence on real kernel names."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from nsys_diag.analyses.kernels.catalog import (
    CATEGORIES,
    catalogue,
    classify_category,
    display_name,
    tensor_core_evidence,
    tensor_core_from_name,
)

# (demangled name, short name or None, category, tensor_core, basis)
CASES = [
    # --- cuBLAS / cuBLASLt GEMMs, Volta → Blackwell
    ("volta_h884gemm_64x64_ldg8_nn", None, "gemm", True, "tc"),
    ("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", None, "gemm", True, "tc"),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", None, "gemm", True, "tc"),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", None, "gemm", True, "tc"),
    ("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn", None, "gemm", True, "tc"),
    ("ampere_tf32_s1688gemm_tf32_128x128_16x3_nn", None, "gemm", True, "tc"),
    ("ampere_i8816gemm_int8_128x128_ldg16_stages_64x3_nt", None, "gemm", True, "tc"),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16_kernel", None, "gemm", True, "tc"),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x16_stage4_warpsize2x2x1_"
     "tensor16x8x8_kernel", None, "gemm", True, "tc"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
     "execute_segment_k_off_kernel__5x_cublas", None, "gemm", True, "tc"),
    ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", None, "gemm", True, "tc"),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", None, "gemm", True, "tc"),
    ("nvjet_sss_tf32_128x256_TNT", None, "gemm", True, "tc"),
    # --- CUTLASS: the short name 'Kernel' says nothing; the demangled name decides
    ("void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>"
     "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)", "Kernel",
     "gemm", True, "tc"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
     "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", "Kernel2",
     "gemm", True, "tc"),
    ("void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_"
     "1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma>(cutlass3x_sm90_tensorop_gemm_bf16_"
     "bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma::Params)",
     "device_kernel", "gemm", True, "tc"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int>, "
     "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, "
     "cute::tuple<cute::C<2>>, cutlass::gemm::KernelTmaWarpSpecialized>>>>(T1::Params)",
     "device_kernel", "gemm", True, "tc"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::collective::"
     "CollectiveMma<cutlass::gemm::MainloopSm100TmaUmmaWarpSpecialized<3, 2>>>>(T1::Params)",
     "device_kernel", "gemm", True, "tc"),
    # --- false friends: FP32 SIMT paths that look like GEMMs
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
     "alignc4_execute_kernel__5x_cublas", None, "gemm", False, "no_tc"),
    ("volta_sgemm_128x64_nn", None, "gemm", False, "no_tc"),
    ("ampere_sgemm_128x64_tn", None, "gemm", False, "no_tc"),
    ("maxwell_sgemm_128x64_nt", None, "gemm", False, "no_tc"),
    ("cutlass_80_simt_sgemm_128x128_8x4_nn_align1", None, "gemm", False, "no_tc"),
    ("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<"
     "cutlass::gemm::warp::MmaSimt<float>>>>(T1::Params)", "Kernel", "gemm", False, "no_tc"),
    ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
     "cublasGemvParams<cublasGemvTensorStridedBatched<const float>, float>>(T13, T6, T6)",
     "gemv2T_kernel_val", "gemm", False, "n/a"),
    ("void gemvx::kernel<int, int, float, float, float, float, false, true, true, false, 7, false, "
     "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<const float>, float>>(T13)",
     "kernel", "gemm", False, "n/a"),
    ("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, false, cublasGemvTensorStridedBatched<"
     "const float>>(cublasGemmSmallNParams<const float, float>)", "gemmSN_TN_kernel", "gemm",
     False, "n/a"),
    ("void dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensor<const float>, float>>("
     "cublasDotParams<cublasGemvTensor<const float>, float>)", "dot_kernel", "reduction", False,
     "n/a"),
    ("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>"
     "(cublasSplitKParams<float>, const float *, const float *, float *)", "splitKreduce_kernel",
     "reduction", False, "n/a"),
    # --- cuDNN convolutions
    ("sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_stage3_"
     "warpsize2x2x1_g1_tensor16x8x16_kernel_cudnn", None, "conv", True, "tc"),
    ("sm86_xmma_fprop_implicit_gemm_indexed_wo_smem_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize32x16x32"
     "_stage1_warpsize2x1x1_g1_tensor16x8x8", None, "conv", True, "tc"),
    ("sm80_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64_stage4_"
     "warpsize2x2x1_g1_tensor16x8x16", None, "conv", True, "tc"),
    ("volta_fp16_s884cudnn_fp16_256x128_ldg8_splitK_relu_f2f_exp_small_nhwc2nchw_tn_v1", None,
     "conv", True, "tc"),
    ("turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", None, "conv", True,
     "tc"),
    ("volta_scudnn_128x64_relu_interior_nn_v1", None, "conv", False, "no_tc"),
    ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", None, "conv", False, "no_tc"),
    ("void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, "
     "true>(int, int, int, const float *, int, float *, const float *, kernel_conv_params, "
     "unsigned long long, int, float, float, int, const float *, const float *, bool, int, int)",
     "implicit_convolve_sgemm", "conv", False, "no_tc"),
    ("void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, "
     "const float *, int, float *, const float *, kernel_grad_params, unsigned long long, int, "
     "float, int, int, int, int)", "wgrad_alg0_engine", "conv", False, "no_tc"),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(cudnnTensorStruct,"
     " const float *, cudnnTensorStruct, float *, const float *, const float *, float, float, "
     "float *, float *, float *, float *, float, float)", "bn_fw_tr_1C11_kernel_NCHW", "reduction",
     False, "no_tc"),
    ("void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>"
     "(cudnn::ops::nchw2nhwc_params_t<float>, const __half *, __half *)", "nchwToNhwcKernel",
     "memory", False, "no_tc"),
    # --- attention
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, "
     "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, "
     "(int)4, cutlass::bfloat16_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0, "
     "(bool)0>(flash::Flash_fwd_params)", "flash_fwd_kernel", "attention", True, "tc"),
    ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, "
     "4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, true, false, "
     "false>(Flash_bwd_params)", "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", "attention", True,
     "tc"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, "
     "false, false, cutlass::half_t>, false, false, false, false, false, false>"
     "(pytorch_flash::Flash_fwd_params)", "flash_fwd_kernel", "attention", True, "tc"),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>, cutlass::bfloat16_t, float>>>>"
     "(T1::Params)", "device_kernel", "attention", True, "tc"),
    ("void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, "
     "false, cutlass::bfloat16_t>>(Flash_bwd_params)", "flash_bwd_dot_do_o_kernel", "attention",
     False, "no_tc"),
    ("void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, "
     "false, cutlass::bfloat16_t>, true, false>(Flash_bwd_params, int)",
     "flash_bwd_convert_dq_kernel", "attention", False, "no_tc"),
    ("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
     "false, cutlass::bfloat16_t>, 4, 1, true>(flash::Flash_fwd_params)",
     "flash_fwd_splitkv_combine_kernel", "attention", False, "no_tc"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::"
     "half_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
     "fmha_cutlassF_f16_aligned_64x64_rf_sm80", "attention", True, "tc"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
     None, "attention", True, "tc"),
    ("void vllm::paged_attention_v1_kernel<unsigned short, unsigned short, 128, 16, 128, "
     "(vllm::Fp8KVCacheDataType)0, false>(unsigned short *, const unsigned short *, const unsigned "
     "short *, const unsigned short *, int, float, const int *, const int *, int, const float *, "
     "int, int, int, const float *, const float *)", "paged_attention_v1_kernel", "attention", False,
     "no_tc"),
    ("void vllm::paged_attention_v2_reduce_kernel<unsigned short, 128, 128, 512>(unsigned short *, "
     "const float *, const float *, const unsigned short *, const int *, int)",
     "paged_attention_v2_reduce_kernel", "attention", False, "no_tc"),
    ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2U, 4U, 8U, "
     "16U, 1U, 8U, flashinfer::paged_kv_t<__half, int>>(flashinfer::paged_kv_t<__half, int>)",
     "BatchDecodeWithPagedKVCacheKernel", "attention", False, "no_tc"),
    ("_attn_fwd", None, "attention", False, "unknown"),
    # --- Triton / generated code: Tensor Cores only when named for MMA
    ("triton_poi_fused__to_copy_add_mul_0", None, "elementwise", False, "n/a"),
    ("triton_red_fused_native_layer_norm_0", None, "reduction", False, "n/a"),
    ("triton_per_fused__softmax_1", None, "reduction", False, "n/a"),
    ("triton_tem_fused_mm_0", None, "gemm", False, "unknown"),
    ("triton_tem_fused_addmm_mma_3", None, "gemm", True, "tc"),
    ("nvfuser_none_f0_c0_r0_g0", None, "other", False, "unknown"),
    # --- communication
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     "ncclDevKernel_SendRecv", "communication", False, "n/a"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "ncclKernel_AllReduce_RING_LL_Sum_float",
     "communication", False, "n/a"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "ncclDevKernel_AllGather_RING_LL", "communication", False, "n/a"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "communication", False, "n/a"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData *, vllm::RankSignals, "
     "vllm::Signal *, __nv_bfloat16 *, int, int)", "cross_device_reduce_1stage", "communication",
     False, "n/a"),
    # --- memory
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::"
     "operator ()() const::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>, (int)4,"
     " TrivialOffsetCalculator<(int)1, unsigned int>, TrivialOffsetCalculator<(int)1, unsigned int>, "
     "at::native::memory::LoadWithCast<(int)1>, at::native::memory::StoreWithCast<(int)1>>(int, T1, "
     "T2, T4, T5, T6, T7)", "unrolled_elementwise_kernel", "memory", False, "n/a"),
    ("void at::native::<unnamed>::CatArrayBatchedCopy_vectorized<at::native::<unnamed>::OpaqueType<"
     "(unsigned int)2>, unsigned int, (int)1, (int)128, (int)1, (int)16, (int)8>(char *, at::native::"
     "<unnamed>::CatArrInputTensorMetadata<T1, T2, T4, T5>, at::native::<unnamed>::TensorSizeStride<"
     "T2, (unsigned int)4>, int, T2)", "CatArrayBatchedCopy_vectorized", "memory", False, "n/a"),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<c10::Half>, "
     "std::array<char *, (unsigned long)1>>(int, T2, T3)", "vectorized_elementwise_kernel", "memory",
     False, "n/a"),
    # --- elementwise / reduction / other
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, "
     "std::array<char *, (unsigned long)3>>(int, T2, T3)", "vectorized_elementwise_kernel",
     "elementwise", False, "n/a"),
    ("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, void at::"
     "native::templates::cuda::normal_and_transform<c10::Half, float>(at::TensorIteratorBase &, T3, "
     "T4)>(long, at::PhiloxCudaState, T3, T4)", "distribution_elementwise_grid_stride_kernel",
     "elementwise", False, "n/a"),
    ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata"
     "<(int)4>, at::native::<unnamed>::FusedAdamMathFunctor<float, (int)4>>(T1, T2)",
     "multi_tensor_apply_kernel", "elementwise", False, "n/a"),
    ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MeanOps"
     "<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)", "reduce_kernel",
     "reduction", False, "n/a"),
    ("void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, "
     "const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)", "vectorized_layer_norm_kernel",
     "reduction", False, "n/a"),
    ("void <unnamed>::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>"
     "(T2 *, const T1 *, int, int, int, const bool *, int, bool)", "softmax_warp_forward",
     "reduction", False, "n/a"),
    ("saxpy(double *, double *, double *, double, int)", "saxpy", "elementwise", False, "n/a"),
    ("void probe_GPU2<128, 4>(int*, int*, int, short*)", "probe_GPU2", "other", False, "n/a"),
    ("void upsample_bilinear2d_out_frame<float, float>(int, float, float, bool, at::GenericPackedTensor"
     "Accessor<float, 4UL>, at::GenericPackedTensorAccessor<float, 4UL>)",
     "upsample_bilinear2d_out_frame", "other", False, "n/a"),
]


@pytest.mark.parametrize("name,short,category,tc,basis", CASES,
                         ids=[c[1] or c[0][:48] for c in CASES])
def test_name_table(name, short, category, tc, basis):
    shorts = None if short is None else [short]
    assert classify_category([name], shorts)[0] == category
    flags, evidence = tensor_core_from_name([name], shorts)
    assert bool(flags[0]) is tc
    ev = tensor_core_evidence([name], shorts)
    assert ev["tc_basis"].iloc[0] == basis
    if basis in ("tc", "no_tc", "unknown") or "gemv" in name:
        assert "name heuristic" in evidence[0]


def test_vectorised_order_and_shape():
    names = [c[0] for c in CASES]
    shorts = [c[1] or "" for c in CASES]
    cats = classify_category(names, shorts)
    flags, ev = tensor_core_from_name(names, shorts)
    assert list(cats) == [c[2] for c in CASES]
    assert list(flags) == [c[3] for c in CASES]
    assert len(ev) == len(names)
    assert set(cats) <= set(CATEGORIES)


def test_pandas_index_input_and_empty():
    import pandas as pd

    idx = pd.Index(["nvjet_tst_128x64", "ncclDevKernel_SendRecv"])
    assert list(classify_category(idx)) == ["gemm", "communication"]
    assert classify_category([]).shape == (0,)
    flags, ev = tensor_core_from_name([])
    assert flags.shape == (0,) and ev.shape == (0,)
    assert catalogue([]).empty


def test_short_name_mismatch_rejected():
    with pytest.raises(ValueError):
        classify_category(["a", "b"], ["a"])


def test_display_name_prefers_informative_short_name():
    assert display_name("void flash::flash_fwd_kernel<...>(...)", "flash_fwd_kernel") == \
        "flash_fwd_kernel"
    long = "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(x)"
    label = display_name(long, "Kernel", max_len=40)
    assert label.startswith("void cutlass::Kernel<cutlass_80") and len(label) == 40


def _trace_names(shared, rel: str) -> tuple[list[str], list[str]]:
    path = shared(rel)
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute(
            "SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName"
        ).fetchall()
    finally:
        con.close()
    return [r[0] for r in rows], [r[1] for r in rows]


def test_fastvideo_real_names(shared):
    names, shorts = _trace_names(shared, "nsys/fastvideo_train_2xh100_2026.2.sqlite")
    cat = catalogue(names, shorts)
    cat["name"] = names
    cat["short"] = shorts
    nccl = cat[cat["short"].str.startswith("nccl")]
    flash = cat[cat["short"].str.contains("flash")]
    nvjet = cat[cat["short"].str.startswith("nvjet")]
    assert len(nccl) and len(flash) and len(nvjet)
    assert (nccl["category"] == "communication").all()
    assert flash["tensor_core"].all() and (flash["category"] == "attention").all()
    assert nvjet["tensor_core"].all() and (nvjet["category"] == "gemm").all()
    others = cat[~cat.index.isin(nccl.index.union(flash.index).union(nvjet.index))]
    assert not others["tensor_core"].any()  # elementwise/copy/norm kernels are not TC
    assert (cat.loc[cat["short"] == "reduce_kernel", "category"] == "reduction").all()
    assert (cat.loc[cat["short"] == "CatArrayBatchedCopy_vectorized", "category"] == "memory").all()
    assert set(cat["category"]) <= set(CATEGORIES)


@pytest.mark.parametrize("rel", ["nsys/nvfuser_matmul_h200_2024.6.sqlite",
                                 "nsys/saxpy_mpi_a100_2022.2.sqlite",
                                 "nsys/mordred_rtx6000_2021.sqlite"])
def test_other_real_traces(shared, rel):
    names, shorts = _trace_names(shared, rel)
    cat = catalogue(names, shorts)
    assert set(cat["category"]) <= set(CATEGORIES)
    by_short = dict(zip(shorts, cat["tensor_core"]))
    for short, tc in by_short.items():
        assert tc == short.startswith("nvjet"), short
    if "nvfuser_none_f0_c0_r0_g0" in by_short:
        row = cat[np.asarray(shorts) == "nvfuser_none_f0_c0_r0_g0"].iloc[0]
        assert row["tc_basis"] == "unknown"
