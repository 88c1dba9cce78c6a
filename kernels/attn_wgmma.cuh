/* The context part of `bifurcated` on Hopper's warpgroup tensor cores (wgmma,
 * sm_90a), for d = 128 in fp16/bf16 when a request's W*p query rows fill at least
 * one 64-row warpgroup tile. This is a flash-attention forward pass with many
 * query rows over one shared K/V stream: at large W*p it is bound by tensor-core
 * work, which mma.sync cannot feed at Hopper's rate (the B operand of every
 * mma.sync is re-read from shared memory by each warp through ldmatrix).
 *
 * CTA: two warpgroups (256 threads), 64 query rows each, 128 rows per CTA; both
 * share every K/V tile (on 128-key tiles a third warpgroup issues the copies). Keys stream through a 3-stage ring of K and V tiles:
 *  - contiguous context, and paged blocks of 64 keys or more: the TMA copies each
 *    tile (one thread issues four box loads, on a paged cache four per block the
 *    tile spans, after looking the blocks up) and a transaction barrier per stage
 *    says when it has landed. On 128-key tiles that thread is a producer
 *    warpgroup's, which refills a stage once the tile's last reader has arrived on
 *    its empty barrier (PRODUCER below says why); on 64-key tiles the last warp done
 *    with a tile refills its stage. Either way the warpgroups never wait on each
 *    other. Tiles are 64 keys (a 96 KiB ring that
 *    leaves room on the SM for a lean decode CTA) or 128 keys (192 KiB, the whole
 *    SM, half the per-tile costs) where the decode part is small or the context
 *    part's tensor work large, or where the 128-key body streams the decode part
 *    itself (bif_wide_fits in bifurcated.cu). With decode tiles (DEC) four of the
 *    ring's six slots hold the context's K and V tiles apart and the last two a
 *    fourth warpgroup's decode tile (wg_decode_warpgroup);
 *  - paged blocks of fewer than 64 keys: 64-key tiles copied with 16-byte cp.async,
 *    the next tile's row offsets fetched a tile ahead, and a CTA-wide barrier per
 *    tile. (A box per 16-key block, 32 per wide tile, makes the TMA path slower
 *    than this one.)
 * Within a warpgroup the two GEMMs are software-pipelined as in FlashAttention-3:
 * S_{t+1} = Q K_{t+1} and O += P_t V_t are issued together; the softmax of S_{t+1}
 * runs while P_t V_t is still on the tensor cores, and O is rescaled once it lands
 * (wg_wait_all_after keeps ptxas from moving that wait above the softmax).
 * Shared tiles use the 128-byte swizzle wgmma reads: a 128-element row is two
 * 64-element halves of 128 bytes, half h of a tile at h * rows * 128, and the
 * 16-byte chunk c of row r sits at chunk position c ^ (r & 7).
 *   S = Q Kᵀ: wgmma m64nKTk16, A = Q and B = K both K-major from shared memory.
 *   O += P V: wgmma m64n128k16, A = P in registers (the S accumulator layout is
 *   the A fragment layout, as with mma.sync), B = V MN-major (transposed) from
 *   shared memory.
 * The online softmax is the tensor-core body's, on the 64x64 S tile a warpgroup
 * holds (rows lane/4 and lane/4 + 8 of each warp's 16, as with mma.sync). The
 * epilogue stages (m, l, O) in the drained ring and shares combine_and_emit with
 * the other bodies (final output, or a split's partial and the last split's merge).
 *
 * The code, top to bottom: the shape (wg_shape_t) and the PTX wrappers; the
 * compile-time choices of an instantiation (wg_traits); what a CTA's warpgroups share
 * (wg_cta: shared-memory layout, barriers, tile addressing); the decode warpgroup
 * (wg_decode_tile, the copier, wg_decode_warpgroup) and the producer (wg_producer);
 * the tensor-core warpgroups' work item (wg_item: prologue, first_tile, step and
 * compute, epilogue); and the kernel, which hands each warpgroup its part. */
#ifndef ATTNBENCH_ATTN_WGMMA_CUH
#define ATTNBENCH_ATTN_WGMMA_CUH

#include <type_traits>
#include <cuda.h>
#include "attn_core.cuh"

#define WG_D 128
#define WG_ROWS 128          /* query rows per CTA: two warpgroups of 64 */
#define WG_THREADS 256
#define WG_STAGES 3          /* tile t+1 resident while t is consumed, one more in flight */
#define WG_KT ATTN_KEY_TILE  /* 64 keys per tile */

#define WG_KT_WIDE 128      /* the wide tiles: TMA path only, one CTA per SM */
#define WG_TMA_MIN_BLOCK 64 /* paged blocks the TMA path takes: at most KT / 64 boxes per tile */
/* The wide body's producer warpgroup (one thread of it issues the copies) and the
 * registers setmaxnreg deals out: the launch gives each of the 384 threads 168 (the
 * 64K file over 384, in steps of 8); the producer gives up what the two tensor-core
 * warpgroups need beyond that (232 each leave none of their registers spilled; the
 * producer's thread needs 40). With decode tiles a fourth warpgroup computes them
 * (wg_decode_warpgroup): 512 threads at 128 each, and 224 for the tensor-core
 * warpgroups (their loop spills none; at 216 it spills), 24 for the producer and 40
 * for the decode warpgroup (which then spills a little on a contiguous cache, in its
 * look-up of a tile, and more on a paged one, most in its tile loop's softmax; with
 * the copier, wg_copier, none in the decode warpgroup and some in the producer
 * warpgroup's two threads). */
#define WG_PRODUCER_THREADS 128
#define WG_MMA_REGS 232
#define WG_PRODUCER_REGS 40
#define WG_DEC_THREADS 128
#define WG_DEC_MMA_REGS 224
#define WG_DEC_PRODUCER_REGS 24
#define WG_DEC_REGS 40

/* KT: keys per tile. 64 (96 KiB ring) leaves room on the SM for a lean decode CTA;
 * 128 (192 KiB ring) halves the per-tile costs (barrier waits, row reductions, the
 * re-reads of Q by the S GEMM) and takes the whole SM (bif_wide_fits says where). */
template <int KT_>
struct wg_shape_t {
    static constexpr int KT = KT_;
    static constexpr int ROW_BYTES = WG_D * 2;
    static constexpr int HALF_TILE = KT * 128;                /* one 64-element half of a K or V tile */
    static constexpr int TILE = KT * ROW_BYTES;
    static constexpr int Q_HALF = WG_ROWS * 128;
    static constexpr int Q_BYTES = WG_ROWS * ROW_BYTES;       /* 32 KiB */
    static constexpr int PIPE = WG_STAGES * 2 * TILE;
    static constexpr int STAGING = WG_ROWS * ((WG_D + 8) * 4 + 8);
    static constexpr int RING = WG_STAGES * KT * 4;
    static constexpr int BARRIERS = 128;                      /* of the ring: full, empty, release counts */
    static constexpr int DEC_RED = 64 * 4;                    /* then the decode warpgroup's cross-warp scratch */
    static constexpr int ALIGN = 1024;                        /* swizzle atoms are 1 KiB aligned */
    /* the wide body's copies come from a producer warpgroup (wg_traits says why) */
    static constexpr bool PRODUCER = KT == WG_KT_WIDE;
    /* The wide body (TMA only) keeps no row offsets: past the ring, the paged decode
     * tiles' P^T (8 query columns of KT keys, two 1 KiB swizzle atoms), then the barriers and
     * the decode scratch. Its 2 KiB leave too little of the 227 KiB for a whole atom of
     * alignment slack: the dynamic shared window starts 1 KiB aligned on sm_90 (as
     * CUTLASS's and FlashAttention-3's swizzled layouts assume), and the kernel traps
     * where it would not fit (SLACK). */
    static constexpr int DEC_PT = PRODUCER ? 8 * KT * 2 : 0;
    static constexpr int TAIL = PRODUCER ? 512 : RING;
    static constexpr int BODY = Q_BYTES + PIPE + DEC_PT + TAIL;
    static constexpr int SLACK = BODY + ALIGN <= 227 * 1024 ? ALIGN : 227 * 1024 - BODY;
    static constexpr int SMEM = SLACK + BODY;
    static constexpr int THREADS = WG_THREADS + (PRODUCER ? WG_PRODUCER_THREADS : 0);
    static_assert(STAGING <= PIPE, "epilogue staging fits in the drained ring");
    static_assert(BARRIERS >= 2 * 4 * 8 + 16 + 32, "up to four slots' TMA barriers, the release counts, the decode slots' barriers");
    static_assert(TAIL >= BARRIERS + DEC_RED + 8 + 32, "the barriers and the decode scratch fit past the ring");
    static_assert(KT * (WG_D / 8) % WG_THREADS == 0, "tile copy divides among the threads");
    static_assert(SMEM <= 227 * 1024, "fits an SM's opt-in shared memory");

    /* Byte offset of 16-byte chunk ch (0..15) of row r in a swizzled tile of `rows` rows. */
    static __device__ __forceinline__ uint32_t off(int rows, int r, int ch)
    {
        return (uint32_t)((ch >> 3) * rows * 128 + r * 128 + (((ch & 7) ^ (r & 7)) << 4));
    }
};
typedef wg_shape_t<WG_KT> wg_shape;
/* The body's threads: with decode tiles (DEC), the decode warpgroup's besides. */
template <int KT, bool DEC> constexpr int wg_threads()
{
    return wg_shape_t<KT>::THREADS + (DEC ? WG_DEC_THREADS : 0);
}

/* Shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix Descriptor
 * Format"): start, leading and stride byte offsets in 16-byte units. K-major tiles:
 * the leading offset is unused (1) and the stride offset spans 8 rows (1 KiB).
 * MN-major tiles: the leading offset steps from one 64-element half to the next. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lead_bytes, uint32_t stride_bytes)
{
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)((lead_bytes >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((stride_bytes >> 4) & 0x3FFF) << 32) | (1ull << 62);
}
/* The descriptor of the matrix off_bytes further on from desc's: the start address is
 * the low 14 bits (16-byte units), and shared memory ends below 256 KiB, so the offset
 * adds to the low word without a carry out of the field. A GEMM's k steps take their
 * descriptors this way from one built per tile: built afresh from each address, their
 * masks and shifts took about a fifth of a tensor-core warp's instructions. */
__device__ __forceinline__ uint64_t wg_desc_at(uint64_t desc, uint32_t off_bytes)
{
    const uint32_t lo = (uint32_t)desc + (off_bytes >> 4), hi = (uint32_t)(desc >> 32);
    return ((uint64_t)hi << 32) | lo;
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_ENABLED 1

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Waits for every wgmma group once x is computed. ptxas schedules a plain wait_group as
 * early as it may, ahead of independent work the source placed before it: the softmax
 * that is meant to run while P V is on the tensor cores would run after it. This wait
 * is predicated on a test of x that always holds (x, a row sum, is >= 0 or NaN) but
 * that ptxas cannot decide, made warp-uniform by a vote (a divergent one makes ptxas
 * serialise every wgmma); so it cannot move above the code that computes x. The plain
 * wait after it is what the program's correctness rests on, and by then costs nothing. */
__device__ __forceinline__ void wg_wait_all_after(float x)
{
    asm volatile("{\n.reg .pred p;\nsetp.gtu.f32 p, %0, 0fBF800000;\nvote.sync.all.pred p, p, 0xffffffff;\n"
                 "@p wgmma.wait_group.sync.aligned 0;\n}\n" ::"f"(x)
                 : "memory");
    wg_wait<0>();
}
/* Pins accumulator registers at this point of the program, so the compiler neither
 * reads them before the wait that completes their wgmma nor moves writes past it. */
template <int N> __device__ __forceinline__ void wg_hold(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

/* cp.async writes shared memory through the generic proxy; wgmma reads it through the async one. */
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Transaction barriers and the tensor-memory accelerator (TMA): one thread copies a
 * whole tile with box loads (64 columns by KT keys, or by a block's keys) that land in
 * the 128-byte swizzle wgmma reads, and the barrier's phase flips once all their bytes
 * have arrived. */
__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar, int count)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity)
{
    asm volatile("{\n .reg .pred done;\n"
                 "WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 " @!done bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, int x, int y, int z, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)),
                 "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}

#define WG_F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_F16(i) WG_F4(i), WG_F4(i + 4), WG_F4(i + 8), WG_F4(i + 12)
#define WG_R32                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_R64                                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
    "%56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_SS(TY)                                                                                \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                 \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " WG_R32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
#define WG_SS128(TY)                                                                             \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                 \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " WG_R64 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
#define WG_RS(TY)                                                                                \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                 \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " WG_R64                            \
    ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"

/* d[64xN] (+)= A[64x16] B[16xN], N = 64 or 128, A and B K-major in shared memory. */
template <typename T>
__device__ __forceinline__ void wg_mma_ss(float (&d)[32], uint64_t da, uint64_t db, int accumulate)
{
    if constexpr (std::is_same<T, __half>::value)
        asm volatile(WG_SS("f16") : WG_F16(0), WG_F16(16) : "l"(da), "l"(db), "r"(accumulate));
    else
        asm volatile(WG_SS("bf16") : WG_F16(0), WG_F16(16) : "l"(da), "l"(db), "r"(accumulate));
}
template <typename T>
__device__ __forceinline__ void wg_mma_ss(float (&d)[64], uint64_t da, uint64_t db, int accumulate)
{
    if constexpr (std::is_same<T, __half>::value)
        asm volatile(WG_SS128("f16")
                     : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                     : "l"(da), "l"(db), "r"(accumulate));
    else
        asm volatile(WG_SS128("bf16")
                     : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                     : "l"(da), "l"(db), "r"(accumulate));
}

/* d[64x128] += A[64x16] B[16x128], A in registers, B MN-major in shared memory. */
template <typename T>
__device__ __forceinline__ void wg_mma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    if constexpr (std::is_same<T, __half>::value)
        asm volatile(WG_RS("f16")
                     : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    else
        asm volatile(WG_RS("bf16")
                     : WG_F16(0), WG_F16(16), WG_F16(32), WG_F16(48)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
/* d[64x8] (+)= A[64x16] B[16x8], both from shared memory, B K-major; A K-major, or
 * MN-major with TA = 1. The decode tiles' shapes: the keys (or V's dims) of a tile fill
 * M, the few queries of one stream N (wg_decode_tile). */
#define WG_N8(TY, TA)                                                                            \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"                                                  \
    "wgmma.mma_async.sync.aligned.m64n8k16.f32." TY "." TY " {%0, %1, %2, %3}, %4, %5, p, 1, 1, " TA ", 0;\n}\n"
template <typename T, int TA>
__device__ __forceinline__ void wg_mma_n8(float (&d)[4], uint64_t da, uint64_t db, int accumulate)
{
    if constexpr (std::is_same<T, __half>::value && TA)
        asm volatile(WG_N8("f16", "1") : WG_F4(0) : "l"(da), "l"(db), "r"(accumulate));
    else if constexpr (std::is_same<T, __half>::value)
        asm volatile(WG_N8("f16", "0") : WG_F4(0) : "l"(da), "l"(db), "r"(accumulate));
    else if constexpr (TA)
        asm volatile(WG_N8("bf16", "1") : WG_F4(0) : "l"(da), "l"(db), "r"(accumulate));
    else
        asm volatile(WG_N8("bf16", "0") : WG_F4(0) : "l"(da), "l"(db), "r"(accumulate));
}
#undef WG_N8
#undef WG_F4
#undef WG_F16
#undef WG_R32
#undef WG_R64
#undef WG_SS
#undef WG_SS128
#undef WG_RS
#endif

/* r[0] op ... op r[N-1] as a pairwise tree (N a power of two): log2(N) dependent steps
 * instead of N - 1. */
template <int N, typename Op>
__device__ __forceinline__ float wg_tree(float (&r)[N], Op op)
{
    if constexpr (N == 1) {
        return r[0];
    } else {
        float h[N / 2];
#pragma unroll
        for (int n = 0; n < N / 2; ++n) h[n] = op(r[n], r[n + N / 2]);
        return wg_tree<N / 2>(h, op);
    }
}

/* ---------------------------------------------------------------- compile-time choices */

/* The compile-time choices of one instantiation of the context body
 * (bifurcated.cu: wgmma_fn_t picks them from the plan).
 *  T        __half or __nv_bfloat16.
 *  ADDR     ADDR_CTX, the context K_c/V_c [B*2*g, m_c, d]; ADDR_PAGED, the pool.
 *  TMA      tiles copied by the TMA through ctx_map, the context K/V as a 3-D tensor of
 *           [d]-element rows in boxes 64 columns wide: ADDR_CTX, K_c/V_c [B*2*g, m_c, d]
 *           in boxes of KT rows; ADDR_PAGED, the pool [blocks*2*g, S, d] in boxes of
 *           min(S, KT) rows (S >= WG_TMA_MIN_BLOCK; bifurcated.cu: bif_encode_ctx_map).
 *           Else (ADDR_PAGED) cp.async.
 *  KT       keys per tile (wg_shape_t); the wide tiles (WG_KT_WIDE) bring the producer
 *           warpgroup (PRODUCER).
 *  PERSIST  the CTA takes the work items blockIdx.x, blockIdx.x + gridDim.x, ... in
 *           turn, in a persistent grid that holds only some of the SMs while the decode
 *           part streams on the others (bifurcated.cu: bif_ctx_sms); else a grid of one
 *           CTA per item. The TMA barriers are initialised once; their phases run on
 *           across items (tile_base counts the tiles of the CTA's earlier items).
 *  DEC      the wide body streams the decode part itself, in a decode warpgroup
 *           (wg_decode_warpgroup).
 *  COPIER   with DEC, a thread of the producer warpgroup copies the decode tiles, not
 *           one of the decode warpgroup (wg_copier). */
template <typename T_, int ADDR_, bool TMA_, int KT_ = WG_KT, bool PERSIST_ = false, bool DEC_ = false,
          bool COPIER_ = false>
struct wg_traits {
    typedef T_ T;
    static constexpr int ADDR = ADDR_;
    static constexpr bool TMA = TMA_;
    static constexpr int KT = KT_;
    static constexpr bool PERSIST = PERSIST_, DEC = DEC_, COPIER = COPIER_;
    typedef wg_shape_t<KT> S;
    /* Who issues the copies. The wide body has a warpgroup of its own for them (one
     * thread of it issues every box; launched with S::THREADS threads), as in
     * FlashAttention-3: were the last warp done with a tile to refill its stage, the
     * tile's box loads (four, or eight on 64-key blocks) and block lookups would hold
     * up that warp, and with it its warpgroup, whose wgmma wait for all four warps. The
     * 64-key body leaves room on its SM for a lean decode CTA, which a third
     * warpgroup's registers would take; there the last reader refills the stage. */
    static constexpr bool PRODUCER = S::PRODUCER;
    /* TMA: the ring holds per slot a transaction barrier (full), a barrier its readers
     * arrive on for the producer (empty) and a release count instead. A slot is a
     * stage of a K and a V tile, or with DEC one K or one V tile: NSLOTS of them for
     * the context, K and V freed apart, K_{t+1} once S_{t+1} has read it, V_t once
     * P_t V_t has (four slots so freed keep as many tiles in flight as three stages),
     * and the last two slots the decode warpgroup's. */
    static constexpr int NSLOTS = DEC ? 4 : WG_STAGES;
    static constexpr int SLOT_BYTES = DEC ? S::TILE : 2 * S::TILE;
    /* paged, TMA: at most a box per block the tile spans */
    static constexpr int MAX_BOXES = KT / WG_TMA_MIN_BLOCK;
    static constexpr int THREADS = wg_threads<KT, DEC>();
    /* The TMA copies whole tiles (of one dense [m_c, d] matrix per request and head,
     * or of a few blocks) and per-stage barriers replace the CTA-wide barrier of the
     * cp.async ring, so the two warpgroups need not move in lockstep. */
    static_assert(KT == WG_KT || TMA, "wide tiles are for the TMA path");
    static_assert(TMA || ADDR == ADDR_PAGED, "the contiguous context is copied by the TMA");
    static_assert(!DEC || (PRODUCER && !PERSIST), "the decode tiles are the wide body's, one item per CTA");
    static_assert(!COPIER || DEC, "the copier copies decode tiles");
    static_assert(!DEC || (NSLOTS + 2) * S::TILE <= S::PIPE, "the decode warpgroup's K and V slots fit");
};

/* Paged: the boxes of a tile, a box per block the tile spans (S >= 64: one or two). */
template <int MAX_BOXES> struct wg_tile_boxes { int row[MAX_BOXES], block[MAX_BOXES]; };
/* Where a decode tile is: its stream's K_d/V_d matrix and first key, or its blocks. */
template <int MAX_BOXES> struct wg_dec_source { int mat, key; wg_tile_boxes<MAX_BOXES> tb; };

#ifdef WG_ENABLED
/* ---------------------------------------------------------------- the CTA */

/* What every warpgroup of a CTA shares: its parameters, the shared-memory layout and
 * its barriers, its thread's place, and the addressing of its tiles. */
template <typename Tr>
struct wg_cta {
    typedef typename Tr::T T;
    typedef typename Tr::S S;
    typedef wg_tile_boxes<Tr::MAX_BOXES> tile_boxes;
    typedef wg_dec_source<Tr::MAX_BOXES> dec_source;
    static constexpr int ADDR = Tr::ADDR, KT = Tr::KT, NSLOTS = Tr::NSLOTS, MAX_BOXES = Tr::MAX_BOXES;
    /* Named barriers between the tensor-core warpgroups and the decode warpgroup (0 is
     * __syncthreads, 1 the tensor-core warpgroups'): Q has landed; the decode partials
     * are stored. Each is one side's arrive and the other's sync. */
    static constexpr int DEC_Q_BAR = 2, DEC_DONE_BAR = 3;

    const attn_params_t &P;
    const CUtensorMap &ctx_map, &dec_map;
    unsigned char *q_s, *pipe, *dec_pt;
    uint32_t *off_ring;
    uint64_t *full, *empty;
    unsigned int *released;
    /* the decode K and V slots' transaction barriers (past released), and with the
     * copier those the decode warpgroup's threads arrive on once done with each slot */
    uint64_t *dec_kfull, *dec_vfull, *dec_kempty, *dec_vempty;
    /* decode tiles: the decode warpgroup's 4 warps' column maxima, then sums */
    float *dec_red;
    uint64_t *dec_bar;
    int tid, lane, warp, wg;
    const T *kv;
    int dec_tiles;   /* tiles of a decode job */
    int group_shift; /* log2 of the group, for the decode tiles */
    int wg_phase;    /* the decode warpgroup's barrier's phase */

    /* base: the 1 KiB-aligned start of the dynamic shared memory (wg_smem_base). */
    __device__ __forceinline__ wg_cta(const attn_params_t &P_, const CUtensorMap &ctx_map_,
                                      const CUtensorMap &dec_map_, unsigned char *base)
        : P(P_), ctx_map(ctx_map_), dec_map(dec_map_)
    {
        q_s = base;
        pipe = base + S::Q_BYTES;
        dec_pt = pipe + S::PIPE;
        unsigned char *tail = dec_pt + S::DEC_PT;
        off_ring = reinterpret_cast<uint32_t *>(tail);
        full = reinterpret_cast<uint64_t *>(tail);
        empty = full + NSLOTS;
        released = reinterpret_cast<unsigned int *>(empty + NSLOTS);
        dec_kfull = empty + NSLOTS + 2;
        dec_vfull = dec_kfull + 1;
        dec_kempty = dec_vfull + 1;
        dec_vempty = dec_kempty + 1;
        dec_red = reinterpret_cast<float *>(tail + S::BARRIERS);
        dec_bar = reinterpret_cast<uint64_t *>(tail + S::BARRIERS + S::DEC_RED);
        /* wg through a shuffle: the compiler then knows it is the same in the whole warp
         * and keeps what derives from it, the GEMMs' descriptors among them, in uniform
         * registers */
        tid = threadIdx.x;
        lane = tid & 31;
        warp = tid >> 5;
        wg = __shfl_sync(0xffffffffu, warp >> 2, 0);
        kv = static_cast<const T *>(P.kv);
        /* a job is mostly one tile (up to 128 decode keys a stream), which spares
         * dec_job the division's dozens of dependent instructions before every tile */
        dec_tiles = Tr::DEC ? max((P.dec_keys + KT - 1) / KT, 1) : 1;
        /* the decode tiles' groups are powers of two (bif_dec_streamable): a shift, not a
         * division's dependent chain before every tile; through a shuffle, as wg, to
         * stay in uniform registers */
        group_shift = Tr::DEC ? __shfl_sync(0xffffffffu, __ffs(P.group) - 1, 0) : 0;
        wg_phase = 0;
    }

    /* The TMA barriers, initialised by the CTA's first thread. */
    __device__ __forceinline__ void init_barriers()
    {
        if (Tr::TMA && tid == 0) {
            for (int j = 0; j < NSLOTS; ++j) {
                mbar_init(smem_addr(&full[j]), 1);
                /* the producer's slot is free once every tensor-core warp has arrived */
                mbar_init(smem_addr(&empty[j]), Tr::PRODUCER ? WG_THREADS / 32 : 1);
            }
            if (Tr::DEC) {
                mbar_init(smem_addr(dec_bar), WG_DEC_THREADS);
                mbar_init(smem_addr(dec_kfull), 1);
                mbar_init(smem_addr(dec_vfull), 1);
                if (Tr::COPIER) {
                    mbar_init(smem_addr(dec_kempty), WG_DEC_THREADS);
                    mbar_init(smem_addr(dec_vempty), WG_DEC_THREADS);
                }
            }
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
    }

    /* The barrier of the two tensor-core warpgroups (named barrier 1 beside the
     * producer, which goes at its own pace). */
    __device__ __forceinline__ void cta_sync() const
    {
        if (Tr::PRODUCER) asm volatile("bar.sync 1, %0;\n" ::"n"(WG_THREADS) : "memory");
        else __syncthreads();
    }
    static __device__ __forceinline__ void dec_sync(int id)
    {
        asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(WG_THREADS + WG_DEC_THREADS) : "memory");
    }
    static __device__ __forceinline__ void dec_arrive(int id)
    {
        asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(WG_THREADS + WG_DEC_THREADS) : "memory");
    }

    /* The tiles of item c, and ring slot h of the CTA's sequence (a stage of a K and a V
     * tile, or with DEC one of them; its K tile first), its barriers and the wait for it
     * to land. */
    __device__ __forceinline__ int tiles_of(const cta_coord &c) const
    {
        return c.k_hi > c.k_lo ? (c.k_hi - c.k_lo + KT - 1) / KT : 0;
    }
    __device__ __forceinline__ uint32_t slot_at(int h) const { return smem_addr(pipe + (h % NSLOTS) * Tr::SLOT_BYTES); }
    __device__ __forceinline__ uint32_t slot_full(int h) const { return smem_addr(&full[h % NSLOTS]); }
    __device__ __forceinline__ uint32_t slot_empty(int h) const { return smem_addr(&empty[h % NSLOTS]); }
    __device__ __forceinline__ void slot_wait(int h) const { mbar_wait(slot_full(h), (h / NSLOTS) & 1); }

    /* Paged: the block id of key pos from the block table row trow (the context part
     * reads its request's first stream's row, and no key that indirection moves, so none
     * of kv_row_ref's indirection test), loaded before a warp's GEMMs and first used
     * after them (kv_row_ref says why). */
    __device__ __forceinline__ int64_t table_row(int stream) const { return (int64_t)stream * P.geom.max_blocks_per_seq; }
    __device__ __forceinline__ const int32_t *block_entry(int64_t trow, int pos) const
    {
        return P.table + trow + (pos >> P.geom.block_shift);
    }
    __device__ __forceinline__ int block_at(int64_t trow, int pos) const { return __ldg(block_entry(trow, pos)); }
    __device__ __forceinline__ int block_of(const cta_coord &c, int pos) const
    {
        return block_at(table_row(c.unit * P.addr_stream_mult), pos);
    }
    /* Paged: the first key of box b of the tile of keys [key, key + KT) below k_hi. A
     * box past the context part's keys (whole blocks) copies the tile's first block
     * again: finite values, which the softmax masks. */
    __device__ __forceinline__ int box_pos(int key, int b, int k_hi) const
    {
        const int pos = key + b * min(KT, P.geom.block_size);
        return pos < k_hi ? pos : key;
    }
    /* Paged: the boxes of the tile of keys [key, key + KT) below k_hi, from the block
     * table row trow, their block ids loaded together. */
    __device__ __forceinline__ tile_boxes boxes_at(int64_t trow, int key, int k_hi) const
    {
        tile_boxes tb{};
        if constexpr (ADDR == ADDR_PAGED) {
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
                const int pos = box_pos(key, b, k_hi);
                tb.row[b] = pos & (P.geom.block_size - 1);
                tb.block[b] = block_at(trow, pos);
            }
        }
        return tb;
    }
    __device__ __forceinline__ tile_boxes look_up_in(const cta_coord &c, int j) const
    {
        return boxes_at(table_row(c.unit * P.addr_stream_mult), c.k_lo + j * KT, c.k_hi);
    }
    /* TMA: the K (which = 0) or V (1) tile of kv head `head` to shared address dst on
     * barrier bar: ADDR_CTX, rows [key, key + KT) of matrix `mat` (its V matrix g
     * further) of map; paged, the boxes tb of the pool (ctx_map). */
    __device__ __forceinline__ void tma_kv_in(const CUtensorMap *map, uint32_t dst, uint32_t bar, int mat, int key,
                                              int head, const tile_boxes &tb, int which) const
    {
        if constexpr (ADDR == ADDR_CTX) {
            const int m = mat + which * P.kv_heads;
            tma_load_3d(dst, map, 0, key, m, bar);
            tma_load_3d(dst + S::HALF_TILE, map, 64, key, m, bar);
        } else {
            const int box_keys = min(KT, P.geom.block_size);
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
                if (b * box_keys >= KT) break;
                const uint32_t off = b * box_keys * 128;
                const int m = tb.block[b] * 2 * P.kv_heads + head + which * P.kv_heads;
                tma_load_3d(dst + off, &ctx_map, 0, tb.row[b], m, bar);
                tma_load_3d(dst + S::HALF_TILE + off, &ctx_map, 64, tb.row[b], m, bar);
            }
        }
    }
    /* TMA: ring slot h, its barrier expecting the slot's bytes: with DEC the K or V tile
     * `which`, else the stage's K and V tiles. */
    __device__ __forceinline__ void tma_slot_in(const CUtensorMap *map, int mat, int key, int head, int h,
                                                const tile_boxes &tb, int which) const
    {
        const uint32_t bar = slot_full(h), dst = slot_at(h);
        mbar_expect_tx(bar, Tr::SLOT_BYTES);
        if (Tr::DEC) {
            tma_kv_in(map, dst, bar, mat, key, head, tb, which);
        } else {
            tma_kv_in(map, dst, bar, mat, key, head, tb, 0);
            tma_kv_in(map, dst + S::TILE, bar, mat, key, head, tb, 1);
        }
    }
    /* Context tile j of the item c (the boxes look_up_in found) into slot h (no DEC). */
    __device__ __forceinline__ void tma_tile_in(const cta_coord &c, int j, int h, const tile_boxes &tb) const
    {
        tma_slot_in(&ctx_map, c.unit * 2 * P.kv_heads + c.head, c.k_lo + j * KT, c.head, h, tb, 0);
    }

    /* Decode tiles (DEC, with P.dec_keys > 0): a job is one stream (p <= 8 consecutive
     * rows of the tile) and its dec_tiles tiles of KT keys; a split takes every
     * splits-th stream of the tile (wg_decode_warpgroup). Decode tile i's job: */
    __device__ __forceinline__ int dec_job(int i) const { return dec_tiles == 1 ? i : i / dec_tiles; }
    /* the item's decode tiles */
    __device__ __forceinline__ int dec_ntiles(const cta_coord &c) const
    {
        if (!Tr::DEC || P.dec_keys <= 0) return 0;
        const int streams = min(max(P.rows_per_unit - c.row_tile * WG_ROWS, 0), WG_ROWS) / P.group;
        return (streams > c.split ? (streams - c.split + P.splits - 1) / P.splits : 0) * dec_tiles;
    }
    /* Job q: the tile row of its stream's first query. */
    __device__ __forceinline__ int dec_job_row(const cta_coord &c, int q) const { return (c.split + q * P.splits) * P.group; }
    __device__ __forceinline__ int dec_stream(const cta_coord &c, int row) const
    {
        return c.unit * P.streams_per_unit + ((c.row_tile * WG_ROWS + row) >> group_shift);
    }
    /* decode tile i's stream and its first key within the stream's decode keys */
    __device__ __forceinline__ int dec_where(const cta_coord &c, int i, int *stream) const
    {
        const int q = dec_job(i);
        *stream = dec_stream(c, dec_job_row(c, q));
        return (i - q * dec_tiles) * KT;
    }
    /* Decode tile i of the item c (tile i % dec_tiles of job i / dec_tiles): where it is,
     * written to the shared dst. Paged, the block ids come by cp.async, to be waited for
     * (cp_async_wait) before dst is read: loaded into registers, the thread that looks
     * the tile up would wait out the table's round trip (an L2 miss under the decode
     * part's streaming, often) before every decode tile, and its warpgroup with it at
     * the next GEMM. */
    __device__ __forceinline__ void dec_look_up(const cta_coord &c, int i, dec_source *dst) const
    {
        int stream;
        const int key = dec_where(c, i, &stream);
        dst->mat = stream * 2 * P.kv_heads + c.head;
        dst->key = key;
        if constexpr (ADDR == ADDR_PAGED) {
            const int64_t trow = table_row(stream);
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
                const int pos = box_pos(P.key_end + key, b, P.key_end + P.dec_keys);
                dst->tb.row[b] = pos & (P.geom.block_size - 1);
                cp_async4(smem_addr(&dst->tb.block[b]), block_entry(trow, pos));
            }
            cp_async_commit();
        }
    }
    /* The same in registers, for the copier, whose look-up of a tile goes out before it
     * waits to copy the one before it. */
    __device__ __forceinline__ dec_source dec_source_of(const cta_coord &c, int i) const
    {
        int stream;
        const int key = dec_where(c, i, &stream);
        dec_source src{stream * 2 * P.kv_heads + c.head, key, tile_boxes{}};
        if constexpr (ADDR == ADDR_PAGED) src.tb = boxes_at(table_row(stream), P.key_end + key, P.key_end + P.dec_keys);
        return src;
    }
    /* the decode warpgroup's own barrier: an mbarrier of its 128 threads, whose phases
     * its threads count alike */
    __device__ __forceinline__ void wg_bar()
    {
        const uint32_t bar = smem_addr(dec_bar);
        mbar_arrive(bar);
        mbar_wait(bar, wg_phase);
        wg_phase ^= 1;
    }
};

/* ---------------------------------------------------------------- the decode warpgroup */

/* Decode tiles (the wide body, DEC, with P.dec_keys > 0). A fourth warpgroup, the decode
 * warpgroup, streams the decode keys of the row tile's streams (K_d/V_d through
 * dec_map, or the streams' own blocks of the pool) beside the context part, so that
 * their DRAM traffic and their small GEMMs run under the context part's tensor-core
 * work instead of between its iterations (computed by the tensor-core warpgroups
 * between their context iterations instead, a tile would cost its owner its whole
 * time, whoever else waited). A job is one stream and its dec_tiles tiles of KT keys,
 * each of which leaves a partial of its own (slot splits + k), so no state lives from
 * one tile to the next. The decode warpgroup's first thread, or the copier, copies
 * each tile into the ring's last two slots (K and V) once the tile before it is done
 * with them.
 *
 * wg_decode_tile: decode tile i of item c, its K tile at kp and its V tile after it
 * (pv). A stream's p <= 8 queries are too few for a 64-row tile, so the GEMMs are
 * transposed, the tile's keys (and V's dims) filling M and the queries N = 8 (the
 * 8-row group of Q that holds them, the others ignored): S^T = K Q^T in two m64n8
 * blocks of 64 keys, a column softmax whose max and sum cross the 4 warps through
 * shared memory, P^T (paged, in a buffer of its own, dec_pt, else over the K tile,
 * which S^T has finished reading), and O^T = V^T P^T in two m64n8 blocks of 64 dims:
 * 1/16 of a context tile's tensor work. k_read runs once every warp's S^T is done
 * with the K tile, v_wait before V is read, v_read once every warp's O^T is done with
 * it. The tile leaves its partial (m, l, O) in decode slot k for the merge. The thread
 * holds keys (or dims) mb*64 + 16*(warp%4) + lane/4 + 8h and queries 2*(lane%4) + e,
 * at [mb][2h + e]. */
template <typename Tr, typename KRead, typename VWait, typename VRead>
__device__ __forceinline__ void wg_decode_tile(wg_cta<Tr> &cta, const cta_coord &c, int i, unsigned char *kp,
                                               KRead k_read, VWait v_wait, VRead v_read)
{
    typedef typename Tr::T T;
    typedef typename Tr::S S;
    constexpr int KT = Tr::KT;
    const attn_params_t &P = cta.P;
    const int lane = cta.lane;
    const uint32_t kbuf = smem_addr(kp), vbuf = kbuf + S::TILE;
    const int q = cta.dec_job(i), k = i - q * cta.dec_tiles;
    const int row = cta.dec_job_row(c, q);
    const int row0 = row & ~7, wq = cta.warp & 3;
    float *red = cta.dec_red;
    unsigned char *pt = Tr::ADDR == ADDR_PAGED ? cta.dec_pt : kp;
    float st[2][4], ot[2][4];
    const uint64_t kd = wg_desc(kbuf, 16, 1024), qd = wg_desc(smem_addr(cta.q_s) + row0 * 128, 16, 1024);
    wg_fence();
#pragma unroll
    for (int mb = 0; mb < 2; ++mb)
#pragma unroll
        for (int kk = 0; kk < WG_D / 16; ++kk)
            wg_mma_n8<T, 0>(st[mb], wg_desc_at(kd, (kk >> 2) * S::HALF_TILE + mb * 64 * 128 + (kk & 3) * 32),
                            wg_desc_at(qd, (kk >> 2) * S::Q_HALF + (kk & 3) * 32), kk > 0);
    wg_commit();
    wg_wait<0>();
    wg_hold(st[0]);
    wg_hold(st[1]);
    /* the column maxima, masked past the stream's decode keys */
    const int nvalid = min(KT, P.dec_keys - k * KT);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int mb = 0; mb < 2; ++mb)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int key = mb * 64 + wq * 16 + (lane >> 2) + 8 * (x >> 1);
            if (key >= nvalid) st[mb][x] = -INFINITY;
            mx[x & 1] = fmaxf(mx[x & 1], st[mb][x]);
        }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) mx[e] = fmaxf(mx[e], __shfl_xor_sync(0xffffffffu, mx[e], o));
        if (lane < 4) red[wq * 8 + 2 * lane + e] = mx[e];
    }
    cta.wg_bar();
    k_read();
    float m[2], l[2] = {0.f, 0.f};
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int col = 2 * (lane & 3) + e;
        /* every tile has a valid key, so the max is finite */
        m[e] = fmaxf(fmaxf(red[col], red[8 + col]), fmaxf(red[16 + col], red[24 + col])) * P.scale_log2;
#pragma unroll
        for (int mb = 0; mb < 2; ++mb)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int key = mb * 64 + wq * 16 + (lane >> 2) + 8 * h;
                const float pe = fast_exp2(fmaf(st[mb][2 * h + e], P.scale_log2, -m[e]));
                l[e] += pe;
                *reinterpret_cast<T *>(pt + (key >> 6) * 1024 + col * 128 + ((((key & 63) >> 3) ^ col) << 4) +
                                       (key & 7) * 2) = dt<T>::from_f(pe);
            }
#pragma unroll
        for (int o = 4; o < 32; o <<= 1) l[e] += __shfl_xor_sync(0xffffffffu, l[e], o);
        if (lane < 4) red[32 + wq * 8 + 2 * lane + e] = l[e];
    }
    /* V's rows past the decode keys are zeroed (a paged block's free rows hold
     * anything, NaN included, and 0 * NaN would reach O) */
    v_wait();
    if constexpr (Tr::ADDR == ADDR_PAGED) {
        unsigned char *pv = kp + S::TILE;
        for (int x = (cta.tid & 127) + nvalid * 16; x < KT * 16; x += 128)
            *reinterpret_cast<uint4 *>(pv + (x & 8) / 8 * S::HALF_TILE + (x >> 4) * 128 + (x & 7) * 16) =
                make_uint4(0, 0, 0, 0);
    }
    fence_proxy_async(); /* P^T (and V's zeroed rows), written through the generic proxy, are read by wgmma */
    cta.wg_bar();
    const uint64_t vd = wg_desc(vbuf, S::HALF_TILE, 1024), pd = wg_desc(smem_addr(pt), 16, 1024);
    wg_fence();
#pragma unroll
    for (int mb = 0; mb < 2; ++mb)
#pragma unroll
        for (int ks = 0; ks < KT / 16; ++ks)
            wg_mma_n8<T, 1>(ot[mb], wg_desc_at(vd, mb * S::HALF_TILE + ks * 16 * 128),
                            wg_desc_at(pd, (ks >> 2) * 1024 + (ks & 3) * 32), ks > 0);
    wg_commit();
    wg_wait<0>();
    wg_hold(ot[0]);
    wg_hold(ot[1]);
    v_read();
    const int stream = cta.dec_stream(c, row), col0 = row - row0;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int col = 2 * (lane & 3) + e;
        if (col < col0 || col >= col0 + P.group) continue;
        const int64_t slot_id =
            ((int64_t)stream * P.heads + c.head * P.group + col - col0) * P.nslots + P.slot_base + P.splits + k;
#pragma unroll
        for (int mb = 0; mb < 2; ++mb)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                P.ws_acc[slot_id * WG_D + mb * 64 + wq * 16 + (lane >> 2) + 8 * h] = ot[mb][2 * h + e];
        if (wq == 0 && lane < 4)
            P.ws_ml[slot_id] = make_float2(m[e] * ATTN_LN2, red[32 + col] + red[40 + col] + red[48 + col] + red[56 + col]);
    }
}

/* The copier (COPIER): a thread of the producer warpgroup's second warp copies each
 * decode tile's K and V into the ring's last two slots, each on a barrier of its own,
 * once every thread of the decode warpgroup has arrived done with the tile before it
 * there (wg_decode_warpgroup says when), each tile looked up while the one before it
 * is copied and computed. The decode warpgroup then holds no copy or look-up code: on
 * a paged cache its 40 registers then suffice (with the copies it spills in its tile
 * loop), but the producer's spill more, and the context's copies come later: it pays
 * where a CTA's decode tiles outnumber its context tiles (bif_copier_fits). */
template <typename Tr>
__device__ __forceinline__ void wg_copier(wg_cta<Tr> &cta)
{
    typedef typename Tr::S S;
    typedef typename wg_cta<Tr>::dec_source dec_source;
    const cta_coord c = cta_decompose(cta.P, blockIdx.x);
    const int n = cta.dec_ntiles(c);
    const CUtensorMap *map = Tr::ADDR == ADDR_CTX ? &cta.dec_map : &cta.ctx_map;
    const uint32_t kb = smem_addr(cta.pipe + Tr::NSLOTS * S::TILE), vb = kb + S::TILE;
    const uint32_t kf = smem_addr(cta.dec_kfull), vf = smem_addr(cta.dec_vfull);
    dec_source src = n > 0 ? cta.dec_source_of(c, 0) : dec_source{};
    for (int i = 0; i < n; ++i) {
        const dec_source next = i + 1 < n ? cta.dec_source_of(c, i + 1) : dec_source{};
        if (i > 0) mbar_wait(smem_addr(cta.dec_kempty), (i - 1) & 1);
        mbar_expect_tx(kf, S::TILE);
        cta.tma_kv_in(map, kb, kf, src.mat, src.key, c.head, src.tb, 0);
        if (i > 0) mbar_wait(smem_addr(cta.dec_vempty), (i - 1) & 1);
        mbar_expect_tx(vf, S::TILE);
        cta.tma_kv_in(map, vb, vf, src.mat, src.key, c.head, src.tb, 1);
        src = next;
    }
}

/* The producer: the CTA's tiles in turn, in the order the tensor-core warps free them
 * (with DEC each K and V tile apart, in ring order: K_0, then per iteration t K_{t+1},
 * V_t): the first NSLOTS at once, slot h >= NSLOTS once the tile NSLOTS before it is
 * released (the slot's empty barrier completes a phase per tile, so the one to wait for
 * is h / NSLOTS - 1; the slot cannot run a phase ahead, as its next tile is not issued
 * yet). The blocks are looked up before the wait. */
template <typename Tr>
__device__ __forceinline__ void wg_producer(wg_cta<Tr> &cta)
{
    typedef typename wg_cta<Tr>::tile_boxes tile_boxes;
    constexpr int NSLOTS = Tr::NSLOTS;
    const attn_params_t &P = cta.P;
    int h = 0;
    auto put = [&](const CUtensorMap *map, int mat, int key, int head, const tile_boxes &tb, int which) {
        if (h >= NSLOTS) mbar_wait(cta.slot_empty(h), (h / NSLOTS - 1) & 1);
        cta.tma_slot_in(map, mat, key, head, h, tb, which);
        ++h;
    };
    for (int64_t item = blockIdx.x; item < (Tr::PERSIST ? attn_items(P) : (int64_t)blockIdx.x + 1); item += gridDim.x) {
        const cta_coord c = cta_decompose(P, item);
        const int ntiles = cta.tiles_of(c);
        auto ctx_in = [&](int j, const tile_boxes &tb, int which) {
            put(&cta.ctx_map, c.unit * 2 * P.kv_heads + c.head, c.k_lo + j * Tr::KT, c.head, tb, which);
        };
        if constexpr (!Tr::DEC) {
            for (int j = 0; j < ntiles; ++j) ctx_in(j, cta.look_up_in(c, j), 0);
        } else {
            tile_boxes tb_t = ntiles > 0 ? cta.look_up_in(c, 0) : tile_boxes{};
            if (ntiles > 0) ctx_in(0, tb_t, 0);
            for (int t = 0; t < ntiles; ++t) {
                const tile_boxes tb_next = t + 1 < ntiles ? cta.look_up_in(c, t + 1) : tile_boxes{};
                if (t + 1 < ntiles) ctx_in(t + 1, tb_next, 0);
                ctx_in(t, tb_t, 1);
                tb_t = tb_next;
            }
        }
    }
}

/* The producer warpgroup of the wide body: it gives up registers (WG_PRODUCER_REGS)
 * for the tensor-core warpgroups; one thread issues the context copies and, with
 * COPIER, one of its second warp the decode tiles'. */
template <typename Tr>
__device__ __forceinline__ void wg_producer_warpgroup(wg_cta<Tr> &cta)
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Tr::DEC ? WG_DEC_PRODUCER_REGS : WG_PRODUCER_REGS));
    if (Tr::COPIER && cta.tid == WG_THREADS + 32) {
        wg_copier(cta);
        return;
    }
    if (cta.tid != WG_THREADS) return;
    wg_producer(cta);
}

/* The decode warpgroup: every decode tile of the CTA's item in turn, its K and V
 * copied into the ring's last two slots by the warpgroup's first thread, each on a
 * barrier of its own, the next tile's V once every warp's O^T is done with the V slot.
 * On a paged cache the next tile's K goes as soon as every warp's S^T is done with the
 * K slot (P^T in a buffer of its own), so that its eight boxes land while this tile's
 * softmax, O^T and stores go on. On a contiguous cache, where that is slower, it goes
 * with the V, and P^T over the K tile. With the copier (COPIER) its threads arrive on
 * the K and V slots' empty barriers at those points instead. Its own code only, after
 * its setmaxnreg: code both kinds of warpgroup reached would be held to the launch's
 * registers. */
template <typename Tr>
__device__ __forceinline__ void wg_decode_warpgroup(wg_cta<Tr> &cta)
{
    typedef typename Tr::S S;
    typedef typename wg_cta<Tr>::dec_source dec_source;
    constexpr int ADDR = Tr::ADDR;
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(WG_DEC_REGS));
    const cta_coord c = cta_decompose(cta.P, blockIdx.x);
    const int n = cta.dec_ntiles(c);
    cta.dec_sync(wg_cta<Tr>::DEC_Q_BAR); /* Q has landed */
    unsigned char *kp = cta.pipe + Tr::NSLOTS * S::TILE;
    const uint32_t kf = smem_addr(cta.dec_kfull), vf = smem_addr(cta.dec_vfull);
    if constexpr (Tr::COPIER) {
        const uint32_t ke = smem_addr(cta.dec_kempty), ve = smem_addr(cta.dec_vempty);
        for (int i = 0; i < n; ++i) {
            mbar_wait(kf, i & 1);
            wg_decode_tile(
                cta, c, i, kp,
                [&]() {
                    if (ADDR == ADDR_PAGED) mbar_arrive(ke);
                },
                [&]() { mbar_wait(vf, i & 1); },
                [&]() {
                    if (ADDR != ADDR_PAGED) mbar_arrive(ke);
                    mbar_arrive(ve);
                });
        }
    } else {
        const uint32_t kb = smem_addr(kp), vb = kb + S::TILE;
        const bool issuer = cta.tid == WG_THREADS + WG_PRODUCER_THREADS;
        /* a tile's blocks are looked up while the tile before it is computed, and kept
         * in shared memory, which spares the warpgroup's few registers */
        dec_source *next = reinterpret_cast<dec_source *>(cta.dec_bar + 1);
        const CUtensorMap *map = ADDR == ADDR_CTX ? &cta.dec_map : &cta.ctx_map;
        auto issue = [&](uint32_t dst, uint32_t bar, int which) {
            if constexpr (ADDR == ADDR_PAGED) cp_async_wait<0>(); /* next's block ids */
            const dec_source src = *next;
            mbar_expect_tx(bar, S::TILE);
            cta.tma_kv_in(map, dst, bar, src.mat, src.key, c.head, src.tb, which);
        };
        if (issuer && n > 0) {
            cta.dec_look_up(c, 0, next);
            issue(kb, kf, 0);
            issue(vb, vf, 1);
            if (n > 1) cta.dec_look_up(c, 1, next);
        }
        for (int i = 0; i < n; ++i) {
            mbar_wait(kf, i & 1);
            wg_decode_tile(
                cta, c, i, kp,
                [&]() {
                    if (ADDR == ADDR_PAGED && issuer && i + 1 < n) issue(kb, kf, 0);
                },
                [&]() { mbar_wait(vf, i & 1); },
                [&]() {
                    cta.wg_bar();
                    if (issuer && i + 1 < n) {
                        if (ADDR != ADDR_PAGED) issue(kb, kf, 0);
                        issue(vb, vf, 1);
                        if (i + 2 < n) cta.dec_look_up(c, i + 2, next);
                    }
                });
        }
    }
    __threadfence_block();
    cta.dec_arrive(wg_cta<Tr>::DEC_DONE_BAR); /* the partials are stored */
}

/* ---------------------------------------------------------------- the tensor-core warpgroups */

/* One work item of the two tensor-core warpgroups: its tiles, this thread's share of
 * the softmax state and of O, and the steps that compute them. */
template <typename Tr>
struct wg_item {
    typedef typename Tr::T T;
    typedef typename Tr::S S;
    typedef wg_tile_boxes<Tr::MAX_BOXES> tile_boxes;
    static constexpr int ADDR = Tr::ADDR, KT = Tr::KT, NSLOTS = Tr::NSLOTS;
    static constexpr bool TMA = Tr::TMA, PRODUCER = Tr::PRODUCER, DEC = Tr::DEC;
    static constexpr int NS = KT / 2, KS = KT / 16; /* S values per thread, k16 steps of P V */
    static constexpr uint32_t NO_ROW = 0xffffffffu; /* cp.async: a row past the item's keys */

    wg_cta<Tr> &cta;
    const attn_params_t &P;
    const cta_coord c;
    const int tile_base; /* the CTA's tiles before this item's */
    const int ntiles;
    /* the item's entries in the CTA's tile sequence: with decode tiles its K and V
     * tiles apart; else its stages */
    const int nring;
    /* Warps that read each tile: the stage is refilled (or freed for the producer) when
     * the last of them is done. */
    unsigned int readers;
    bool wg_has_rows;
    uint64_t q_desc; /* this warpgroup's 64 Q rows: K-major A, k step kk at half kk/4, byte 32*(kk%4) */
    float o[64], s[NS];
    float m[2], l[2], alpha[2];
    uint32_t pa[2][KS][4]; /* P of the tile in P V and of the next one: the loop alternates them */
    int ring_next;         /* DEC: the item's next ring entry (the producer's K_0 took entry 0) */

    __device__ __forceinline__ wg_item(wg_cta<Tr> &cta_, int64_t item, int tile_base_)
        : cta(cta_), P(cta_.P), c(cta_decompose(cta_.P, item)), tile_base(tile_base_), ntiles(cta_.tiles_of(c)),
          nring(DEC ? 2 * ntiles : ntiles)
    {
        readers = 4u * (wg_rows(1) ? 2u : 1u);
    }

    /* cp.async: the row index (offset / d) of key `row` of tile j, NO_ROW past the end,
     * from its block id (row_block). */
    __device__ __forceinline__ int row_block(int j, int row) const
    {
        const int pos = c.k_lo + j * KT + row;
        return pos < c.k_hi ? cta.block_of(c, pos) : 0;
    }
    __device__ __forceinline__ uint32_t row_index(int j, int row, int block) const
    {
        const int pos = c.k_lo + j * KT + row;
        return pos < c.k_hi ? (uint32_t)(kv_row_at<ADDR>(P, c.head, pos, block) / WG_D) : NO_ROW;
    }
    /* Stage of context tile j: its place in the CTA's whole tile sequence with the TMA
     * (the barriers' phases count on across items), in the item's with cp.async. */
    __device__ __forceinline__ int slot(int j) const { return TMA ? tile_base + j : j; }
    __device__ __forceinline__ uint32_t stage_k(int j) const { return cta.slot_at(slot(j)); }
    /* cp.async: tile j's K and V rows into its stage, from the row offsets in off_ring */
    __device__ __forceinline__ void load_tile(int j) const
    {
        const uint32_t ks = stage_k(j), vs = ks + S::TILE;
        const uint32_t *rows = cta.off_ring + (j % WG_STAGES) * KT;
#pragma unroll
        for (int k = 0; k < KT * (WG_D / 8) / WG_THREADS; ++k) {
            int i = cta.tid + k * WG_THREADS;
            int row = i >> 4, ch = i & 15;
            uint32_t r = rows[row];
            int bytes = r != NO_ROW ? 16 : 0;
            const T *src = cta.kv + (r != NO_ROW ? (int64_t)r * WG_D + ch * 8 : 0);
            cp_async16(ks + S::off(KT, row, ch), src, bytes);
            cp_async16(vs + S::off(KT, row, ch), src + (r != NO_ROW ? P.vstride : 0), bytes);
        }
    }
    __device__ __forceinline__ tile_boxes look_up(int j) const { return cta.look_up_in(c, j); }
    __device__ __forceinline__ void tma_tile(int j, const tile_boxes &tb) const { cta.tma_tile_in(c, j, slot(j), tb); }
    __device__ __forceinline__ void tma_wait(int j) const { cta.slot_wait(slot(j)); }
    /* Whether warpgroup w has query rows in this CTA's row tile. */
    __device__ __forceinline__ bool wg_rows(int w) const
    {
        return c.row_tile * P.rows_per_cta + w * 64 < P.rows_per_unit;
    }

    /* S = Q K_j (asynchronous: committed, not waited). */
    __device__ __forceinline__ void issue_s(uint32_t kbuf)
    {
        const uint64_t k_desc = wg_desc(kbuf, 16, 1024);
#pragma unroll
        for (int kk = 0; kk < WG_D / 16; ++kk) {
            const uint32_t koff = (kk >> 2) * S::HALF_TILE + (kk & 3) * 32;
            const uint32_t qoff = (kk >> 2) * S::Q_HALF + (kk & 3) * 32;
            wg_mma_ss<T>(s, wg_desc_at(q_desc, qoff), wg_desc_at(k_desc, koff), kk > 0);
        }
        wg_commit();
    }
    /* O += P V_j from the A fragments in a (asynchronous). */
    __device__ __forceinline__ void issue_pv(uint32_t vbuf, const uint32_t (&a)[KS][4])
    {
        const uint64_t v_desc = wg_desc(vbuf, S::HALF_TILE, 1024);
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) wg_mma_rs<T>(o, a[ks], wg_desc_at(v_desc, ks * 16 * 128));
        wg_commit();
    }
    /* Online softmax of tile j's S into the A fragments a, m and l; alpha is the factor O
     * still owes (applied once the P V in flight has landed). Thread holds rows lane/4
     * (h = 0) and lane/4 + 8 (h = 1) of its warp's 16, keys 8n + 2*(lane%4) + {0,1}. */
    __device__ __forceinline__ void softmax_tile(int j, uint32_t (&a)[KS][4])
    {
        const int lane = cta.lane;
        /* s is only read here: it is the output of a wgmma group issued in the same
         * stage as the P V still in flight, and writing it would make the compiler
         * serialise the two. The row max is taken on the raw logits (the scale is
         * positive) and the scale folded into one FFMA per element; only the last,
         * partial tile pays for masking. */
        const int nvalid = min(KT, c.k_hi - (c.k_lo + j * KT));
        float pr[NS];
        if (nvalid < KT) {
#pragma unroll
            for (int i = 0; i < NS; ++i) {
                int key = 8 * (i >> 2) + 2 * (lane & 3) + (i & 1);
                pr[i] = key < nvalid ? s[i] : -INFINITY;
            }
        } else {
#pragma unroll
            for (int i = 0; i < NS; ++i) pr[i] = s[i];
        }
        /* pairwise trees, not chains, and the thread's two rows side by side at each
         * step (their shuffles together): the softmax's dependent latencies sit between
         * a warpgroup's GEMM issues, with two warps per scheduler to hide them */
        float mx[2], m_use[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float red[KT / 8];
#pragma unroll
            for (int n = 0; n < KT / 8; ++n) red[n] = fmaxf(pr[4 * n + 2 * h], pr[4 * n + 2 * h + 1]);
            mx[h] = wg_tree<KT / 8>(red, [](float a, float b) { return fmaxf(a, b); });
        }
#pragma unroll
        for (int x = 1; x <= 2; x <<= 1)
#pragma unroll
            for (int h = 0; h < 2; ++h) mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], x));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float m_new = fmaxf(m[h], mx[h] * P.scale_log2);
            m_use[h] = m_new == -INFINITY ? 0.f : m_new;
            alpha[h] = fast_exp2(m[h] - m_use[h]);
            m[h] = m_new;
        }
#pragma unroll
        for (int i = 0; i < NS; ++i) pr[i] = fast_exp2(fmaf(pr[i], P.scale_log2, -m_use[(i >> 1) & 1]));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float red[KT / 8];
#pragma unroll
            for (int n = 0; n < KT / 8; ++n) red[n] = pr[4 * n + 2 * h] + pr[4 * n + 2 * h + 1];
            l[h] = l[h] * alpha[h] + wg_tree<KT / 8>(red, [](float a, float b) { return a + b; });
        }
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            a[ks][0] = dt<T>::pack(pr[8 * ks + 0], pr[8 * ks + 1]);
            a[ks][1] = dt<T>::pack(pr[8 * ks + 2], pr[8 * ks + 3]);
            a[ks][2] = dt<T>::pack(pr[8 * ks + 4], pr[8 * ks + 5]);
            a[ks][3] = dt<T>::pack(pr[8 * ks + 6], pr[8 * ks + 7]);
        }
    }
    /* O owes alpha once the running max moved; after the first tiles it rarely does,
     * so a warp whose rows all kept their max skips the 64 multiplies. */
    __device__ __forceinline__ void rescale_o()
    {
        if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
        for (int n = 0; n < WG_D / 8; ++n) {
            o[4 * n] *= alpha[0];
            o[4 * n + 1] *= alpha[0];
            o[4 * n + 2] *= alpha[1];
            o[4 * n + 3] *= alpha[1];
        }
    }
    /* The producer body's ring entry ls of the item is read: every tensor-core warp
     * arrives on its empty barrier (the last NSLOTS of an item are freed after the
     * epilogue, which stages its output in the ring). */
    __device__ __forceinline__ void release(int ls) const
    {
        if (cta.lane == 0 && ls + NSLOTS < nring) mbar_arrive(cta.slot_empty(tile_base + ls));
    }

    __device__ __forceinline__ void prologue();
    __device__ __forceinline__ void first_tile();
    template <typename Cur, typename NextReady, typename VReady, typename KRead>
    __device__ __forceinline__ void compute(int t, Cur cur, uint32_t k_next, uint32_t v_t, NextReady next_ready,
                                           VReady v_ready, KRead k_read, bool has_rows);
    template <typename Cur> __device__ __forceinline__ void step(int t, Cur cur);
    __device__ __forceinline__ void epilogue();
};

/* Prologue: the release counts (TMA) or the row offsets of the first tiles, Q, then
 * STAGES-1 tiles in flight (TMA: all STAGES, unless the producer copies them). */
template <typename Tr>
__device__ __forceinline__ void wg_item<Tr>::prologue()
{
    const int tid = cta.tid;
    if (TMA) {
        if (tid < WG_STAGES) cta.released[tid] = 0;
    } else if (tid < KT) {
        int first[WG_STAGES];
#pragma unroll
        for (int j = 0; j < WG_STAGES; ++j) first[j] = row_block(j, tid);
#pragma unroll
        for (int j = 0; j < WG_STAGES; ++j)
            cta.off_ring[j * KT + tid] = j < ntiles ? row_index(j, tid, first[j]) : NO_ROW;
    }
    for (int i = tid; i < WG_ROWS * (WG_D / 8); i += WG_THREADS) {
        int r = i >> 4, ch = i & 15, stream = 0, head = 0;
        bool ok = row_target(P, c, r, &stream, &head);
        const T *src = static_cast<const T *>(P.q) + (ok ? ((int64_t)stream * P.heads + head) * WG_D + ch * 8 : 0);
        cp_async16(smem_addr(cta.q_s) + S::off(WG_ROWS, r, ch), src, ok ? 16 : 0);
    }
    cta.cta_sync();
    if (TMA) {
        cp_async_commit();
        if (!PRODUCER && tid == 0) {
            if constexpr (ADDR == ADDR_CTX) {
                for (int j = 0; j < WG_STAGES && j < ntiles; ++j) tma_tile(j, tile_boxes{});
            } else {
                /* every lookup first: each copy's asm orders the loads after it */
                tile_boxes first[WG_STAGES];
#pragma unroll
                for (int j = 0; j < WG_STAGES; ++j) first[j] = j < ntiles ? look_up(j) : tile_boxes{};
#pragma unroll
                for (int j = 0; j < WG_STAGES; ++j)
                    if (j < ntiles) tma_tile(j, first[j]);
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < WG_STAGES - 1; ++j) {
            if (j < ntiles) load_tile(j);
            cp_async_commit();
        }
    }

    wg_has_rows = wg_rows(cta.wg);
    q_desc = wg_desc(smem_addr(cta.q_s) + cta.wg * 64 * 128, 16, 1024);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        m[h] = -INFINITY;
        l[h] = 0.f;
        alpha[h] = 1.f;
    }
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    ring_next = 1;
}

/* Q and the first tile are resident: S_0 and its softmax, which the loop's first
 * iteration's P_0 V_0 takes. */
template <typename Tr>
__device__ __forceinline__ void wg_item<Tr>::first_tile()
{
    if (TMA) cp_async_wait<0>(); /* Q */
    else cp_async_wait<WG_STAGES - 2>();
    fence_proxy_async();
    cta.cta_sync();
    if (DEC) cta.dec_arrive(wg_cta<Tr>::DEC_Q_BAR); /* Q for the decode warpgroup */
    if (wg_has_rows && ntiles > 0) {
        if (TMA) tma_wait(0);
        wg_fence();
        issue_s(cta.slot_at(slot(0)));
        wg_wait<0>();
        wg_hold(s);
        softmax_tile(0, pa[0]);
    }
    if (DEC && ntiles > 0) {
        if (!wg_has_rows) cta.slot_wait(tile_base);
        release(0); /* K_0 */
    }
}

/* The GEMMs and softmax of iteration t (none for a warpgroup without rows): P_t V_t from
 * pa[t % 2], softmax of tile t+1 into pa[(t+1) % 2]. Software pipeline within a
 * warpgroup: while P_t V_t runs on the tensor cores, S_{t+1} = Q K_{t+1} (issued just
 * before it) is already done and its softmax runs on the other units; tile t+1 must be
 * resident during iteration t. Each branch issues and retires its own wgmma groups (a
 * group left in flight across a branch makes the compiler serialise every wgmma).
 * K_{t+1} is at k_next, V_t at v_t; next_ready waits for K_{t+1} (or its stage) and
 * v_ready for V_t, where the caller has not; k_read is told once S_{t+1} has read
 * K_{t+1}. */
template <typename Tr>
template <typename Cur, typename NextReady, typename VReady, typename KRead>
__device__ __forceinline__ void wg_item<Tr>::compute(int t, Cur cur, uint32_t k_next, uint32_t v_t,
                                                     NextReady next_ready, VReady v_ready, KRead k_read,
                                                     bool has_rows)
{
    constexpr int C = Cur::value;
    if (has_rows && t + 1 < ntiles) {
        next_ready();
        v_ready();
        wg_hold(o);
        wg_fence();
        issue_s(k_next);
        issue_pv(v_t, pa[C]);
        wg_wait<1>();
        k_read();
        wg_hold(s);
        softmax_tile(t + 1, pa[1 - C]);
        wg_wait_all_after(l[0] + l[1]);
        wg_hold(o);
        rescale_o();
    } else if (has_rows) {
        v_ready();
        wg_hold(o);
        wg_fence();
        issue_pv(v_t, pa[C]);
        wg_wait<0>();
        wg_hold(o);
    }
}

/* Iteration t with its loads. The buffer index of pa must be a constant (register
 * arrays), so the loop runs in pairs (cur: t % 2). */
template <typename Tr>
template <typename Cur>
__device__ __forceinline__ void wg_item<Tr>::step(int t, Cur cur)
{
    if constexpr (PRODUCER && !DEC) {
        /* tile t in slot t; a warpgroup without rows waits for each tile to land
         * before it frees it (so that it cannot arrive for a slot's next tile in the
         * current phase) */
        if (wg_has_rows)
            compute(t, cur, cta.slot_at(tile_base + t + 1), cta.slot_at(tile_base + t) + S::TILE,
                    [&]() { cta.slot_wait(tile_base + t + 1); }, []() {}, []() {}, true);
        else
            cta.slot_wait(tile_base + t);
        release(t);
        return;
    }
    if constexpr (DEC) {
        /* Entries in ring order: K_{t+1}, V_t. A warpgroup without rows waits for each
         * to land before it frees it. */
        const int lk = t + 1 < ntiles ? ring_next++ : -1, lv = ring_next++;
        if (wg_has_rows) {
            compute(t, cur, lk >= 0 ? cta.slot_at(tile_base + lk) : 0u, cta.slot_at(tile_base + lv),
                    [&]() { cta.slot_wait(tile_base + lk); }, [&]() { cta.slot_wait(tile_base + lv); },
                    [&]() { release(lk); }, true);
        } else {
            if (lk >= 0) cta.slot_wait(tile_base + lk);
            cta.slot_wait(tile_base + lv);
            if (lk >= 0) release(lk);
        }
        release(lv);
        return;
    }
    if (TMA) {
        if (!wg_has_rows) return;
        /* Paged: every warp looks up the blocks of the tile it may refill its stage
         * with before computing, whichever warp turns out to refill it. */
        tile_boxes next{};
        if (ADDR == ADDR_PAGED && cta.lane == 0 && t + WG_STAGES < ntiles) next = look_up(t + WG_STAGES);
        compute(t, cur, stage_k(t + 1), stage_k(t) + S::TILE, [&]() { tma_wait(t + 1); }, []() {}, []() {}, true);
        /* Tile t is read (S_t one step ago, P_t V_t now): the last reading warp frees
         * its stage for the producer, or refills it with tile t + STAGES. (The last
         * STAGES tiles of an item are freed after the epilogue, which stages its
         * output in the ring.) The count only grows within an item, so no reset
         * races with the next round's arrivals. */
        if (cta.lane == 0) {
            unsigned int n = atomicAdd(&cta.released[slot(t) % WG_STAGES], 1u) + 1u;
            if (n == readers * (unsigned)(t / WG_STAGES + 1) && t + WG_STAGES < ntiles) tma_tile(t + WG_STAGES, next);
        }
        return;
    }
    cp_async_wait<WG_STAGES - 3>();
    fence_proxy_async();
    __syncthreads(); /* tile t+1 visible to all; tile t-1's buffer free */
    if (t + WG_STAGES - 1 < ntiles) load_tile(t + WG_STAGES - 1);
    cp_async_commit();
    const bool fetch = cta.tid < KT && t + WG_STAGES < ntiles;
    const int next_block = fetch ? row_block(t + WG_STAGES, cta.tid) : 0;
    compute(t, cur, stage_k(t + 1), stage_k(t) + S::TILE, []() {}, []() {}, []() {}, wg_has_rows);
    if (fetch) cta.off_ring[((t + WG_STAGES) % WG_STAGES) * KT + cta.tid] = row_index(t + WG_STAGES, cta.tid, next_block);
}

/* The epilogue: the state (m, l, O) staged in the drained ring, then combine_and_emit
 * (final output, or a split's partial and the last split's merge), or with decode tiles
 * over an unsplit context the fold of every partial of the rows (fold_and_emit). The
 * producer's last slots are freed once the staging is read. */
template <typename Tr>
__device__ __forceinline__ void wg_item<Tr>::epilogue()
{
    const int lane = cta.lane;
    /* the merge behind this grid, a programmatic dependent, may be set up now */
    attn_grid_dependents_go();
    cp_async_wait<0>();
    cta.cta_sync();
    float *st_o = reinterpret_cast<float *>(cta.pipe);
    float *st_m = st_o + WG_ROWS * (WG_D + 8);
    float *st_l = st_m + WG_ROWS;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        int row = cta.warp * 16 + (lane >> 2) + 8 * h;
        if ((lane & 3) == 0) { st_m[row] = m[h]; st_l[row] = lsum; }
#pragma unroll
        for (int n = 0; n < WG_D / 8; ++n)
            *reinterpret_cast<float2 *>(st_o + row * (WG_D + 8) + 8 * n + 2 * (lane & 3)) =
                make_float2(o[4 * n + 2 * h], o[4 * n + 2 * h + 1]);
    }
    if (DEC) cta.dec_sync(wg_cta<Tr>::DEC_DONE_BAR); /* and the decode warpgroup's partials are stored */
    else cta.cta_sync();
    /* With one split the CTA holds every partial of its rows: the context's, staged,
     * and its decode tiles' in the workspace (stored by the decode warpgroup before
     * the barrier above, which orders them for every thread of the two warpgroups).
     * It folds them and writes the output itself, and the step needs no merge launch
     * (bif_folds_in_cta). */
    if (DEC && P.fold) {
        /* the decode tiles' partials land past the staging, in the drained ring */
        constexpr int LAND = (S::STAGING + 15) / 16 * 16;
        static_assert(!DEC || LAND + WG_ROWS * WG_D * 4 <= S::PIPE, "the fold's landing fits in the ring");
        static_assert(WG_ROWS / (WG_THREADS / 32) <= 32, "a lane holds each of its warp's rows' m and l");
        fold_and_emit<T>(P, c, st_o, st_m, st_l, WG_ROWS, WG_D, WG_THREADS, cta.dec_tiles,
                         reinterpret_cast<float *>(cta.pipe + LAND));
    } else {
        combine_and_emit<T>(P, c, st_o, st_m, st_l, WG_ROWS, 1, WG_ROWS, WG_D, WG_THREADS);
    }
    if (PRODUCER) {
        /* the staging is read: the ring's last STAGES tiles are free for the producer */
        fence_proxy_async();
        cta.cta_sync();
        if (cta.tid == 0)
            for (int j = nring > NSLOTS ? nring - NSLOTS : 0; j < nring; ++j)
                mbar_arrive(cta.slot_empty(tile_base + j), WG_THREADS / 32);
    }
}

/* One work item of the tensor-core warpgroups; returns its ring entries. */
template <typename Tr>
__device__ __forceinline__ int wg_run_item(wg_cta<Tr> &cta, int64_t item, int tile_base)
{
    wg_item<Tr> it(cta, item, tile_base);
    it.prologue();
    it.first_tile();
    for (int t = 0; t < it.ntiles; t += 2) {
        it.step(t, std::integral_constant<int, 0>());
        if (t + 1 < it.ntiles) it.step(t + 1, std::integral_constant<int, 1>());
    }
    it.epilogue();
    return it.nring;
}

/* The dynamic shared memory's start, aligned for the swizzle atoms (wg_shape_t: SLACK). */
template <typename S>
__device__ __forceinline__ unsigned char *wg_smem_base(unsigned char *smem_raw)
{
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t pad = (S::ALIGN - (raw & (S::ALIGN - 1))) & (S::ALIGN - 1);
    if (pad > S::SLACK) __trap();
    return smem_raw + pad;
}
#endif /* WG_ENABLED */

/* ---------------------------------------------------------------- the kernel */

/* The context body of one instantiation Tr (wg_traits): the barriers, then each
 * warpgroup's part: the producer's copies (wide body), the decode warpgroup's tiles
 * (DEC), and the tensor-core warpgroups' work items. */
template <typename Tr>
__global__ void __launch_bounds__(Tr::THREADS, 1)
    attn_wgmma_ctx_kernel(const attn_params_t P, const __grid_constant__ CUtensorMap ctx_map,
                          const __grid_constant__ CUtensorMap dec_map)
{
#ifdef WG_ENABLED
    extern __shared__ __align__(128) unsigned char smem_raw[];
    wg_cta<Tr> cta(P, ctx_map, dec_map, wg_smem_base<typename Tr::S>(smem_raw));
    cta.init_barriers();
    if constexpr (Tr::PRODUCER) {
        __syncthreads(); /* the barriers are initialised */
        if (cta.wg == 2) {
            wg_producer_warpgroup(cta);
            return;
        }
        if (Tr::DEC && cta.wg == 3) {
            wg_decode_warpgroup(cta);
            return;
        }
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Tr::DEC ? WG_DEC_MMA_REGS : WG_MMA_REGS));
    }
    if (Tr::PERSIST) {
        int tile_base = 0;
        for (int64_t item = blockIdx.x; item < attn_items(P); item += gridDim.x) {
            tile_base += wg_run_item(cta, item, tile_base);
            /* The next item's copies overwrite the staging (TMA and cp.async through the
             * async and generic proxies) and Q: every thread is done reading both. */
            fence_proxy_async();
            cta.cta_sync();
        }
    } else {
        wg_run_item(cta, blockIdx.x, 0);
    }
#else
    __trap(); /* built without sm_90a: the host never picks this body (bif_wgmma_fits) */
#endif
}

#endif
