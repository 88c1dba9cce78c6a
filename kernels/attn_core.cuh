/* The attention core shared by `fused` and `bifurcated`: one CTA computes the
 * softmax-weighted sum of V over a range of key positions for up to a tile of query
 * rows that all read the same kv head, and leaves either the final output or a
 * partial softmax state (m, l, unnormalised acc) that the merge kernel combines by
 * log-sum-exp.
 *
 * Two CTA bodies:
 *
 * - Tensor-core body (fp16/bf16, d a multiple of 16, instantiated for d = 64, 80,
 *   96, 128, 256). 4 warps, 128 threads. Keys stream through shared memory in
 *   tiles of ATTN_KEY_TILE = 64 rows of K and of V, loaded with 16-byte
 *   cp.async.cg (L2 only) into a 2..4-stage ring, so that two or three tiles are in
 *   flight while one is consumed; the next tile's row addresses (block-table and
 *   indirection look-ups) are fetched one tile earlier into a small ring of row
 *   indices (offset / d, 32 bits, so a 64-row tile of d=128 keeps two CTAs per SM),
 *   so the dependent loads of paged/indirect layouts never stall the copy issue;
 *   rows of one matrix (no block table, no indirection) take their addresses from
 *   the CTA's first row instead, at constant strides. Rows past the end of the range
 *   are zero-filled by cp.async's src-size 0 operand (never read: paged pools hold
 *   NaN there) and their logits set to -inf.
 *   S = Q·Kᵀ and O += P·V use mma.sync m16n8k16 with fp32 accumulators; K rows are
 *   the col-major B operand via ldmatrix, V via ldmatrix.trans, and P goes from the
 *   accumulator layout straight into A fragments. The shared layout XORs 16-byte
 *   chunks with (row & 7) when a row holds a multiple of 8 chunks and is padded by
 *   one chunk otherwise, so every ldmatrix phase hits 8 distinct bank groups.
 *   Two warp decompositions:
 *     KEYSPLIT (decode, one stream's p heads: few rows): every warp takes 16 of
 *       the 64 keys of each tile and all 16*MT rows, keeping its own running
 *       max/sum/O; the 4 warps are merged through shared memory at the end.
 *     ROWSPLIT (bifurcated context, W*p rows): every warp takes 16 rows and all
 *       64 keys, so a 64-row tile reads each K/V element once for all its rows.
 *
 * - The tensor-core body on an 8-bit cache (--kv-dtype fp8|int8; KEYSPLIT and ROWSPLIT
 *   at d = 64, 128, 256): tiles of 1-byte codes, in twice the stages, converted to T between
 *   shared memory and the mma (tc_scores8, tc_accumulate_pv8: ldmatrix of byte pairs,
 *   then cvt), exact since every code is a T value; K's scale is folded into the softmax
 *   scale and V's into the output, once per CTA, so the inner loop has no dequantising
 *   multiply. A traits parameter (tc_traits' KV) selects it at compile time, so the
 *   16-bit instantiations hold none of its code.
 *
 * - CUDA-core body (fp32, or d not a multiple of 16; any d multiple of 8 up to
 *   256; an 8-bit cache with fp32 queries or at the other head dims). Same grid,
 *   4 warps, 8 query rows per CTA held in shared memory as fp32. Warps take
 *   interleaved 32-key slices; each lane computes one key's logits for the 8 rows
 *   with 16-byte loads (8-byte ones of codes), softmax with warp shuffles, then the
 *   lanes own dims of O and accumulate V rows read coalesced. Correctness first.
 *
 * Grid: a flat 1-D grid of units x kv heads x splits x row tiles, row tiles
 * fastest, so CTAs that read the same keys (different row tiles of one
 * (unit, head, split)) run side by side and share L2. A unit is a stream (fused,
 * decode part) or a request (bifurcated context part).
 *
 * Softmax runs in the log2 domain (logits scaled by scale*log2(e), exp2);
 * partials store m in natural-log units for the merges (state_merge.cuh).
 *
 * The tensor-core body's code: its shape (tc_shape) and compile-time choices
 * (tc_traits), a warp's steps per tile (tc_scores, tc_softmax, tc_accumulate_pv)
 * and its epilogue (tc_epilogue), and the kernel (attn_tc_kernel): the CTA's ring of
 * K/V tiles, its prologue and the loop over the tiles. */
#ifndef ATTNBENCH_ATTN_CORE_CUH
#define ATTNBENCH_ATTN_CORE_CUH

#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include "registry.h"
#include "../problem/kv_layout.h"
#include "../problem/query_rows.h"
#include "../problem/split_plan.h"

#define ATTN_KEY_TILE 64      /* keys per pipeline stage; split chunks are multiples of it */
#define ATTN_WARPS 4
#define ATTN_THREADS (32 * ATTN_WARPS)
#define ATTN_CC_ROWS 8        /* query rows per CTA on the CUDA-core path */
#define ATTN_SMEM_PER_SM 233472 /* H100/H200 shared memory per SM, when the device does not say */
#define ATTN_SMEM_RESERVED 1024 /* the driver's per-CTA reservation */
#define ATTN_LOG2E 1.4426950408889634f
#define ATTN_LN2 0.6931471805599453f

/* Programmatic dependent launch (Hopper): a merge launched with it (attn_launch_merge's
 * pdl) is set up while the grid before it finishes, once every CTA of that grid has
 * signalled (attn_grid_dependents_go) or exited, and waits here for that grid's
 * completion and memory before it reads a partial. Launched without it, both are
 * no-ops. */
__device__ __forceinline__ void attn_grid_dependency_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void attn_grid_dependents_go()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* How a key position becomes the offset of its K row (the V row is vstride further). */
enum { ADDR_CONTIG = 0, ADDR_PAGED = 1, ADDR_CTX = 2, ADDR_DEC = 3 };

/* A ragged batch on the dense grid (attn_params_t.ragged; geom.ctx_lens set): where a
 * unit's keys end, or begin, by its request's own context length. */
enum {
    ATTN_RAGGED_NONE = 0,
    ATTN_RAGGED_CTX = 1,  /* unit = request: its context part ends at its length (a paged
                             cache: at its last full block) */
    ATTN_RAGGED_DEC = 2,  /* unit = stream: its decode part runs from where its request's
                             context part ended to its own keys' end */
};

/* Everything one launch of the core needs; passed by value. */
typedef struct attn_params {
    kv_geometry_t geom;
    const void *q;               /* [B*W*q_len, h, d]: row (stream * q_len + j, head) */
    void *out;                   /* [B*W*q_len, h, d], written when nslots == 1 */
    const void *kv;              /* the buffer the address mode points into */
    const int32_t *table;        /* paged block table */
    const int32_t *indirection;  /* [B, W, L] or NULL */
    float *ws_acc;               /* [B*W*q_len*h, nslots, d] partial unnormalised outputs */
    float2 *ws_ml;               /* [B*W*q_len*h, nslots] partial (m, l) */
    unsigned int *counters;      /* [units, g, row_tiles] splits done, or NULL: merged by the last CTA */
    int64_t vstride;             /* elements from a K row to its V row */
    int heads, group;            /* h, p */
    int units, kv_heads;         /* grid extent: units x g x splits x row_tiles */
    int splits, row_tiles;
    int rows_per_cta;
    int rows_per_unit;           /* q_len*p (per stream) or W*q_len*p (per request) */
    int streams_per_unit;        /* query tokens per unit: q_len (per stream) or W*q_len; the
                                    "stream" of a row (row_target) is its query token's index */
    int addr_stream_mult;        /* the stream whose table/cache a unit reads: unit * this */
    int key_begin, key_end;      /* positions this launch covers */
    int chunk;                   /* keys per split */
    int nslots, slot_base;       /* partial slot of split s: slot_base + s */
    /* A ragged batch (fused): the grid walks a list of (unit, split) pairs, work_items of
     * them, longest chunks first (problem/ragged_plan.h), each unit's keys ending at its
     * own length (geom.ctx_lens); splits is then the most any unit has. NULL: the dense
     * units x splits grid. */
    const int32_t *work;
    int64_t work_items;
    int ragged;                  /* ATTN_RAGGED_*: the dense grid's units end (or begin) by their
                                    own lengths; CTAs past them hold no keys and leave an empty
                                    partial, so every slot is written */
    int dec_keys;                /* bifurcated's wide wgmma body: the decode keys of each stream,
                                    which it streams itself beside the context (0: none) */
    int fold;                    /* and whether each CTA folds its rows' partials and writes their
                                    output itself (bif_folds_in_cta) */
    int q_len;                   /* query tokens per stream */
    int causal_end;              /* keys - q_len + 1: query token j attends to positions below
                                    causal_end + j (row_key_end); q_len 1: every key */
    float scale_log2;
    const float *kv_scale;       /* an 8-bit cache's scales (attn_args_t.kv_scale), else NULL */
    int kv_scale_heads;          /* scales per tensor in it: 1 or g */
    int after_append;            /* launched as --step append's programmatic dependent: the query
                                    and each stream's last key are the append kernel's writes,
                                    read after its end (attn_tc_kernel's prologue) */
} attn_params_t;

/* ---------------------------------------------------------------- dtype traits */

template <typename T> struct dt;

template <> struct dt<__half> {
    static __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half from_f(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float a, float b)
    {
        __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

template <> struct dt<__nv_bfloat16> {
    static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ uint32_t pack(float a, float b)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

template <> struct dt<float> {
    static __device__ __forceinline__ float to_f(float x) { return x; }
    static __device__ __forceinline__ float from_f(float x) { return x; }
};

/* ---------------------------------------------------------------- KV storage traits */

/* The storage of the KV cache, a body's KV parameter: the query dtype T itself, or an
 * 8-bit cache's codes (problem_t.kv_quant), e4m3 (kv_fp8) or symmetric int8 (kv_int8),
 * which the bodies convert to T or float (exactly: every code is a T value) and
 * dequantise with the CTA's kv head's scales (kv_scales_of). */
struct kv_fp8 {};
struct kv_int8 {};

template <typename KV> struct kv_traits {
    typedef KV stored;                 /* the cache's element type */
    static constexpr bool Q8 = false;  /* holds codes */
};
template <> struct kv_traits<kv_fp8> {
    typedef uint8_t stored;
    static constexpr bool Q8 = true;
    static __device__ __forceinline__ float to_f(uint8_t c)
    {
        return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3)));
    }
};
template <> struct kv_traits<kv_int8> {
    typedef uint8_t stored;
    static constexpr bool Q8 = true;
    static __device__ __forceinline__ float to_f(uint8_t c) { return (float)(int8_t)c; }
};

/* Bytes I and J of r, two 8-bit codes, as a packed pair of T (byte I in the low half),
 * for the tensor-core body's B fragments. */
template <typename T, typename KV> struct kv_pair;
template <> struct kv_pair<__half, kv_fp8> {
    template <int I, int J> static __device__ __forceinline__ uint32_t of(uint32_t r)
    {
        const uint16_t two = (uint16_t)(I == 0 && J == 1 ? r : (I == 2 && J == 3 ? r >> 16 : __byte_perm(r, 0u, I | (J << 4))));
        uint32_t h;
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"(two));
        return h;
    }
};
template <> struct kv_pair<__half, kv_int8> {
    /* code + 128 as the low byte of the mantissa of 1024 (fp16 0x6400): 1024 + code + 128,
     * exact; less 1152 (0x6480) it is the code (FasterTransformer's conversion) */
    template <int I, int J> static __device__ __forceinline__ uint32_t of(uint32_t r)
    {
        const uint32_t biased = __byte_perm(r ^ 0x80808080u, 0x64646464u, I | (4 << 4) | (J << 8) | (4 << 12));
        uint32_t h;
        asm("sub.rn.f16x2 %0, %1, %2;\n" : "=r"(h) : "r"(biased), "r"(0x64806480u));
        return h;
    }
};
template <> struct kv_pair<__nv_bfloat16, kv_fp8> {
    template <int I, int J> static __device__ __forceinline__ uint32_t of(uint32_t r)
    {
        uint32_t h = kv_pair<__half, kv_fp8>::of<I, J>(r);
        const float2 f = __half22float2(*reinterpret_cast<__half2 *>(&h));
        return dt<__nv_bfloat16>::pack(f.x, f.y);
    }
};
template <> struct kv_pair<__nv_bfloat16, kv_int8> {
    template <int I, int J> static __device__ __forceinline__ uint32_t of(uint32_t r)
    {
        return dt<__nv_bfloat16>::pack((float)(int8_t)(r >> (8 * I)), (float)(int8_t)(r >> (8 * J)));
    }
};

/* 16 bytes of T as floats (8 halves or 4 floats). */
template <typename T> struct vec16 { enum { N = 16 / sizeof(T) }; };

template <typename T>
__device__ __forceinline__ void load16_as_float(const T *src, float *dst)
{
    uint4 raw = *reinterpret_cast<const uint4 *>(src);
    const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int i = 0; i < vec16<T>::N; ++i) dst[i] = dt<T>::to_f(e[i]);
}

/* ---------------------------------------------------------------- PTX wrappers */

/* 16 bytes read once: the read-only path and no L1 line; L2_256B also has the L2 fetch
 * the 256 bytes around them, for loops whose instruction reads part of a line. */
template <bool L2_256B = false> __device__ __forceinline__ uint4 ldg_once(const void *p)
{
    uint4 v;
    if constexpr (L2_256B)
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    else
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    return v;
}

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16-byte global->shared copy through L2 only; src_bytes 0 writes zeros and reads nothing. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}
/* 4-byte global->shared copy (through L1: .cg takes 16 bytes only). */
__device__ __forceinline__ void cp_async4(uint32_t dst, const void *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 2^x in one MUFU instruction (exp2f adds denormal handling the softmax does not need). */
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* ---------------------------------------------------------------- addressing */

/* Element offset of the K row at position pos for (unit, kv head); the kv_layout.h
 * arithmetic, specialised per layout, in two steps for the rows a body fetches a tile
 * ahead: kv_row_ref loads what the row's place depends on (a paged cache's block id,
 * the source stream under indirection), kv_row_at computes the offset from it. ptxas
 * waits for a load where its value is first used, so a fetch that did both before the
 * math would wait out the load's round trip there; it issues kv_row_ref before the
 * math and kv_row_at after it. */
template <int ADDR>
__device__ __forceinline__ int kv_row_ref(const attn_params_t &P, int unit, int pos)
{
    const kv_geometry_t *g = &P.geom;
    if (ADDR == ADDR_CTX) return unit;
    int src = kv_source_stream(g, P.indirection, unit * P.addr_stream_mult, pos);
    if (ADDR == ADDR_PAGED) return __ldg(P.table + (int64_t)src * g->max_blocks_per_seq + (pos >> g->block_shift));
    return src;
}
template <int ADDR>
__device__ __forceinline__ int64_t kv_row_at(const attn_params_t &P, int head, int pos, int ref)
{
    const kv_geometry_t *g = &P.geom;
    if (ADDR == ADDR_CTX) return kv_ctx_offset(g, ref, 0, head, pos);
    if (ADDR == ADDR_PAGED) return kv_paged_offset(g, ref, 0, head, pos & (g->block_size - 1));
    if (ADDR == ADDR_DEC) return kv_dec_offset(g, ref, 0, head, pos - kv_ctx_of(g, ref / g->beam));
    return kv_contiguous_offset(g, ref, 0, head, pos);
}
template <int ADDR>
__device__ __forceinline__ int64_t kv_row(const attn_params_t &P, int unit, int head, int pos)
{
    return kv_row_at<ADDR>(P, head, pos, kv_row_ref<ADDR>(P, unit, pos));
}

/* Which CTA this is: row tiles fastest, then splits, kv heads, units. */
struct cta_coord {
    int row_tile, split, head, unit;
    int k_lo, k_hi;   /* key positions of this CTA */
};

/* Work item `item` of a launch's units x kv heads x splits x row tiles: blockIdx.x in a
 * grid of one CTA per item, or each item a persistent CTA takes in turn. */
__device__ __forceinline__ cta_coord cta_decompose(const attn_params_t &P, int64_t item)
{
    cta_coord c;
    int64_t b = item;
    c.row_tile = (int)(b % P.row_tiles); b /= P.row_tiles;
    if (P.work) {
        /* (unit, split) from the list, kv heads of a pair side by side */
        c.head = (int)(b % P.kv_heads);
        const int64_t e = b / P.kv_heads;
        c.unit = __ldg(P.work + 2 * e);
        c.split = __ldg(P.work + 2 * e + 1);
        kv_ragged_stream_range(&P.geom, c.unit, c.split, P.chunk, &c.k_lo, &c.k_hi);
        return c;
    }
    c.split = (int)(b % P.splits); b /= P.splits;
    c.head = (int)(b % P.kv_heads);
    c.unit = (int)(b / P.kv_heads);
    c.k_lo = P.key_begin + c.split * P.chunk;
    c.k_hi = min(P.key_end, c.k_lo + P.chunk);
    if (P.ragged == ATTN_RAGGED_CTX) kv_ragged_ctx_range(&P.geom, c.unit, c.split, P.chunk, &c.k_lo, &c.k_hi);
    if (P.ragged == ATTN_RAGGED_DEC) kv_ragged_dec_range(&P.geom, c.unit, c.split, P.chunk, &c.k_lo, &c.k_hi);
    return c;
}

/* The splits of a unit: P.splits, or in a ragged batch's list those its own keys take. */
__device__ __forceinline__ int attn_unit_splits(const attn_params_t &P, int unit)
{
    if (!P.work) return P.splits;
    return (kv_keys_of(&P.geom, unit) + P.chunk - 1) / P.chunk;
}
__device__ __forceinline__ cta_coord cta_decompose(const attn_params_t &P) { return cta_decompose(P, blockIdx.x); }

/* Work items of a launch: its CTAs in a grid of one CTA per item. */
__host__ __device__ __forceinline__ int64_t attn_items(const attn_params_t &P)
{
    if (P.work) return P.work_items * P.kv_heads * P.row_tiles;
    return (int64_t)P.units * P.kv_heads * P.splits * P.row_tiles;
}

/* The dequantisation scales of an 8-bit cache's kv head `head` (K's and V's): K's is
 * folded into the softmax scale, V's into the output, once per CTA. */
struct kv_scales { float k, v; };
__device__ __forceinline__ kv_scales kv_scales_of(const attn_params_t &P, int head)
{
    const int i = P.kv_scale_heads > 1 ? head : 0;
    kv_scales sc;
    sc.k = __ldg(P.kv_scale + i);
    sc.v = __ldg(P.kv_scale + P.kv_scale_heads + i);
    return sc;
}

/* Query row r of the CTA -> (stream, query head); false for padding rows. */
__device__ __forceinline__ bool row_target(const attn_params_t &P, const cta_coord &c, int r,
                                           int *stream, int *head)
{
    int gr = c.row_tile * P.rows_per_cta + r;
    if (gr >= P.rows_per_unit) return false;
    *stream = c.unit * P.streams_per_unit + gr / P.group;
    *head = c.head * P.group + gr % P.group;
    return true;
}

/* The end (exclusive) of the key positions CTA row r attends to: its query token j's
 * causal_end + j (the causal mask among a stream's q_len query tokens). Only tiles that
 * reach past causal_end pay for it (attn_causal_tile). */
__device__ __forceinline__ int row_key_end(const attn_params_t &P, const cta_coord &c, int r)
{
    const int gr = c.row_tile * P.rows_per_cta + r;
    return P.causal_end + query_token(c.unit * P.streams_per_unit + gr / P.group, P.q_len);
}
/* Whether keys [pos, pos + n) reach the causal mask of some row. */
__device__ __forceinline__ bool attn_causal_tile(const attn_params_t &P, int pos, int n)
{
    return pos + n > P.causal_end;
}

/* ---------------------------------------------------------------- the merges */

/* combine_and_emit, fold_and_emit, tail_merge and the merge kernels. */
#include "state_merge.cuh"

/* ---------------------------------------------------------------- tensor-core body */

/* ST: pipeline stages, 0 for the default of the head dim. KVB: bytes of a K/V element,
 * 2 (the query dtype) or 1 (an 8-bit cache: tiles of half the bytes, in twice the
 * stages, so that as many bytes are in flight). Q stays 16-bit either way. */
template <int D, int MT, bool KEYSPLIT, int ST = 0, int KVB = 2>
struct tc_shape {
    static constexpr int KT = ATTN_KEY_TILE;
    static constexpr int NW = ATTN_WARPS;
    static constexpr int ROWS = KEYSPLIT ? 16 * MT : 16 * NW;   /* query rows per CTA */
    static constexpr int RPW = 16 * MT;                          /* rows each warp holds */
    static constexpr int KW = KEYSPLIT ? KT / NW : KT;           /* keys each warp takes per tile */
    static constexpr int NT = KW / 8;                            /* n8 tiles of S per warp */
    static constexpr int NCH = D / 8;                            /* 16-byte chunks per row of Q */
    static constexpr bool SWZ = NCH % 8 == 0;
    static constexpr int ROW_BYTES = SWZ ? D * 2 : D * 2 + 16;
    static constexpr int KV_NCH = D * KVB / 16;                  /* 16-byte chunks per K/V row */
    static constexpr bool KV_SWZ = KV_NCH % 8 == 0;
    static constexpr int KV_ROW_BYTES = KV_SWZ ? D * KVB : D * KVB + 16;
    static constexpr int STAGES = (ST ? ST : (D <= 64 ? 4 : (D <= 128 ? 3 : 2))) * (KVB == 1 ? 2 : 1);
    static constexpr int TILE_BYTES = KT * KV_ROW_BYTES;
    static constexpr int PIPE_BYTES = STAGES * 2 * TILE_BYTES;
    static constexpr int STAGING_BYTES = NW * RPW * ((D + 8) * 4 + 8);
    static constexpr int REGION_BYTES = PIPE_BYTES > STAGING_BYTES ? PIPE_BYTES : STAGING_BYTES;
    static constexpr int Q_BYTES = ROWS * ROW_BYTES;
    static constexpr int OFF_BYTES = STAGES * KT * 4;
    static constexpr int SMEM = REGION_BYTES + Q_BYTES + OFF_BYTES;
    /* CTAs per SM that the shared memory allows on an H100/H200; __launch_bounds__
     * caps registers so that this many also fit by registers. */
    static constexpr int MINB_RAW = ATTN_SMEM_PER_SM / (SMEM + ATTN_SMEM_RESERVED);
    static constexpr int MINB = MINB_RAW < 1 ? 1 : (MINB_RAW > 4 ? 4 : MINB_RAW);
    static_assert(D % 16 == 0 && KW % 16 == 0, "tensor-core shape");
    static_assert(KT * KV_NCH % ATTN_THREADS == 0, "tile copy divides among the threads");
    static_assert(SMEM <= 227 * 1024, "shared memory per CTA");
    /* an odd count of chunks per unswizzled row: every ldmatrix phase on 8 bank groups */
    static_assert(SWZ || NCH % 2 == 0, "Q rows padded to an odd chunk count");
    static_assert(KV_SWZ || KV_NCH % 2 == 0, "K/V rows padded to an odd chunk count");

    /* byte offset of 16-byte chunk `chunk` of row `row`: in Q (off), in a K or V tile (kv_off) */
    static __device__ __forceinline__ int off(int row, int chunk)
    {
        return row * ROW_BYTES + (SWZ ? (chunk ^ (row & 7)) : chunk) * 16;
    }
    static __device__ __forceinline__ int kv_off(int row, int chunk)
    {
        return row * KV_ROW_BYTES + (KV_SWZ ? (chunk ^ (row & 7)) : chunk) * 16;
    }
};

/* The compile-time choices of one instantiation of the tensor-core body, on top of its
 * shape: T, the head dim D, MT 16-row m tiles per warp, KEYSPLIT (the warps split each
 * tile's keys and share the CTA's rows; else each warp holds 16 rows of its own), the
 * address mode ADDR, the pipeline stages ST (0: the default of the head dim) and the
 * cache's storage KV (kv_traits: T itself, or an 8-bit cache's codes, KV8, whose steps
 * are tc_scores8 and tc_accumulate_pv8; d a multiple of 32 only). */
template <typename T_, int D_, int MT_, bool KEYSPLIT_, int ADDR_, int ST_ = 0, typename KV_ = T_>
struct tc_traits {
    typedef T_ T;
    typedef KV_ KV;
    typedef typename kv_traits<KV_>::stored KS;
    static constexpr bool KV8 = kv_traits<KV_>::Q8;
    typedef tc_shape<D_, MT_, KEYSPLIT_, ST_, KV8 ? 1 : 2> S;
    static constexpr int D = D_, MT = MT_, ADDR = ADDR_;
    static constexpr bool KEYSPLIT = KEYSPLIT_;
    static_assert(!KV8 || D_ % 32 == 0, "8-bit K/V: 32-dim steps");
    /* KEYSPLIT: Q's A fragments in registers for the whole loop where they fit
     * (32 registers, under the cap of at most two CTAs per SM), and S in two
     * accumulator chains up to d = 128 with one row tile. */
    static constexpr bool QREG = KEYSPLIT && MT * D <= 128 && S::MINB <= 2;
    static constexpr bool DUAL = KEYSPLIT && D <= 128 && MT == 1;
};

/* The steps of one tile of a warp, and its epilogue. A thread holds rows lane/4 (h = 0)
 * and lane/4 + 8 (h = 1) of each m tile of its warp, keys key_base + 8n + 2*(lane%4) +
 * {0,1}; s, o, m and l are its registers (the kernel's), passed by reference. */

/* DUAL's second chain of k steps (s2) added into the first (s): the tile's scores. */
template <typename Tr>
__device__ __forceinline__ void tc_fold_dual(float (&s)[Tr::MT][Tr::S::NT][4],
                                             const float (&s2)[Tr::MT][Tr::S::NT][4])
{
#pragma unroll
    for (int mt = 0; mt < Tr::MT; ++mt)
#pragma unroll
        for (int n = 0; n < Tr::S::NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][n][e] += s2[mt][n][e];
}

/* S = Q Kᵀ of the tile at kbuf: A = Q rows (row-major; from qa with QREG, else from
 * shared memory at q_base), B = K rows read as a col-major k x n. KEYSPLIT keeps Q's A
 * fragments in registers where they fit (QREG) and accumulates even and odd k steps in
 * two chains added at the end (DUAL): one CTA per SM streams only as fast as this loop
 * turns, so it is written for latency (half the dependent mma steps, no Q reloads). */
template <typename Tr, int QM, int QK>
__device__ __forceinline__ void tc_scores(float (&s)[Tr::MT][Tr::S::NT][4], const uint32_t (&qa)[QM][QK][4],
                                          uint32_t q_base, uint32_t kbuf, int key_base, int row_base, int lane)
{
    typedef typename Tr::S S;
    constexpr int MT = Tr::MT, D = Tr::D;
    float s2[MT][S::NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < S::NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][n][e] = s2[mt][n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            if constexpr (Tr::QREG) {
#pragma unroll
                for (int i = 0; i < 4; ++i) a[mt][i] = qa[mt][kk][i];
            } else {
                ldmatrix_x4(a[mt], q_base + S::off(row_base + 16 * mt + (lane & 15), 2 * kk + (lane >> 4)));
            }
        }
        auto &acc = (Tr::DUAL && (kk & 1)) ? s2 : s;
#pragma unroll
        for (int jp = 0; jp < S::NT / 2; ++jp) {
            uint32_t b[4];
            ldmatrix_x4(b, kbuf + S::off(key_base + 16 * jp + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                dt<typename Tr::T>::mma(acc[mt][2 * jp], a[mt], b[0], b[1]);
                dt<typename Tr::T>::mma(acc[mt][2 * jp + 1], a[mt], b[2], b[3]);
            }
        }
    }
    if constexpr (Tr::DUAL) tc_fold_dual<Tr>(s, s2);
}

/* The causal mask among a stream's query tokens on S of the tile whose first key is at
 * position tile_pos: a key at or past its row's row_key_end gets -inf. */
template <typename Tr>
__device__ __forceinline__ void tc_causal_mask(const attn_params_t &P, const cta_coord &c,
                                               float (&s)[Tr::MT][Tr::S::NT][4], int tile_pos, int key_base,
                                               int row_base, int lane)
{
#pragma unroll
    for (int mt = 0; mt < Tr::MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int end = row_key_end(P, c, row_base + 16 * mt + (lane >> 2) + 8 * h);
#pragma unroll
            for (int n = 0; n < Tr::S::NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (tile_pos + key_base + 8 * n + 2 * (lane & 3) + e >= end) s[mt][n][2 * h + e] = -INFINITY;
        }
}

/* Online softmax of S (the tile's first nvalid keys valid) into P, in place, and O
 * rescaled. l stays a per-thread partial sum (the row's 4 threads are summed at the
 * end). The row max is taken on the raw logits (the scale is positive) and the scale,
 * scale_log2 (with an 8-bit cache's K scale in it), folded into one FFMA per logit;
 * only a partial tile pays for masking. */
template <typename Tr>
__device__ __forceinline__ void tc_softmax(const float scale_log2, float (&s)[Tr::MT][Tr::S::NT][4],
                                           float (&o)[Tr::MT][Tr::D / 8][4], float (&m)[Tr::MT][2],
                                           float (&l)[Tr::MT][2], int nvalid, int key_base, int lane)
{
    typedef typename Tr::S S;
    constexpr int MT = Tr::MT, D = Tr::D;
    if (nvalid < S::KT) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < S::NT; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (key_base + 8 * n + 2 * (lane & 3) + (e & 1) >= nvalid) s[mt][n][e] = -INFINITY;
    }
    float alpha[MT][2];
    bool moved = false;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int n = 0; n < S::NT; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            float m_new = fmaxf(m[mt][h], mx * scale_log2);
            float m_use = m_new == -INFINITY ? 0.f : m_new; /* all masked: p = 0, no NaN */
            alpha[mt][h] = fast_exp2(m[mt][h] - m_use);
            moved |= alpha[mt][h] != 1.f;
            m[mt][h] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int n = 0; n < S::NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float p = fast_exp2(fmaf(s[mt][n][2 * h + e], scale_log2, -m_use));
                    s[mt][n][2 * h + e] = p;
                    sum += p;
                }
            l[mt][h] = l[mt][h] * alpha[mt][h] + sum;
        }
    }
    /* O owes alpha only where a row's max moved; after the first tiles it
     * rarely does, so a warp whose rows all kept theirs skips the multiplies. */
    if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                o[mt][n][0] *= alpha[mt][0];
                o[mt][n][1] *= alpha[mt][0];
                o[mt][n][2] *= alpha[mt][1];
                o[mt][n][3] *= alpha[mt][1];
            }
    }
}

/* The probabilities of keys 16 ks .. 16 ks + 15 (S accumulator tiles 2 ks, 2 ks + 1) as
 * the m16n8k16 A fragments of P V, in T: the C layout of S is the A layout of P. */
template <typename T, int MT, int NT>
__device__ __forceinline__ void tc_p_fragments(uint32_t (&pa)[MT][4], const float (&s)[MT][NT][4], int ks)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        pa[mt][0] = dt<T>::pack(s[mt][2 * ks][0], s[mt][2 * ks][1]);
        pa[mt][1] = dt<T>::pack(s[mt][2 * ks][2], s[mt][2 * ks][3]);
        pa[mt][2] = dt<T>::pack(s[mt][2 * ks + 1][0], s[mt][2 * ks + 1][1]);
        pa[mt][3] = dt<T>::pack(s[mt][2 * ks + 1][2], s[mt][2 * ks + 1][3]);
    }
}

/* O += P V: P from the S accumulators as A fragments, V rows (at vbuf) via ldmatrix.trans. */
template <typename Tr>
__device__ __forceinline__ void tc_accumulate_pv(float (&o)[Tr::MT][Tr::D / 8][4], const float (&s)[Tr::MT][Tr::S::NT][4],
                                                 uint32_t vbuf, int key_base, int lane)
{
    typedef typename Tr::S S;
    typedef typename Tr::T T;
    constexpr int MT = Tr::MT, D = Tr::D;
#pragma unroll
    for (int ks = 0; ks < S::KW / 16; ++ks) {
        uint32_t pa[MT][4];
        tc_p_fragments<T>(pa, s, ks);
#pragma unroll
        for (int db = 0; db < D / 16; ++db) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, vbuf + S::off(key_base + 16 * ks + (lane & 7) + (((lane >> 3) & 1) << 3), 2 * db + (lane >> 4)));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                dt<T>::mma(o[mt][2 * db], pa[mt], b[0], b[1]);
                dt<T>::mma(o[mt][2 * db + 1], pa[mt], b[2], b[3]);
            }
        }
    }
}

/* tc_scores for an 8-bit cache (Tr::KV8): K's codes become T (exactly) between shared
 * memory and the B fragments. ldmatrix moves 16-bit pairs, so a thread gets 4 adjacent
 * codes of its key row, dims 4c..4c+3 of a 16-dim step (c = lane % 4), where the
 * fragment wants k indices 2c, 2c+1, 2c+8, 2c+9: those indices stand for these dims,
 * in K here and in Q, which the prologue stores permuted alike (tc_load_q8), so Q Kᵀ is
 * unchanged. A 16-byte chunk of a row is one step; one ldmatrix_x4 covers 16 keys and
 * two steps. */
template <typename Tr, int QM, int QK>
__device__ __forceinline__ void tc_scores8(float (&s)[Tr::MT][Tr::S::NT][4], const uint32_t (&qa)[QM][QK][4],
                                           uint32_t q_base, uint32_t kbuf, int key_base, int row_base, int lane)
{
    typedef typename Tr::S S;
    typedef typename Tr::T T;
    typedef kv_pair<T, typename Tr::KV> cvt;
    constexpr int MT = Tr::MT, D = Tr::D;
    float s2[MT][S::NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < S::NT; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][n][e] = s2[mt][n][e] = 0.f;
    auto &odd = Tr::DUAL ? s2 : s; /* the odd steps' chain (tc_scores: DUAL) */
#pragma unroll
    for (int kp = 0; kp < D / 32; ++kp) {
        uint32_t a[2][MT][4]; /* Q of steps 2kp and 2kp + 1 */
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                if constexpr (Tr::QREG) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) a[h][mt][i] = qa[mt][2 * kp + h][i];
                } else {
                    ldmatrix_x4(a[h][mt], q_base + S::off(row_base + 16 * mt + (lane & 15), 2 * (2 * kp + h) + (lane >> 4)));
                }
            }
#pragma unroll
        for (int jp = 0; jp < S::NT / 2; ++jp) {
            /* r[0], r[1]: keys 0-7 of the 16, steps 2kp and 2kp + 1; r[2], r[3]: keys 8-15 */
            uint32_t r[4], b[4][2];
            ldmatrix_x4(r, kbuf + S::kv_off(key_base + 16 * jp + (lane & 7) + ((lane >> 4) << 3), 2 * kp + ((lane >> 3) & 1)));
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                b[i][0] = cvt::template of<0, 1>(r[i]);
                b[i][1] = cvt::template of<2, 3>(r[i]);
            }
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                dt<T>::mma(s[mt][2 * jp], a[0][mt], b[0][0], b[0][1]);
                dt<T>::mma(odd[mt][2 * jp], a[1][mt], b[1][0], b[1][1]);
                dt<T>::mma(s[mt][2 * jp + 1], a[0][mt], b[2][0], b[2][1]);
                dt<T>::mma(odd[mt][2 * jp + 1], a[1][mt], b[3][0], b[3][1]);
            }
        }
    }
    if constexpr (Tr::DUAL) tc_fold_dual<Tr>(s, s2);
}

/* tc_accumulate_pv for an 8-bit cache: ldmatrix.trans of 16-bit pairs gives a thread the
 * codes of keys 2c and 2c+1 (c = lane % 4) at two adjacent dims, 2n and 2n+1 of a 16-dim
 * chunk (n = lane / 4). Regrouped by dim (bytes 0,2 and 1,3) they are the B fragments of
 * two n8 tiles, one of the chunk's even dims and one of its odd ones: tile 2*ch + parity,
 * column n, is dim 16*ch + 2n + parity, which tc_epilogue puts back in order. One
 * ldmatrix_x4 covers 16 keys and two chunks. */
template <typename Tr>
__device__ __forceinline__ void tc_accumulate_pv8(float (&o)[Tr::MT][Tr::D / 8][4], const float (&s)[Tr::MT][Tr::S::NT][4],
                                                  uint32_t vbuf, int key_base, int lane)
{
    typedef typename Tr::S S;
    typedef typename Tr::T T;
    typedef kv_pair<T, typename Tr::KV> cvt;
    constexpr int MT = Tr::MT, D = Tr::D;
#pragma unroll
    for (int ks = 0; ks < S::KW / 16; ++ks) {
        uint32_t pa[MT][4];
        tc_p_fragments<T>(pa, s, ks);
#pragma unroll
        for (int dp = 0; dp < D / 32; ++dp) {
            /* r[0], r[1]: keys 0-7, 8-15 of chunk 2dp; r[2], r[3]: of chunk 2dp + 1 */
            uint32_t r[4];
            ldmatrix_x4_trans(r, vbuf + S::kv_off(key_base + 16 * ks + (lane & 7) + (((lane >> 3) & 1) << 3), 2 * dp + (lane >> 4)));
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint32_t even0 = cvt::template of<0, 2>(r[2 * h]), even1 = cvt::template of<0, 2>(r[2 * h + 1]);
                const uint32_t odd0 = cvt::template of<1, 3>(r[2 * h]), odd1 = cvt::template of<1, 3>(r[2 * h + 1]);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    dt<T>::mma(o[mt][4 * dp + 2 * h], pa[mt], even0, even1);
                    dt<T>::mma(o[mt][4 * dp + 2 * h + 1], pa[mt], odd0, odd1);
                }
            }
        }
    }
}

/* The epilogue: every warp's (m, l, O) staged in the drained pipeline buffers (pipe),
 * then combined and written (combine_and_emit). */
template <typename Tr>
__device__ __forceinline__ void tc_epilogue(const attn_params_t &P, const cta_coord &c, unsigned char *pipe,
                                            const float (&o)[Tr::MT][Tr::D / 8][4], const float (&m)[Tr::MT][2],
                                            const float (&l)[Tr::MT][2], int warp, int lane, float vscale)
{
    typedef typename Tr::S S;
    constexpr int MT = Tr::MT, D = Tr::D;
    cp_async_wait<0>();
    __syncthreads();
    float *st_o = reinterpret_cast<float *>(pipe);
    float *st_m = st_o + S::NW * S::RPW * (D + 8);
    float *st_l = st_m + S::NW * S::RPW;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float lsum = l[mt][h];
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
            int row = warp * S::RPW + 16 * mt + (lane >> 2) + 8 * h;
            if ((lane & 3) == 0) { st_m[row] = m[mt][h]; st_l[row] = lsum; }
            if constexpr (Tr::KV8) {
                /* tile 2ch + parity, column 2c + e, is dim 16ch + 4c + 2e + parity
                 * (tc_accumulate_pv8); an 8-bit cache's V scale (vscale) applies here */
#pragma unroll
                for (int ch = 0; ch < D / 16; ++ch)
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        *reinterpret_cast<float2 *>(st_o + row * (D + 8) + 16 * ch + 4 * (lane & 3) + 2 * e) =
                            make_float2(o[mt][2 * ch][2 * h + e] * vscale, o[mt][2 * ch + 1][2 * h + e] * vscale);
            } else {
#pragma unroll
                for (int n = 0; n < D / 8; ++n)
                    *reinterpret_cast<float2 *>(st_o + row * (D + 8) + 8 * n + 2 * (lane & 3)) =
                        make_float2(o[mt][n][2 * h], o[mt][n][2 * h + 1]);
            }
        }
    __syncthreads();
    /* KEYSPLIT: CTA row r lives in every warp at warp*RPW + r. ROWSPLIT: only in its
     * own warp, at index r (RPW = 16 there). */
    combine_and_emit<typename Tr::T>(P, c, st_o, st_m, st_l, S::ROWS, Tr::KEYSPLIT ? S::NW : 1, S::RPW, D);
}

/* The CTA's query rows into shared memory at q_s (zeros for padding rows) for an 8-bit
 * cache: each 16-dim step's dims permuted as tc_scores8 reads K's, by plain loads and
 * stores (the permutation moves 4-byte pairs), visible after the prologue's barrier.
 * Step kk's 16 dims are 8 pairs: shared chunk 2kk holds pairs 0, 2, 4, 6 (dims 4c, 4c+1
 * at columns 2c, 2c+1), chunk 2kk + 1 pairs 1, 3, 5, 7 (dims 4c+2, 4c+3). (The 16-bit
 * body copies its chunks with cp.async, landing with the first tile's group.) */
template <typename Tr>
__device__ __forceinline__ void tc_load_q8(const attn_params_t &P, const cta_coord &c, unsigned char *q_s, int tid)
{
    typedef typename Tr::T T;
    typedef typename Tr::S S;
    constexpr int D = Tr::D;
    for (int i = tid; i < S::ROWS * (D / 16); i += ATTN_THREADS) {
        const int r = i / (D / 16), kk = i - r * (D / 16);
        int stream = 0, head = 0;
        uint4 lo = make_uint4(0u, 0u, 0u, 0u), hi = lo;
        if (row_target(P, c, r, &stream, &head)) {
            const uint4 *src = reinterpret_cast<const uint4 *>(static_cast<const T *>(P.q) +
                                                               ((int64_t)stream * P.heads + head) * D + 16 * kk);
            lo = src[0];
            hi = src[1];
        }
        *reinterpret_cast<uint4 *>(q_s + S::off(r, 2 * kk)) = make_uint4(lo.x, lo.z, hi.x, hi.z);
        *reinterpret_cast<uint4 *>(q_s + S::off(r, 2 * kk + 1)) = make_uint4(lo.y, lo.w, hi.y, hi.w);
    }
}

/* The tensor-core body of one instantiation Tr (tc_traits): the ring of K/V tiles
 * through shared memory, and per tile the warp's tc_scores, tc_softmax and
 * tc_accumulate_pv (their 8-bit forms for an 8-bit cache), then tc_epilogue. */
template <typename Tr>
__global__ void __launch_bounds__(ATTN_THREADS, (Tr::S::MINB)) attn_tc_kernel(const attn_params_t P)
{
    typedef typename Tr::T T;
    typedef typename Tr::S S;
    typedef typename Tr::KS KS;  /* the cache's element: T, or an 8-bit code */
    constexpr int D = Tr::D, MT = Tr::MT, ADDR = Tr::ADDR;
    constexpr int CE = 16 / (int)sizeof(KS); /* elements of a 16-byte chunk of a K/V row */
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *pipe = smem;
    unsigned char *q_s = smem + S::REGION_BYTES;
    uint32_t *off_ring = reinterpret_cast<uint32_t *>(q_s + S::Q_BYTES);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const cta_coord c = cta_decompose(P);
    const KS *kv = static_cast<const KS *>(P.kv);
    const int ntiles = c.k_hi > c.k_lo ? (c.k_hi - c.k_lo + S::KT - 1) / S::KT : 0;
    /* the merge behind this grid (attn_launch_merge) may be set up once every CTA has
     * begun: it waits for this grid's end before it reads a partial */
    attn_grid_dependents_go();

    /* Row index (offset / D) of key row `row` of tile j, NO_ROW past the end, from the
     * row's reference (tile_row_ref; kv_row_ref says why two steps). */
    const uint32_t NO_ROW = 0xffffffffu;
    auto tile_row_ref = [&](int j, int row) {
        int pos = c.k_lo + j * S::KT + row;
        return pos < c.k_hi ? kv_row_ref<ADDR>(P, c.unit, pos) : 0;
    };
    auto tile_row_index = [&](int j, int row, int ref) -> uint32_t {
        int pos = c.k_lo + j * S::KT + row;
        return pos < c.k_hi ? (uint32_t)(kv_row_at<ADDR>(P, c.head, pos, ref) / D) : NO_ROW;
    };
    /* Without a block table or indirection the CTA's key rows are consecutive rows
     * of one matrix (affine): a tile's addresses follow from the first row's, and
     * the ring of row offsets is not needed. The loop turns faster without it, and
     * one CTA per SM streams only as fast as its loop turns. (Not at d = 256, whose
     * bodies have no registers to spare.) */
    const bool affine = D <= 128 && (ADDR == ADDR_CTX || (ADDR != ADDR_PAGED && !P.indirection));
    const KS *kv0 = affine && ntiles > 0 ? kv + kv_row<ADDR>(P, c.unit, c.head, c.k_lo) : kv;
    /* A paged cache whose blocks hold whole tiles (tiles start on a multiple of KT keys,
     * blocks a multiple of KT long) is affine within each tile: its rows follow the first
     * one's, whose place the ring of row offsets has, and the tile is copied as an affine
     * one, without a place per row. */
    const bool paged_tiles = D <= 128 && ADDR == ADDR_PAGED && !P.indirection && P.geom.block_size % S::KT == 0 &&
                             c.k_lo % S::KT == 0;
    /* tile j's K and V rows into its stage */
    auto load_tile = [&](int j) {
        const uint32_t ks = smem_addr(pipe + (j % S::STAGES) * 2 * S::TILE_BYTES), vs = ks + S::TILE_BYTES;
        if (affine || paged_tiles) {
            /* Whole tiles (all but a CTA's last) need no per-row test where the chunk
             * columns divide the threads; other tiles and head dims test each row. */
            const KS *tile = affine ? kv0 + (int64_t)j * S::KT * D
                                    : kv + (int64_t)off_ring[(j % S::STAGES) * S::KT] * D;
            const int valid = c.k_hi - (c.k_lo + j * S::KT);
            if constexpr (S::KV_SWZ && ATTN_THREADS % (8 * S::KV_NCH) == 0) {
                if (valid >= S::KT) {
                    /* Each thread copies one chunk column every RSTEP rows, so the source
                     * and the (row & 7)-swizzled destination move by constant strides. */
                    constexpr int RSTEP = ATTN_THREADS / S::KV_NCH;
                    const int r0 = tid / S::KV_NCH, ch = tid % S::KV_NCH;
                    const KS *src = tile + r0 * D + ch * CE;
                    const KS *srcv = src + P.vstride;
                    const uint32_t dst = S::kv_off(r0, ch);
#pragma unroll
                    for (int k = 0; k < S::KT / RSTEP; ++k) {
                        cp_async16(ks + dst + k * RSTEP * S::KV_ROW_BYTES, src + k * RSTEP * D, 16);
                        cp_async16(vs + dst + k * RSTEP * S::KV_ROW_BYTES, srcv + k * RSTEP * D, 16);
                    }
                    return;
                }
            }
#pragma unroll
            for (int k = 0; k < S::KT * S::KV_NCH / ATTN_THREADS; ++k) {
                int i = tid + k * ATTN_THREADS;
                int row = i / S::KV_NCH, ch = i - row * S::KV_NCH;
                bool ok = row < valid;
                const KS *src = ok ? tile + row * D + ch * CE : kv;
                cp_async16(ks + S::kv_off(row, ch), src, ok ? 16 : 0);
                cp_async16(vs + S::kv_off(row, ch), src + (ok ? P.vstride : 0), ok ? 16 : 0);
            }
            return;
        }
        const uint32_t *rows = off_ring + (j % S::STAGES) * S::KT;
#pragma unroll
        for (int k = 0; k < S::KT * S::KV_NCH / ATTN_THREADS; ++k) {
            int i = tid + k * ATTN_THREADS;
            int row = i / S::KV_NCH, ch = i - row * S::KV_NCH;
            uint32_t r = rows[row];
            int bytes = r != NO_ROW ? 16 : 0;
            const KS *src = kv + (r != NO_ROW ? (int64_t)r * D + ch * CE : 0);
            cp_async16(ks + S::kv_off(row, ch), src, bytes);
            cp_async16(vs + S::kv_off(row, ch), src + (r != NO_ROW ? P.vstride : 0), bytes);
        }
    };

    auto load_q = [&]() {
        if constexpr (Tr::KV8) {
            tc_load_q8<Tr>(P, c, q_s, tid);
        } else {
            for (int i = tid; i < S::ROWS * S::NCH; i += ATTN_THREADS) {
                int r = i / S::NCH, ch = i - r * S::NCH, stream = 0, head = 0;
                bool ok = row_target(P, c, r, &stream, &head);
                const T *src = static_cast<const T *>(P.q) + (ok ? ((int64_t)stream * P.heads + head) * D + ch * 8 : 0);
                cp_async16(smem_addr(q_s + S::off(r, ch)), src, ok ? 16 : 0);
            }
        }
    };

    /* Prologue: offsets of the first STAGES tiles, Q, then STAGES-1 tiles in flight. */
    if (!affine && tid < S::KT) {
        int first[S::STAGES];
#pragma unroll
        for (int j = 0; j < S::STAGES; ++j) first[j] = tile_row_ref(j, tid);
#pragma unroll
        for (int j = 0; j < S::STAGES; ++j) off_ring[j * S::KT + tid] = j < ntiles ? tile_row_index(j, tid, first[j]) : NO_ROW;
    }
    /* After the append kernel (P.after_append), which writes the query and each stream's
     * last key, which only a CTA's last tile can hold: the tiles before it stream in
     * while the append runs, the query and the last tile once it has ended, and the
     * loop's first wait then covers every group, the query's included. */
    const int tiles_before_wait = P.after_append ? ntiles - 1 : ntiles;
    if (!P.after_append) load_q();
    __syncthreads();
#pragma unroll
    for (int j = 0; j < S::STAGES - 1; ++j) {
        if (j < tiles_before_wait) load_tile(j);
        cp_async_commit();
    }
    if (P.after_append) {
        attn_grid_dependency_wait();
        load_q();
        if (ntiles > 0 && ntiles - 1 < S::STAGES - 1) load_tile(ntiles - 1);
        cp_async_commit();
        cp_async_wait<0>();
    }

    const int key_base = Tr::KEYSPLIT ? warp * S::KW : 0;
    const int row_base = Tr::KEYSPLIT ? 0 : warp * 16;
    const bool warp_has_rows = c.row_tile * P.rows_per_cta + row_base < P.rows_per_unit;
    const uint32_t q_base = smem_addr(q_s);
    /* an 8-bit cache's scales: K's into the softmax scale, V's into the output (kv_scales_of) */
    kv_scales sc = {1.f, 1.f};
    if constexpr (Tr::KV8) sc = kv_scales_of(P, c.head);
    uint32_t qa[Tr::QREG ? MT : 1][Tr::QREG ? D / 16 : 1][4];
    float o[MT][D / 8][4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) { m[mt][h] = -INFINITY; l[mt][h] = 0.f; }
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.f;
    }

    for (int t = 0; t < ntiles; ++t) {
        cp_async_wait<S::STAGES - 2>();
        __syncthreads(); /* tile t visible to all; tile t-1's buffer free */
        if (t + S::STAGES - 1 < ntiles) load_tile(t + S::STAGES - 1);
        cp_async_commit();
        /* Next ring entry: its load issued now, its offset computed and stored after the
         * math, so the load's latency hides. */
        const bool fetch = !affine && tid < S::KT && t + S::STAGES < ntiles;
        const int next_ref = fetch ? tile_row_ref(t + S::STAGES, tid) : 0;

        const int nvalid = min(S::KT, c.k_hi - (c.k_lo + t * S::KT));
        if constexpr (Tr::QREG) {
            if (t == 0) /* Q landed with tile 0 */
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int kk = 0; kk < D / 16; ++kk)
                        ldmatrix_x4(qa[mt][kk], q_base + S::off(row_base + 16 * mt + (lane & 15), 2 * kk + (lane >> 4)));
        }
        if (key_base < nvalid && warp_has_rows) {
            const uint32_t kbuf = smem_addr(pipe + (t % S::STAGES) * 2 * S::TILE_BYTES);
            const uint32_t vbuf = kbuf + S::TILE_BYTES;
            float s[MT][S::NT][4];
            if constexpr (Tr::KV8) tc_scores8<Tr>(s, qa, q_base, kbuf, key_base, row_base, lane);
            else tc_scores<Tr>(s, qa, q_base, kbuf, key_base, row_base, lane);
            const int tile_pos = c.k_lo + t * S::KT;
            if (attn_causal_tile(P, tile_pos, nvalid)) tc_causal_mask<Tr>(P, c, s, tile_pos, key_base, row_base, lane);
            if constexpr (Tr::KV8) tc_softmax<Tr>(P.scale_log2 * sc.k, s, o, m, l, nvalid, key_base, lane);
            else tc_softmax<Tr>(P.scale_log2, s, o, m, l, nvalid, key_base, lane);
            if constexpr (Tr::KV8) tc_accumulate_pv8<Tr>(o, s, vbuf, key_base, lane);
            else tc_accumulate_pv<Tr>(o, s, vbuf, key_base, lane);
        }
        if (fetch) off_ring[((t + S::STAGES) % S::STAGES) * S::KT + tid] = tile_row_index(t + S::STAGES, tid, next_ref);
    }
    tc_epilogue<Tr>(P, c, pipe, o, m, l, warp, lane, sc.v);
}

/* ---------------------------------------------------------------- CUDA-core body */

static inline int cc_smem_bytes(int d)
{
    return (ATTN_CC_ROWS * d + ATTN_WARPS * ATTN_CC_ROWS * (d + 8) + 2 * ATTN_WARPS * ATTN_CC_ROWS) * 4;
}
#define ATTN_CC_MINB 3 /* caps registers at 168/thread: 8 rows x 8 dims of O without spills */

/* The CUDA-core body's reads of the cache as floats: N elements at once (16 bytes of
 * T; 8 codes of an 8-bit cache, as d is only a multiple of 8), or one. */
template <typename T, typename KV, bool Q8 = kv_traits<KV>::Q8> struct cc_kv {
    static constexpr int N = vec16<T>::N;
    static __device__ __forceinline__ void load(const T *src, float *dst) { load16_as_float(src, dst); }
    static __device__ __forceinline__ float one(T x) { return dt<T>::to_f(x); }
};
template <typename T, typename KV> struct cc_kv<T, KV, true> {
    static constexpr int N = 8;
    static __device__ __forceinline__ void load(const uint8_t *src, float *dst)
    {
        const uint2 raw = *reinterpret_cast<const uint2 *>(src);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            dst[i] = kv_traits<KV>::to_f((uint8_t)(raw.x >> (8 * i)));
            dst[4 + i] = kv_traits<KV>::to_f((uint8_t)(raw.y >> (8 * i)));
        }
    }
    static __device__ __forceinline__ float one(uint8_t c) { return kv_traits<KV>::to_f(c); }
};

/* KV: the cache's storage (kv_traits): T, or an 8-bit cache's codes, dequantised with
 * the CTA's kv head's scales, K's in the softmax scale and V's in the staged output. */
template <typename T, int ADDR, typename KV = T>
__global__ void __launch_bounds__(ATTN_THREADS, ATTN_CC_MINB) attn_cc_kernel(const attn_params_t P)
{
    typedef cc_kv<T, KV> kvr;
    extern __shared__ __align__(128) unsigned char smem[];
    const int d = P.geom.head_dim;
    const int R = ATTN_CC_ROWS, VPL = 8; /* rows per CTA; O values per lane (d <= 256) */
    float *q_s = reinterpret_cast<float *>(smem);
    float *st_o = q_s + R * d;
    float *st_m = st_o + ATTN_WARPS * R * (d + 8);
    float *st_l = st_m + ATTN_WARPS * R;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const cta_coord c = cta_decompose(P);
    const typename kv_traits<KV>::stored *kv = static_cast<const typename kv_traits<KV>::stored *>(P.kv);
    attn_grid_dependents_go(); /* (attn_tc_kernel says why) */
    if (P.after_append) attn_grid_dependency_wait(); /* the query and the last keys are the append's */
    kv_scales sc;
    sc.k = sc.v = 1.f;
    if constexpr (kv_traits<KV>::Q8) sc = kv_scales_of(P, c.head);
    const float scale_log2 = kv_traits<KV>::Q8 ? P.scale_log2 * sc.k : P.scale_log2;

    for (int i = tid; i < R * d; i += ATTN_THREADS) {
        int r = i / d, x = i - r * d, stream, head;
        float v = 0.f;
        if (row_target(P, c, r, &stream, &head))
            v = dt<T>::to_f(static_cast<const T *>(P.q)[((int64_t)stream * P.heads + head) * d + x]);
        q_s[i] = v;
    }
    __syncthreads();

    float m[R], l[R], o[R][VPL];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m[r] = -INFINITY; l[r] = 0.f;
#pragma unroll
        for (int i = 0; i < VPL; ++i) o[r][i] = 0.f;
    }

    for (int base = c.k_lo + warp * 32; base < c.k_hi; base += ATTN_WARPS * 32) {
        const int pos = base + lane;
        const bool valid = pos < c.k_hi;
        const int64_t off = valid ? kv_row<ADDR>(P, c.unit, c.head, pos) : 0;
        float s[R];
#pragma unroll
        for (int r = 0; r < R; ++r) s[r] = 0.f;
        if (valid) {
            for (int x = 0; x < d; x += kvr::N) {
                float k[kvr::N];
                kvr::load(kv + off + x, k);
#pragma unroll
                for (int r = 0; r < R; ++r)
#pragma unroll
                    for (int e = 0; e < kvr::N; ++e) s[r] += q_s[r * d + x + e] * k[e];
            }
        }
        float p[R];
        /* the causal mask among the query tokens, where the warp's keys reach it */
        const bool causal = attn_causal_tile(P, base, 32);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const bool seen = valid && (!causal || pos < row_key_end(P, c, r));
            float v = seen ? s[r] * scale_log2 : -INFINITY;
            float m_new = fmaxf(m[r], warp_max(v));
            float m_use = m_new == -INFINITY ? 0.f : m_new;
            float alpha = exp2f(m[r] - m_use);
            p[r] = exp2f(v - m_use);
            l[r] = l[r] * alpha + warp_sum(p[r]);
            m[r] = m_new;
#pragma unroll
            for (int i = 0; i < VPL; ++i) o[r][i] *= alpha;
        }
        const int nk = min(32, c.k_hi - base);
        for (int j = 0; j < nk; ++j) {
            const int64_t vo = __shfl_sync(0xffffffffu, off, j) + P.vstride;
            float pj[R];
#pragma unroll
            for (int r = 0; r < R; ++r) pj[r] = __shfl_sync(0xffffffffu, p[r], j);
#pragma unroll
            for (int i = 0; i < VPL; ++i) {
                int x = lane + 32 * i;
                if (x < d) {
                    float v = kvr::one(kv[vo + x]);
#pragma unroll
                    for (int r = 0; r < R; ++r) o[r][i] += pj[r] * v;
                }
            }
        }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        int row = warp * R + r;
        if (lane == 0) { st_m[row] = m[r]; st_l[row] = l[r]; }
#pragma unroll
        for (int i = 0; i < VPL; ++i)
            if (lane + 32 * i < d) st_o[row * (d + 8) + lane + 32 * i] = kv_traits<KV>::Q8 ? o[r][i] * sc.v : o[r][i];
    }
    __syncthreads();
    combine_and_emit<T>(P, c, st_o, st_m, st_l, R, ATTN_WARPS, R, d);
}

/* ---------------------------------------------------------------- host side */

/* What the bodies of this core run; both kernels built on it share the rule (the run
 * command prefixes the kernel's name). problem_validate() already enforces it for the
 * command line; this guards callers of the registry that skip validation. */
static inline const char *attn_core_unsupported(const problem_t *p)
{
    if (p->dtype != DTYPE_FP16 && p->dtype != DTYPE_BF16 && p->dtype != DTYPE_FP32)
        return "runs fp16, bf16 and fp32 only";
    if (p->head_dim < 8 || p->head_dim % 8 != 0 || p->head_dim > 256)
        return "needs a head dim that is a multiple of 8, at most 256";
    return NULL;
}

/* Which body runs a problem: tensor cores for fp16/bf16 at the instantiated dims (with
 * an 8-bit cache those of 32-dim steps, tc_scores8). */
static inline bool attn_tc_path(const problem_t *p)
{
    int d = p->head_dim;
    if (p->kv_quant != KV_QUANT_NONE) return p->dtype != DTYPE_FP32 && (d == 64 || d == 128 || d == 256);
    return p->dtype != DTYPE_FP32 && (d == 64 || d == 80 || d == 96 || d == 128 || d == 256);
}

/* m tiles per CTA in the KEYSPLIT body: two (32 rows) when a stream's q_len*p rows of a
 * kv head need them and the O accumulators of both still fit in registers (d <= 128
 * instantiations). */
static inline int attn_keysplit_mt(const problem_t *p)
{
    int d = p->head_dim;
    return problem_stream_rows(p) > 16 && (d == 64 || d == 128) ? 2 : 1;
}

static inline int attn_rows_per_cta(const problem_t *p, bool keysplit)
{
    if (!attn_tc_path(p)) return ATTN_CC_ROWS;
    return keysplit ? 16 * attn_keysplit_mt(p) : 16 * ATTN_WARPS;
}

/* The KEYSPLIT body's ring of K/V tiles, at d = 128 (other dims have only the
 * default):
 *  - lean: two stages instead of three, so that a CTA fits on an SM beside a CTA of
 *    the wgmma context body (bifurcated's decode part runs beside the context part,
 *    and its ranges are short: gen keys per stream);
 *  - deep: four stages (three tiles in flight instead of two), for a grid that
 *    holds at most one CTA per SM (fused's split grids are planned so, for tiles of
 *    up to 16 rows), where nothing else needs the SM's shared memory. Against
 *    three stages, four pay most on small grids and a little on split grids; six
 *    pay more on the former but cost on the latter. */
enum { ATTN_RING_DEFAULT = 0, ATTN_RING_LEAN = 1, ATTN_RING_DEEP = 2 };
#define ATTN_LEAN_STAGES 2
#ifndef ATTN_DEEP_STAGES
#define ATTN_DEEP_STAGES 4
#endif
/* The ring a problem's KEYSPLIT body gets when `ring` is asked for (an 8-bit cache has
 * no lean one: bifurcated asks for it beside its wgmma context body only, which an 8-bit
 * cache does not run). */
static inline int attn_ring(const problem_t *p, int ring)
{
    if (!attn_tc_path(p) || p->head_dim != 128) return ATTN_RING_DEFAULT;
    if (p->kv_quant != KV_QUANT_NONE && ring == ATTN_RING_LEAN) return ATTN_RING_DEFAULT;
    if (ring == ATTN_RING_DEEP && attn_keysplit_mt(p) != 1) return ATTN_RING_DEFAULT;
    return ring;
}

/* The pipeline stages (tc_shape's ST, doubled for 1-byte tiles) of the ROWSPLIT body on an
 * 8-bit cache (bifurcated's context part): as many of its CTAs fit on an SM as of the
 * 16-bit ROWSPLIT body's (3, 2 and 1 at d = 64, 128, 256), where the default's ring, and its
 * ring of row offsets, twice as long, would fit one fewer at d = 64 and 128. */
template <int D> struct kv8_rowsplit {
    static constexpr int ST = D == 64 ? 3 : (D == 128 ? 2 : 0);
    typedef tc_shape<D, 1, false, ST, 1> S;
};

/* Shared memory of one CTA of the KEYSPLIT body of an 8-bit cache (tc_shape's KVB 1),
 * or of its ROWSPLIT body (kv8_rowsplit). */
static inline int attn_smem_bytes_kv8(const problem_t *p, bool keysplit, int ring)
{
    const int mt = attn_keysplit_mt(p);
    if (!keysplit) {
        switch (p->head_dim) {
        case 64: return kv8_rowsplit<64>::S::SMEM;
        case 128: return kv8_rowsplit<128>::S::SMEM;
        case 256: return kv8_rowsplit<256>::S::SMEM;
        default: return 0;
        }
    }
    if (attn_ring(p, ring) == ATTN_RING_DEEP) return tc_shape<128, 1, true, ATTN_DEEP_STAGES, 1>::SMEM;
    switch (p->head_dim) {
    case 64: return mt == 2 ? tc_shape<64, 2, true, 0, 1>::SMEM : tc_shape<64, 1, true, 0, 1>::SMEM;
    case 128: return mt == 2 ? tc_shape<128, 2, true, 0, 1>::SMEM : tc_shape<128, 1, true, 0, 1>::SMEM;
    case 256: return tc_shape<256, 1, true, 0, 1>::SMEM;
    default: return 0;
    }
}

/* Shared memory of one CTA of the body the problem uses. */
static inline int attn_smem_bytes(const problem_t *p, bool keysplit, int ring = ATTN_RING_DEFAULT)
{
    if (!attn_tc_path(p)) return cc_smem_bytes(p->head_dim);
    if (p->kv_quant != KV_QUANT_NONE) return attn_smem_bytes_kv8(p, keysplit, ring);
    int mt = keysplit ? attn_keysplit_mt(p) : 1;
    if (keysplit && attn_ring(p, ring) == ATTN_RING_LEAN)
        return mt == 2 ? tc_shape<128, 2, true, ATTN_LEAN_STAGES>::SMEM : tc_shape<128, 1, true, ATTN_LEAN_STAGES>::SMEM;
    if (keysplit && attn_ring(p, ring) == ATTN_RING_DEEP) return tc_shape<128, 1, true, ATTN_DEEP_STAGES>::SMEM;
#define ATTN_SMEM_CASE(D)                                                                      \
    if (p->head_dim == D)                                                                      \
        return keysplit ? (mt == 2 ? tc_shape<D, 2, true>::SMEM : tc_shape<D, 1, true>::SMEM)  \
                        : tc_shape<D, 1, false>::SMEM;
    ATTN_SMEM_CASE(64) ATTN_SMEM_CASE(80) ATTN_SMEM_CASE(96) ATTN_SMEM_CASE(128) ATTN_SMEM_CASE(256)
#undef ATTN_SMEM_CASE
    return 0;
}

/* CTAs per SM the planner counts with: what shared memory allows, capped by the
 * register budget each body's __launch_bounds__ guarantees (tc: its MINB, which is
 * derived from the same shared-memory sum; cc: ATTN_CC_MINB), and by 2048 threads. */
static inline int attn_ctas_per_sm(const problem_t *p, bool keysplit, const device_info_t *dev)
{
    int per_sm = dev && dev->smem_per_sm > 0 ? dev->smem_per_sm : ATTN_SMEM_PER_SM;
    int n = per_sm / (attn_smem_bytes(p, keysplit) + ATTN_SMEM_RESERVED);
    int cap = attn_tc_path(p) ? 4 : ATTN_CC_MINB;
    if (n > cap) n = cap;
    return n < 1 ? 1 : n;
}

/* The split of `keys` keys over `items` independent CTAs, by the --multi-block and
 * --splits rules: off -> 1; --splits N -> N (fewer if there are not N tiles); auto ->
 * split_plan_auto; on -> auto but at least 2 when there are two tiles of keys. */
static inline split_plan_t attn_split(const problem_t *p, const device_info_t *dev, long items,
                                      int keys, int ctas_per_sm, int tile = ATTN_KEY_TILE)
{
    if (keys < 1) keys = 1;
    if (p->multi_block == MULTI_BLOCK_OFF) return split_plan_fixed(keys, 1, tile);
    if (p->splits > 0) return split_plan_fixed(keys, p->splits, tile);
    split_plan_t s = split_plan_fixed(keys, 1, tile);
    if (dev && dev->sm_count > 0)
        s = split_plan_auto(items, keys, tile, dev->sm_count, ctas_per_sm);
    if (p->multi_block == MULTI_BLOCK_ON && s.splits < 2) s = split_plan_fixed(keys, 2, tile);
    return s;
}

/* Where the partials of a KEYSPLIT launch are merged. The last CTA of a (stream,
 * kv head, row tile) folds them itself (combine_and_emit, with P.counters) when
 * that is little work: it saves a launch. With many valid rows per CTA (MQA-like
 * groups) times many slots, that one CTA would read megabytes of partials alone at
 * the tail of the grid, so a merge kernel spread over every (stream, head) row does
 * it instead. */
#define ATTN_TAIL_MERGE_MAX 256
static inline bool attn_tail_merge_fits(const problem_t *p, int nslots)
{
    const int stream_rows = problem_stream_rows(p);
    int rows = stream_rows < attn_rows_per_cta(p, true) ? stream_rows : attn_rows_per_cta(p, true);
    return (long)rows * nslots <= ATTN_TAIL_MERGE_MAX;
}

/* Partial-state workspace of nslots partials per (query token, query head). */
static inline size_t attn_partials_bytes(const problem_t *p, int nslots)
{
    if (nslots <= 1) return 0;
    return (size_t)problem_queries(p) * p->heads * nslots * ((size_t)p->head_dim + 2) * sizeof(float);
}

/* The fields every launch of a problem shares. */
static inline attn_params_t attn_params_base(const attn_args_t *a, int nslots)
{
    const problem_t *p = &a->problem;
    attn_params_t P;
    memset(&P, 0, sizeof P);
    P.geom = a->geom;
    P.q = a->q;
    P.out = a->out;
    P.table = a->block_table;
    P.indirection = p->indirection ? a->indirection : NULL;
    P.heads = p->heads;
    P.group = problem_group(p);
    P.kv_heads = p->kv_heads;
    P.nslots = nslots;
    P.ws_acc = static_cast<float *>(a->workspace);
    P.ws_ml = nslots > 1 ? reinterpret_cast<float2 *>(P.ws_acc + (size_t)problem_queries(p) * p->heads * nslots *
                                                                     p->head_dim)
                         : NULL;
    P.q_len = p->q_len;
    P.causal_end = problem_keys_of_token(p, 0);
    P.scale_log2 = (float)(problem_scale(p) * 1.4426950408889634);
    P.kv_scale = p->kv_quant != KV_QUANT_NONE ? a->kv_scale : NULL;
    P.kv_scale_heads = p->kv_scale == KV_SCALE_HEAD ? p->kv_heads : 1;
    return P;
}

typedef void (*attn_kernel_fn)(const attn_params_t);

/* Implemented in fused.cu, used by both kernels: one launch of the KEYSPLIT (or
 * CUDA-core) body over P (address mode addr, P.kv set), grid from P's extents, and
 * the merge of nslots partials into out. setup_keysplit raises the dynamic
 * shared-memory limit of the instantiation a problem uses; ring picks the lean or
 * deep instantiation where there is one (attn_ring; deep: contiguous cache only);
 * pdl: the merge is launched as the programmatic dependent of the grid just before it
 * on the stream (every grid that writes partials signals, attn_grid_dependents_go),
 * not where the stream waits on an event in between. */
cudaError_t attn_setup_keysplit(const problem_t *p, int addr, int ring);
/* The KEYSPLIT (or CUDA-core) instantiation of an 8-bit cache for a problem, address
 * mode and ring, NULL for another; in fused_kv8.cu, which compiles them beside fused.cu's
 * (ADDR_CONTIG, ADDR_PAGED), and for bifurcated's per-part address modes (ADDR_CTX on the
 * CUDA-core body, ADDR_DEC) in bifurcated_kv8_dec.cu, attn_keysplit_kv8_parts. */
attn_kernel_fn attn_keysplit_kv8(const problem_t *p, int addr, int ring);
attn_kernel_fn attn_keysplit_kv8_parts(const problem_t *p, int addr);
/* The ROWSPLIT instantiation of an 8-bit cache (bifurcated's context part on tensor cores,
 * ADDR_CTX or ADDR_PAGED), NULL for another; in bifurcated_kv8_ctx.cu. */
attn_kernel_fn attn_rowsplit_kv8(const problem_t *p, int addr);
cudaError_t attn_launch_keysplit(const problem_t *p, int addr, const attn_params_t *P, cudaStream_t stream,
                                 int ring);
cudaError_t attn_launch_merge(const problem_t *p, const attn_params_t *P, cudaStream_t stream, bool pdl);

#endif
