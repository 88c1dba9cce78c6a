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
 *    part's tensor work large (bif_wide_fits in bifurcated.cu);
 *  - paged blocks of fewer than 64 keys: 64-key tiles copied with 16-byte cp.async,
 *    the next tile's row offsets fetched a tile ahead, and a CTA-wide barrier per
 *    tile. (A box per 16-key block, 32 per wide tile, made the TMA path 16-21%
 *    slower than this one on the H100's GQA and MHA rows at W = 512, 16k.)
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
 * the other bodies (final output, or a split's partial and the last split's merge). */
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
 * warpgroups need beyond that. */
#define WG_PRODUCER_THREADS 128
#define WG_MMA_REGS 224
#define WG_PRODUCER_REGS 56

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
    static constexpr int ALIGN = 1024;                        /* swizzle atoms are 1 KiB aligned */
    static constexpr int SMEM = ALIGN + Q_BYTES + PIPE + RING;
    /* the wide body's copies come from a producer warpgroup (attn_wgmma_ctx_kernel says why) */
    static constexpr bool PRODUCER = KT == WG_KT_WIDE;
    static constexpr int THREADS = WG_THREADS + (PRODUCER ? WG_PRODUCER_THREADS : 0);
    static_assert(STAGING <= PIPE, "epilogue staging fits in the drained ring");
    static_assert(RING >= WG_STAGES * (2 * 8 + 4), "the TMA barriers and release counts fit in the ring");
    static_assert(KT * (WG_D / 8) % WG_THREADS == 0, "tile copy divides among the threads");
    static_assert(SMEM <= 227 * 1024, "fits an SM's opt-in shared memory");

    /* Byte offset of 16-byte chunk ch (0..15) of row r in a swizzled tile of `rows` rows. */
    static __device__ __forceinline__ uint32_t off(int rows, int r, int ch)
    {
        return (uint32_t)((ch >> 3) * rows * 128 + r * 128 + (((ch & 7) ^ (r & 7)) << 4));
    }
};
typedef wg_shape_t<WG_KT> wg_shape;

/* Shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix Descriptor
 * Format"): start, leading and stride byte offsets in 16-byte units. K-major tiles:
 * the leading offset is unused (1) and the stride offset spans 8 rows (1 KiB).
 * MN-major tiles: the leading offset steps from one 64-element half to the next. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr, uint32_t lead_bytes, uint32_t stride_bytes)
{
    return (uint64_t)((saddr & 0x3FFFF) >> 4) | ((uint64_t)((lead_bytes >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((stride_bytes >> 4) & 0x3FFF) << 32) | (1ull << 62);
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

/* TMA: tiles copied by the TMA through ctx_map, the context K/V as a 3-D tensor of
 * [d]-element rows in boxes 64 columns wide: ADDR_CTX, K_c/V_c [B*2*g, m_c, d] in boxes
 * of KT rows; ADDR_PAGED, the pool [blocks*2*g, S, d] in boxes of min(S, KT) rows
 * (S >= WG_TMA_MIN_BLOCK; bifurcated.cu: bif_encode_ctx_map). Else (ADDR_PAGED) cp.async.
 *
 * PERSIST: the CTA takes the work items blockIdx.x, blockIdx.x + gridDim.x, ... in
 * turn, in a persistent grid that holds only some of the SMs while the decode part
 * streams on the others (bifurcated.cu: bif_ctx_sms); else a grid of one CTA per
 * item. The TMA barriers are initialised once; their phases run on across items
 * (tile_base counts the tiles of the CTA's earlier items). */
template <typename T, int ADDR, bool TMA, int KT = WG_KT, bool PERSIST = false>
__global__ void __launch_bounds__(wg_shape_t<KT>::THREADS, 1)
    attn_wgmma_ctx_kernel(const attn_params_t P, const __grid_constant__ CUtensorMap ctx_map)
{
#ifdef WG_ENABLED
    typedef wg_shape_t<KT> S;
    /* The TMA copies whole tiles (of one dense [m_c, d] matrix per request and head,
     * or of a few blocks) and per-stage barriers replace the CTA-wide barrier of the
     * cp.async ring, so the two warpgroups need not move in lockstep. */
    static_assert(KT == WG_KT || TMA, "wide tiles are for the TMA path");
    static_assert(TMA || ADDR == ADDR_PAGED, "the contiguous context is copied by the TMA");
    /* Who issues the copies. The wide body has a warpgroup of its own for them (one
     * thread of it issues every box; launched with S::THREADS threads),
     * as in FlashAttention-3: where the last warp done with a tile refilled its stage,
     * the tile's box loads (four, or eight on 64-key blocks) and block lookups held up
     * that warp, and with it its warpgroup, whose wgmma wait for all four warps. The
     * 64-key body leaves room on its SM for a lean decode CTA, which a third
     * warpgroup's registers would take; there the last reader refills the stage. */
    constexpr bool PRODUCER = S::PRODUCER;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    unsigned char *base = smem_raw + ((S::ALIGN - (raw & (S::ALIGN - 1))) & (S::ALIGN - 1));
    unsigned char *q_s = base;
    unsigned char *pipe = base + S::Q_BYTES;
    uint32_t *off_ring = reinterpret_cast<uint32_t *>(pipe + S::PIPE);
    /* TMA: the ring holds per stage a transaction barrier (full), a barrier its last
     * reader arrives on for the producer (empty) and a release count instead */
    uint64_t *full = reinterpret_cast<uint64_t *>(pipe + S::PIPE);
    uint64_t *empty = full + WG_STAGES;
    unsigned int *released = reinterpret_cast<unsigned int *>(empty + WG_STAGES);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
    const T *kv = static_cast<const T *>(P.kv);

    if (TMA && tid == 0) {
        for (int j = 0; j < WG_STAGES; ++j) {
            mbar_init(smem_addr(&full[j]), 1);
            mbar_init(smem_addr(&empty[j]), 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    /* The barrier of the two tensor-core warpgroups (named barrier 1 beside the
     * producer, which goes at its own pace). */
    auto cta_sync = [&]() {
        if (PRODUCER) asm volatile("bar.sync 1, %0;\n" ::"n"(WG_THREADS) : "memory");
        else __syncthreads();
    };

    /* The tiles of item c, and the stage (its K tile, its transaction barrier) of the
     * CTA's tile number slot. */
    auto tiles_of = [&](const cta_coord &c) { return c.k_hi > c.k_lo ? (c.k_hi - c.k_lo + KT - 1) / KT : 0; };
    auto stage_of = [&](int slot) { return smem_addr(pipe + (slot % WG_STAGES) * 2 * S::TILE); };
    auto full_of = [&](int slot) { return smem_addr(&full[slot % WG_STAGES]); };
    /* Paged: the block id of context key pos, from the request's first stream's table
     * row (the context part reads no key that indirection moves, so none of kv_row_ref's
     * indirection test), loaded before a warp's GEMMs and first used after them
     * (kv_row_ref says why). */
    auto block_of = [&](const cta_coord &c, int pos) {
        return __ldg(P.table + (int64_t)c.unit * P.addr_stream_mult * P.geom.max_blocks_per_seq +
                     (pos >> P.geom.block_shift));
    };
    /* Paged: the boxes of tile j, a box per block the tile spans (S >= 64: one or two),
     * their block ids loaded together (block_of). A box past the context part's keys (whole blocks)
     * copies the tile's first block again: finite values, which the softmax masks. */
    constexpr int MAX_BOXES = KT / WG_TMA_MIN_BLOCK;
    struct tile_boxes { int row[MAX_BOXES], block[MAX_BOXES]; };
    auto look_up_in = [&](const cta_coord &c, int j) {
        tile_boxes tb{};
        if constexpr (ADDR == ADDR_PAGED) {
            const int key = c.k_lo + j * KT, box_keys = min(KT, P.geom.block_size);
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
                const int pos = key + b * box_keys < c.k_hi ? key + b * box_keys : key;
                tb.row[b] = pos & (P.geom.block_size - 1);
                tb.block[b] = block_of(c, pos);
            }
        }
        return tb;
    };
    /* TMA: tile j of the item c into stage slot % STAGES (the boxes look_up found), the
     * stage's barrier expecting the K and V bytes. */
    auto tma_tile_in = [&](const cta_coord &c, int j, int slot, const tile_boxes &tb) {
        const uint32_t bar = full_of(slot);
        const uint32_t ks = stage_of(slot), vs = ks + S::TILE;
        mbar_expect_tx(bar, 2 * S::TILE);
        if constexpr (ADDR == ADDR_CTX) {
            const int key = c.k_lo + j * KT;
            const int mk = c.unit * 2 * P.kv_heads + c.head, mv = mk + P.kv_heads;
            tma_load_3d(ks, &ctx_map, 0, key, mk, bar);
            tma_load_3d(ks + S::HALF_TILE, &ctx_map, 64, key, mk, bar);
            tma_load_3d(vs, &ctx_map, 0, key, mv, bar);
            tma_load_3d(vs + S::HALF_TILE, &ctx_map, 64, key, mv, bar);
        } else {
            const int box_keys = min(KT, P.geom.block_size);
#pragma unroll
            for (int b = 0; b < MAX_BOXES; ++b) {
                if (b * box_keys >= KT) break;
                const uint32_t dst = b * box_keys * 128;
                const int mk = tb.block[b] * 2 * P.kv_heads + c.head, mv = mk + P.kv_heads;
                tma_load_3d(ks + dst, &ctx_map, 0, tb.row[b], mk, bar);
                tma_load_3d(ks + S::HALF_TILE + dst, &ctx_map, 64, tb.row[b], mk, bar);
                tma_load_3d(vs + dst, &ctx_map, 0, tb.row[b], mv, bar);
                tma_load_3d(vs + S::HALF_TILE + dst, &ctx_map, 64, tb.row[b], mv, bar);
            }
        }
    };

    if constexpr (PRODUCER) {
        __syncthreads(); /* the barriers are initialised */
        if (wg == 2) {
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(WG_PRODUCER_REGS));
            if (tid != WG_THREADS) return;
            /* Each tile of the CTA's items in turn: the first STAGES at once, tile
             * slot >= STAGES once the tile STAGES before it in its stage is released
             * (the stage's empty barrier completes a phase per tile, so the one to wait
             * for is slot / STAGES - 1; the stage cannot run a phase ahead, as its next
             * tile is not issued yet). The blocks are looked up before the wait. */
            int slot = 0;
            for (int64_t item = blockIdx.x; item < (PERSIST ? attn_items(P) : (int64_t)blockIdx.x + 1);
                 item += gridDim.x) {
                const cta_coord c = cta_decompose(P, item);
                const int ntiles = tiles_of(c);
                for (int j = 0; j < ntiles; ++j, ++slot) {
                    const tile_boxes tb = look_up_in(c, j);
                    if (slot >= WG_STAGES) mbar_wait(smem_addr(&empty[slot % WG_STAGES]), (slot / WG_STAGES - 1) & 1);
                    tma_tile_in(c, j, slot, tb);
                }
            }
            return;
        }
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(WG_MMA_REGS));
    }

    /* One work item; returns its tiles. */
    auto run_item = [&](const int64_t item, const int tile_base) -> int {
    const cta_coord c = cta_decompose(P, item);
    const int ntiles = tiles_of(c);

    /* cp.async: the row index (offset / d) of key `row` of tile j, NO_ROW past the end,
     * from its block id (row_block). */
    const uint32_t NO_ROW = 0xffffffffu;
    auto row_block = [&](int j, int row) {
        const int pos = c.k_lo + j * KT + row;
        return pos < c.k_hi ? block_of(c, pos) : 0;
    };
    auto row_index = [&](int j, int row, int block) -> uint32_t {
        const int pos = c.k_lo + j * KT + row;
        return pos < c.k_hi ? (uint32_t)(kv_row_at<ADDR>(P, c.head, pos, block) / WG_D) : NO_ROW;
    };
    /* Stage of tile j: its place in the CTA's whole tile sequence with the TMA (the
     * barriers' phases count on across items), in the item's with cp.async. */
    auto slot = [&](int j) { return TMA ? tile_base + j : j; };
    auto stage_k = [&](int j) { return stage_of(slot(j)); };
    auto load_tile = [&](int j) {
        const uint32_t ks = stage_k(j), vs = ks + S::TILE;
        const uint32_t *rows = off_ring + (j % WG_STAGES) * KT;
#pragma unroll
        for (int k = 0; k < KT * (WG_D / 8) / WG_THREADS; ++k) {
            int i = tid + k * WG_THREADS;
            int row = i >> 4, ch = i & 15;
            uint32_t r = rows[row];
            int bytes = r != NO_ROW ? 16 : 0;
            const T *src = kv + (r != NO_ROW ? (int64_t)r * WG_D + ch * 8 : 0);
            cp_async16(ks + S::off(KT, row, ch), src, bytes);
            cp_async16(vs + S::off(KT, row, ch), src + (r != NO_ROW ? P.vstride : 0), bytes);
        }
    };

    auto look_up = [&](int j) { return look_up_in(c, j); };
    auto tma_tile = [&](int j, const tile_boxes &tb) { tma_tile_in(c, j, slot(j), tb); };
    auto tma_wait = [&](int j) { mbar_wait(full_of(slot(j)), (slot(j) / WG_STAGES) & 1); };
    /* Whether warpgroup w has query rows in this CTA's row tile. */
    auto wg_rows = [&](int w) { return c.row_tile * P.rows_per_cta + w * 64 < P.rows_per_unit; };
    /* Warps that read each tile: the stage is refilled (or freed for the producer) when
     * the last of them is done. */
    const unsigned int readers = 4u * (wg_rows(1) ? 2u : 1u);

    /* Prologue: the release counts (TMA) or the row offsets of the first tiles, Q,
     * then STAGES-1 tiles in flight (TMA: all STAGES). */
    if (TMA) {
        if (tid < WG_STAGES) released[tid] = 0;
    } else if (tid < KT) {
        int first[WG_STAGES];
#pragma unroll
        for (int j = 0; j < WG_STAGES; ++j) first[j] = row_block(j, tid);
#pragma unroll
        for (int j = 0; j < WG_STAGES; ++j) off_ring[j * KT + tid] = j < ntiles ? row_index(j, tid, first[j]) : NO_ROW;
    }
    for (int i = tid; i < WG_ROWS * (WG_D / 8); i += WG_THREADS) {
        int r = i >> 4, ch = i & 15, stream = 0, head = 0;
        bool ok = row_target(P, c, r, &stream, &head);
        const T *src = static_cast<const T *>(P.q) + (ok ? ((int64_t)stream * P.heads + head) * WG_D + ch * 8 : 0);
        cp_async16(smem_addr(q_s) + S::off(WG_ROWS, r, ch), src, ok ? 16 : 0);
    }
    cta_sync();
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

    const bool wg_has_rows = wg_rows(wg);
    /* This warpgroup's 64 Q rows: K-major A, k step kk at half kk/4, byte 32*(kk%4). */
    const uint32_t q_wg = smem_addr(q_s) + wg * 64 * 128;

    constexpr int NS = KT / 2, KS = KT / 16; /* S values per thread, k16 steps of P V */
    float o[64], s[NS];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2] = {1.f, 1.f};
    uint32_t pa[2][KS][4]; /* P of the tile in P V and of the next one: the loop alternates them */
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;

    /* S = Q K_j (asynchronous: committed, not waited). */
    auto issue_s = [&](int j) {
        const uint32_t kbuf = stage_k(j);
#pragma unroll
        for (int kk = 0; kk < WG_D / 16; ++kk) {
            const uint32_t koff = (kk >> 2) * S::HALF_TILE + (kk & 3) * 32;
            const uint32_t qoff = (kk >> 2) * S::Q_HALF + (kk & 3) * 32;
            wg_mma_ss<T>(s, wg_desc(q_wg + qoff, 16, 1024), wg_desc(kbuf + koff, 16, 1024), kk > 0);
        }
        wg_commit();
    };
    /* O += P V_j from the A fragments in a (asynchronous). */
    auto issue_pv = [&](int j, const uint32_t(&a)[KS][4]) {
        const uint32_t vbuf = stage_k(j) + S::TILE;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) wg_mma_rs<T>(o, a[ks], wg_desc(vbuf + ks * 16 * 128, S::HALF_TILE, 1024));
        wg_commit();
    };
    /* Online softmax of tile j's S into the A fragments a, m and l; alpha is the factor O still
     * owes (applied once the P V in flight has landed). Thread holds rows lane/4
     * (h = 0) and lane/4 + 8 (h = 1) of its warp's 16, keys 8n + 2*(lane%4) + {0,1}. */
    auto softmax = [&](int j, uint32_t(&a)[KS][4]) {
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
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            /* pairwise trees, not chains: the softmax's dependent latencies sit between
             * a warpgroup's GEMM issues, with two warps per scheduler to hide them
             * (0.3-0.8% off the context-bound rows, results/h100/softmax-tree/) */
            float red[KT / 8];
#pragma unroll
            for (int n = 0; n < KT / 8; ++n) red[n] = fmaxf(pr[4 * n + 2 * h], pr[4 * n + 2 * h + 1]);
            float mx = wg_tree<KT / 8>(red, [](float a, float b) { return fmaxf(a, b); });
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            float m_new = fmaxf(m[h], mx * P.scale_log2);
            float m_use = m_new == -INFINITY ? 0.f : m_new;
            alpha[h] = fast_exp2(m[h] - m_use);
            m[h] = m_new;
#pragma unroll
            for (int n = 0; n < KT / 8; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    pr[4 * n + 2 * h + e] = fast_exp2(fmaf(pr[4 * n + 2 * h + e], P.scale_log2, -m_use));
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
    };
    /* O owes alpha once the running max moved; after the first tiles it rarely does,
     * so a warp whose rows all kept their max skips the 64 multiplies. */
    auto rescale_o = [&]() {
        if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
        for (int n = 0; n < WG_D / 8; ++n) {
            o[4 * n] *= alpha[0];
            o[4 * n + 1] *= alpha[0];
            o[4 * n + 2] *= alpha[1];
            o[4 * n + 3] *= alpha[1];
        }
    };

    /* Software pipeline within a warpgroup: while P_t V_t runs on the tensor cores,
     * S_{t+1} = Q K_{t+1} (issued just before it) is already done and its softmax
     * runs on the other units. Tile t+1 must be resident during iteration t. */
    if (TMA) cp_async_wait<0>(); /* Q */
    else cp_async_wait<WG_STAGES - 2>();
    fence_proxy_async();
    cta_sync();
    if (wg_has_rows && ntiles > 0) {
        if (TMA) tma_wait(0);
        wg_fence();
        issue_s(0);
        wg_wait<0>();
        wg_hold(s);
        softmax(0, pa[0]);
    }
    /* The GEMMs and softmax of iteration t (none for a warpgroup without rows):
     * P_t V_t from pa[t % 2], softmax of tile t+1 into pa[(t+1) % 2]. Each branch
     * issues and retires its own wgmma groups (a group left in flight across a branch
     * makes the compiler serialise every wgmma). tile_ready(t + 1) waits for the tile
     * S_{t+1} reads, where the caller has not. */
    auto compute = [&](int t, auto cur, auto tile_ready, bool has_rows) {
        constexpr int C = decltype(cur)::value;
        if (has_rows && t + 1 < ntiles) {
            tile_ready(t + 1);
            wg_hold(o);
            wg_fence();
            issue_s(t + 1);
            issue_pv(t, pa[C]);
            wg_wait<1>();
            wg_hold(s);
            softmax(t + 1, pa[1 - C]);
            wg_wait_all_after(l[0] + l[1]);
            wg_hold(o);
            rescale_o();
        } else if (has_rows) {
            wg_hold(o);
            wg_fence();
            issue_pv(t, pa[C]);
            wg_wait<0>();
            wg_hold(o);
        }
    };
    /* Iteration t with its loads. The buffer index of pa must be a constant (register
     * arrays), so the loop runs in pairs. */
    auto step = [&](int t, auto cur) {
        if (TMA) {
            if (!wg_has_rows) return;
            /* Paged: every warp looks up the blocks of the tile it may refill its stage
             * with before computing, whichever warp turns out to refill it. */
            tile_boxes next{};
            if (!PRODUCER && ADDR == ADDR_PAGED && lane == 0 && t + WG_STAGES < ntiles) next = look_up(t + WG_STAGES);
            compute(t, cur, tma_wait, true);
            /* Tile t is read (S_t one step ago, P_t V_t now): the last reading warp frees
             * its stage for the producer, or refills it with tile t + STAGES. (The last
             * STAGES tiles of an item are freed after the epilogue, which stages its
             * output in the ring.) The count only grows within an item, so no reset
             * races with the next round's arrivals. */
            if (lane == 0) {
                unsigned int n = atomicAdd(&released[slot(t) % WG_STAGES], 1u) + 1u;
                if (n == readers * (unsigned)(t / WG_STAGES + 1) && t + WG_STAGES < ntiles) {
                    if (PRODUCER) mbar_arrive(smem_addr(&empty[slot(t) % WG_STAGES]));
                    else tma_tile(t + WG_STAGES, next);
                }
            }
            return;
        }
        cp_async_wait<WG_STAGES - 3>();
        fence_proxy_async();
        __syncthreads();   /* tile t+1 visible to all; tile t-1's buffer free */
        if (t + WG_STAGES - 1 < ntiles) load_tile(t + WG_STAGES - 1);
        cp_async_commit();
        const bool fetch = tid < KT && t + WG_STAGES < ntiles;
        const int next_block = fetch ? row_block(t + WG_STAGES, tid) : 0;
        compute(t, cur, [](int) {}, wg_has_rows);
        if (fetch) off_ring[((t + WG_STAGES) % WG_STAGES) * KT + tid] = row_index(t + WG_STAGES, tid, next_block);
    };
    for (int t = 0; t < ntiles; t += 2) {
        step(t, std::integral_constant<int, 0>());
        if (t + 1 < ntiles) step(t + 1, std::integral_constant<int, 1>());
    }

    cp_async_wait<0>();
    cta_sync();
    float *st_o = reinterpret_cast<float *>(pipe);
    float *st_m = st_o + WG_ROWS * (WG_D + 8);
    float *st_l = st_m + WG_ROWS;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        int row = warp * 16 + (lane >> 2) + 8 * h;
        if ((lane & 3) == 0) { st_m[row] = m[h]; st_l[row] = lsum; }
#pragma unroll
        for (int n = 0; n < WG_D / 8; ++n)
            *reinterpret_cast<float2 *>(st_o + row * (WG_D + 8) + 8 * n + 2 * (lane & 3)) =
                make_float2(o[4 * n + 2 * h], o[4 * n + 2 * h + 1]);
    }
    cta_sync();
    combine_and_emit<T>(P, c, st_o, st_m, st_l, WG_ROWS, 1, WG_ROWS, WG_D, WG_THREADS);
    if (PRODUCER) {
        /* the staging is read: the ring's last STAGES tiles are free for the producer */
        fence_proxy_async();
        cta_sync();
        if (tid == 0)
            for (int j = ntiles > WG_STAGES ? ntiles - WG_STAGES : 0; j < ntiles; ++j)
                mbar_arrive(smem_addr(&empty[slot(j) % WG_STAGES]));
    }
    return ntiles;
    };

    if (PERSIST) {
        int tile_base = 0;
        for (int64_t item = blockIdx.x; item < attn_items(P); item += gridDim.x) {
            tile_base += run_item(item, tile_base);
            /* The next item's copies overwrite the staging (TMA and cp.async through the
             * async and generic proxies) and Q: every thread is done reading both. */
            fence_proxy_async();
            cta_sync();
        }
    } else {
        run_item(blockIdx.x, 0);
    }
#else
    __trap(); /* built without sm_90a: the host never picks this body (bif_wgmma_fits) */
#endif
}

#endif
