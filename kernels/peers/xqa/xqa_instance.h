/* Between the `xqa` peer (kernels/peers/xqa.cu) and TensorRT-LLM's XQA kernel as
 * FlashInfer ships it (mha.cu). XQA is configured by macros (head size, input type,
 * page size, query heads per kv head), so each configuration is its own translation
 * unit under kernels/peers/xqa/, built from xqa_instance.cuh; this header is all that
 * the peer sees of them. */
#ifndef ATTNBENCH_XQA_INSTANCE_H
#define ATTNBENCH_XQA_INSTANCE_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* The configuration every instantiation shares: FlashInfer's module for head size 128,
 * a KV cache of the input type (CACHE_ELEM_ENUM 0) and 64-token pages. */
#define XQA_HEAD_DIM 128
#define XQA_PAGE_TOKENS 64
/* Keys of one CTA tile (mha.cu's ctaTile.x): its split-KV unit. */
#define XQA_CTA_KEYS 256

/* One launch, as FlashInfer's launchMHAFlashInfer takes it. Strides are in elements. */
typedef struct xqa_launch_args {
    void *out;                /* [batch, h, d] */
    const void *q;            /* [batch, h, d] */
    const void *k_pool;       /* page p of kv head j at k_pool + p*stride_page + j*stride_head */
    const void *v_pool;
    const int32_t *pages;     /* [batch, pages_per_seq], K and V share it */
    uint32_t pages_per_seq;   /* the row length of pages: max_seq_len / XQA_PAGE_TOKENS */
    const uint32_t *seq_lens; /* [batch] */
    uint32_t batch, kv_heads;
    uint32_t sub_seqs;        /* CTAs per (sequence, kv head): XQA's multi-block split */
    float q_scale;            /* the softmax scale times sqrt(d) */
    uint64_t stride_page, stride_token, stride_head;
    uint32_t *semaphores;     /* [batch * kv_heads], zero before the first launch */
    void *scratch;            /* scratch_bytes(sub_seqs * batch * kv_heads) */
    uint32_t smem_bytes;      /* what setup returned */
    int pdl;                  /* programmatic dependent launch */
} xqa_launch_args_t;

typedef struct xqa_instance {
    int fp16;   /* 1: fp16 inputs and cache, 0: bf16 */
    int group;  /* query heads per kv head (HEAD_GRP_SIZE) */
    /* Sets the kernel's dynamic shared memory on the current device; returns its size. */
    cudaError_t (*setup)(uint32_t *smem_bytes);
    cudaError_t (*launch)(const xqa_launch_args_t *a, cudaStream_t stream);
    /* Scratch of the multi-block partials for this many (sub-sequence, kv head) CTAs. */
    size_t (*scratch_bytes)(size_t sub_seq_ctas);
} xqa_instance_t;

/* Every instantiation: (input type, its INPUT_FP16, HEAD_GRP_SIZE). Each has its file
 * kernels/peers/xqa/<type>_g<group>.cu. */
#define XQA_INSTANCES(X)                                                                 \
    X(fp16, 1, 1) X(fp16, 1, 2) X(fp16, 1, 4) X(fp16, 1, 8) X(fp16, 1, 16) X(fp16, 1, 32) \
    X(bf16, 0, 1) X(bf16, 0, 2) X(bf16, 0, 4) X(bf16, 0, 8) X(bf16, 0, 16) X(bf16, 0, 32)

#define XQA_DECLARE(type, fp16, group) extern const xqa_instance_t xqa_##type##_g##group;
XQA_INSTANCES(XQA_DECLARE)
#undef XQA_DECLARE

#endif
