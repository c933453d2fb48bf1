"""Kernel catalog of the trace generator: realistic kernel names (taken from or modelled on real
exports) with their launch geometry, and :func:`kernel_info` for names outside the catalog.

A :class:`KernelInfo` is what a KERNEL row repeats for every launch of one kernel function
(names, grid/block, registers, shared memory in bytes, launch API, category, Tensor Core use).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

@dataclass(frozen=True)
class KernelInfo:
    """Static facts of one kernel function (what a KERNEL row repeats for each launch)."""

    demangled: str
    short: str
    mangled: str | None = None  # None: nsys stores the demangled id (library kernels, §2.1)
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    registers: int = 32
    static_smem: int = 0
    dynamic_smem: int = 0
    api: str = "cudaLaunchKernel"
    category: str = "other"  # gemm | attention | elementwise | reduction | norm | optimizer | nccl
    tensor_core: bool = False
    cluster: tuple[int, int, int] = (0, 0, 0)


_AT = "void at::native::"
KERNEL_CATALOG: dict[str, KernelInfo] = {
    # --- Tensor Core GEMMs / attention (Hopper) ---------------------------------------------
    "gemm_bf16_sm90": KernelInfo(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        grid=(132, 1, 1), block=(384, 1, 1), registers=168, dynamic_smem=213_196,
        api="cuLaunchKernel", category="gemm", tensor_core=True, cluster=(1, 1, 1)),
    "nvjet": KernelInfo(
        "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT", "nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT",
        grid=(2, 66, 1), block=(384, 1, 1), registers=168, dynamic_smem=221_500,
        api="cuLaunchKernelEx", category="gemm", tensor_core=True, cluster=(2, 1, 1)),
    "flash_fwd": KernelInfo(
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, "
        "(bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, "
        "(int)4, cutlass::bfloat16_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, "
        "(bool)0, (bool)0>(flash::Flash_fwd_params)",
        "flash_fwd_kernel",
        "_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass"
        "10bfloat16_tE19Flash_kernel_traitsILi128ELi128ELi64ELi4ES3_EELb0ELb0ELb0ELb0ELb0ELb1ELb0ELb0"
        "EEEvNS_16Flash_fwd_paramsE",
        grid=(8, 24, 16), block=(128, 1, 1), registers=255, dynamic_smem=49_152,
        category="attention", tensor_core=True),
    "flash_bwd": KernelInfo(
        "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<(int)128, "
        "(int)64, (int)128, (int)8, (int)2, (int)4, (int)2, (bool)0, (bool)0, cutlass::bfloat16_t, "
        "Flash_kernel_traits<(int)128, (int)64, (int)128, (int)8, cutlass::bfloat16_t>>, (bool)1, "
        "(bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0>(flash::Flash_bwd_params)",
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        "_ZN5flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_kernelI23Flash_bwd_kernel_traitsILi128ELi64"
        "ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128ELi64ELi128EL"
        "i8ES3_EELb1ELb0ELb0ELb0ELb0ELb1ELb0EEEvNS_16Flash_bwd_paramsE",
        grid=(16, 24, 16), block=(256, 1, 1), registers=255, dynamic_smem=114_688,
        category="attention", tensor_core=True),
    "gemm_fp16_volta": KernelInfo(
        "volta_h884gemm_256x128_ldg8_nn", "volta_h884gemm_256x128_ldg8_nn",
        grid=(32, 8, 1), block=(256, 1, 1), registers=232, static_smem=0, dynamic_smem=65_536,
        api="cudaLaunchKernel", category="gemm", tensor_core=True),
    # --- FP32 SIMT GEMMs (no Tensor Cores) ----------------------------------------------------
    "sgemm_volta": KernelInfo(
        "volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn", grid=(64, 16, 1), block=(256, 1, 1),
        registers=126, static_smem=12_544, category="gemm"),
    "sgemm_ampere": KernelInfo(
        "ampere_sgemm_64x64_nn", "ampere_sgemm_64x64_nn", grid=(128, 16, 1), block=(128, 1, 1),
        registers=122, static_smem=8_192, category="gemm"),
    "sgemm_sm80_ffma": KernelInfo(
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
        "alignc4_execute_kernel_cublas",
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
        "alignc4_execute_kernel_cublas",
        grid=(32, 16, 1), block=(128, 1, 1), registers=168, dynamic_smem=36_864,
        api="cuLaunchKernel", category="gemm"),
    # --- memory-bound PyTorch kernels --------------------------------------------------------
    "ew_add": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, "
        "std::array<char *, (unsigned long)3>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEE"
        "viT0_T1_",
        grid=(46_800, 1, 1), block=(128, 1, 1), registers=32, category="elementwise"),
    "ew_mul": KernelInfo(
        _AT + "elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl<at::native::"
        "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>(at::"
        "TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
        "elementwise_kernel", None, grid=(46_800, 1, 1), block=(128, 1, 1), registers=32,
        category="elementwise"),
    "ew_gelu": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)8, at::native::GeluCUDAKernelImpl(at::"
        "TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]::operator ()() const::"
        "[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], "
        "std::array<char *, (unsigned long)2>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_18Tensor"
        "IteratorBaseENS0_8GeluTypeEENKUlvE_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEvi"
        "T0_T1_",
        grid=(23_400, 1, 1), block=(128, 1, 1), registers=30, category="elementwise"),
    "ew_copy_bf16": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_cuda(at::"
        "TensorIteratorBase &)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>"
        "(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18Tens"
        "orIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
        grid=(46_800, 1, 1), block=(128, 1, 1), registers=28, category="elementwise"),
    "ew_fill": KernelInfo(
        _AT + "vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
        "std::array<char *, (unsigned long)1>>(int, T2, T3)",
        "vectorized_elementwise_kernel",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0"
        "_T1_",
        grid=(1, 1, 1), block=(128, 1, 1), registers=16, category="elementwise"),
    "reduce_mean": KernelInfo(
        _AT + "reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, at::native::MeanOps<"
        "float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)",
        "reduce_kernel",
        "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffffEEjfLi4ELi4EEEEEvT1_",
        grid=(975, 1, 1), block=(32, 16, 1), registers=32, static_smem=16, category="reduction"),
    "layer_norm": KernelInfo(
        _AT + "<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, const T1 *, "
        "const T1 *, const T1 *, T2 *, T2 *, T1 *)",
        "vectorized_layer_norm_kernel",
        "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_"
        "kernelIffLb0EEEviT0_PKT_S6_S6_PS3_S7_PS4_",
        grid=(15_600, 1, 1), block=(32, 32, 1), registers=39, static_smem=24, category="norm"),
    "softmax": KernelInfo(
        _AT + "<unnamed>::cunn_SoftMaxForward<(int)4, float, float, float, at::native::<unnamed>::"
        "SoftMaxForwardEpilogue>(T4 *, const T2 *, int)",
        "cunn_SoftMaxForward", None, grid=(8_192, 1, 1), block=(512, 1, 1), registers=38,
        dynamic_smem=2_048, category="norm"),
    "adam": KernelInfo(
        _AT + "<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<"
        "(int)4>, at::native::<unnamed>::FusedAdamMathFunctor<float, (int)4, (at::native::ADAM_MODE)"
        "1, (bool)0>, bool, float *, double, double, double, double, double, bool, bool, float *, "
        "float *>(T1, T2, T3...)",
        "multi_tensor_apply_kernel", None, grid=(320, 1, 1), block=(512, 1, 1), registers=64,
        category="optimizer"),
    "triton_fused": KernelInfo(
        "triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0", grid=(64, 1, 1),
        block=(128, 1, 1), registers=24, api="cuLaunchKernel", category="elementwise"),
    # --- generated / generic GEMMs whose names cannot tell the math path ----------------------
    "triton_mm": KernelInfo(
        "triton_tem_fused_mm_0", "triton_tem_fused_mm_0", grid=(132, 1, 1), block=(256, 1, 1),
        registers=168, dynamic_smem=98_304, api="cuLaunchKernel", category="gemm"),
    "triton_addmm": KernelInfo(
        "triton_tem_fused_addmm_1", "triton_tem_fused_addmm_1", grid=(264, 1, 1),
        block=(256, 1, 1), registers=168, dynamic_smem=98_304, api="cuLaunchKernel",
        category="gemm"),
    "cutlass_generic": KernelInfo(
        "void cutlass::Kernel2<GemmKernel>(GemmKernel::Params)", "Kernel2",
        "_ZN7cutlass7Kernel2I10GemmKernelEEvNT_6ParamsE", grid=(132, 1, 1), block=(128, 1, 1),
        registers=232, dynamic_smem=81_920, category="gemm"),
    "nvfuser_kernel": KernelInfo(
        "<unnamed>::nvfuser_matmul_f0_c1_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)2, (int)2>, "
        "<unnamed>::Tensor<<unnamed>::__half, (int)2, (int)2>)",
        "nvfuser_matmul_f0_c1_r0_g0", grid=(132, 1, 1), block=(128, 1, 1), registers=128,
        dynamic_smem=65_536, api="cuLaunchKernel", category="gemm"),
    # --- communication -------------------------------------------------------------------------
    "nccl_allreduce": KernelInfo(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE",
        grid=(32, 1, 1), block=(640, 1, 1), registers=96, static_smem=21_568,
        dynamic_smem=82_240, api="cudaLaunchKernelExC", category="nccl", cluster=(1, 1, 1)),
}

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def kernel_info(name: str) -> KernelInfo:
    """Catalog entry for a key (``"nvjet"``) or a full name; unknown names get a derived short
    name (namespace, template arguments and parameter list stripped) and default geometry."""
    if name in KERNEL_CATALOG:
        return KERNEL_CATALOG[name]
    for info in KERNEL_CATALOG.values():
        if info.demangled == name:
            return info
    short = name
    if short.startswith("void "):
        short = short[5:]
    prev = None
    while prev != short:  # strip nested template argument lists
        prev, short = short, _TEMPLATE_ARGS.sub("", short)
    short = short.split("(")[0].split("::")[-1].strip() or name
    return KernelInfo(name, short)

