/* The ceilings every kernel is measured against. The read ceiling is the one that
 * matters most (pct_peak_bw): the sustained rate of the best of several launch shapes
 * and load flavours, from the medians of repeated cold reads of a buffer far past L2. */
#include "peak.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "stats.h"

namespace {

/* 4 GiB: over 60x the L2 of an H100 or H200, about 1 ms a pass on an H200; the rate is
 * a difference of two reads (measure_dram_read), so a launch's fixed costs do not
 * weigh in it whatever the size. */
const size_t READ_BYTES_MAX = (size_t)4 << 30;
const size_t COPY_BYTES_MAX = (size_t)1 << 30;       /* each way */
const size_t HEADROOM = (size_t)256 << 20;           /* left free for cuBLAS and the runtime */
const int READ_REPS = 9;
const int DRAM_PASSES = 3;                           /* the long read of the rate's difference */
const int L2_PASSES = 64;                            /* over a quarter of L2: about 1 ms a launch */
const int COPY_REPS = 10;
const int GEMM_N = 8192;
/* Seconds of GEMMs before the timed ones, so that the rate is the one the GPU sustains
 * under tensor-core load, as the kernels are timed (timing.cu: warm_up): a few dozen
 * GEMMs end before the power cap's controller settles, and read a rate that varies
 * by over 10% from run to run (results/NOTES.md, Timing and measurement). */
const double GEMM_WARMUP_S = 0.5;
const int GEMM_REPS = 10;

#define TRY(call) do { err = (call); if (err != cudaSuccess) goto done; } while (0)

/* The loads of the read measurements: plain non-coherent, or cached in L2 only (the
 * L2 measurement: an SM's L1 would otherwise serve its own re-reads). The L2 256-byte
 * prefetch hint read 2-5% slower than either on an H100 and an H200. */
enum { LOAD_PLAIN, LOAD_L2_ONLY };
template <int MODE> __device__ __forceinline__ uint4 load16(const uint4 *p)
{
    if (MODE == LOAD_L2_ONLY) return __ldcg(p);
    return __ldg(p);
}

/* One word per CTA, the xor of every thread's loads, so that no load can be dropped. */
__device__ __forceinline__ void store_cta_xor(unsigned acc, unsigned *word)
{
    for (int off = 16; off > 0; off >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, off);
    __shared__ unsigned warp_acc[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_acc[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned a = 0;
        for (int w = 0; w < (int)(blockDim.x / 32); ++w) a ^= warp_acc[w];
        *word = a;
    }
}

/* Grid-stride read of n 16-byte vectors, `passes` times over, UNROLL independent
 * loads in flight per thread; one word per CTA written so that no load can be dropped. */
template <int UNROLL, int MODE>
__global__ void read_kernel(const uint4 *__restrict__ p, int64_t n, int passes, unsigned *out)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (int pass = 0; pass < passes; ++pass) {
        int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
            uint4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = load16<MODE>(p + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
        for (; i < n; i += stride) {
            uint4 v = load16<MODE>(p + i);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    store_cta_xor(acc, out + blockIdx.x);
}

/* Each CTA's own contiguous share of n 16-byte vectors: [*begin, *end). */
__device__ __forceinline__ void cta_stretch(int64_t n, int64_t *begin, int64_t *end)
{
    int64_t share = (n + gridDim.x - 1) / gridDim.x;
    *begin = (int64_t)blockIdx.x * share;
    *end = *begin + share < n ? *begin + share : n;
}

/* The xor of [begin, end) read by the CTA's threads, UNROLL loads in flight a thread. */
template <int UNROLL>
__device__ __forceinline__ unsigned read_range(const uint4 *__restrict__ p, int64_t begin, int64_t end)
{
    unsigned acc = 0;
    int64_t i = begin + threadIdx.x;
    for (; i + (int64_t)(UNROLL - 1) * blockDim.x < end; i += (int64_t)UNROLL * blockDim.x) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(p + i + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < end; i += blockDim.x) {
        uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    return acc;
}

/* The same read with each CTA on its own contiguous stretch of the buffer, as a kernel
 * that gives each CTA its own stretch of K/V reads it (the grid-stride pattern above
 * spreads every wave over the whole buffer instead; which one the DRAM prefers depends
 * on the part). */
template <int UNROLL>
__global__ void read_chunk_kernel(const uint4 *__restrict__ p, int64_t n, int passes, unsigned *out)
{
    int64_t begin, end;
    cta_stretch(n, &begin, &end);
    unsigned acc = 0;
    for (int pass = 0; pass < passes; ++pass) acc ^= read_range<UNROLL>(p, begin, end);
    store_cta_xor(acc, out + blockIdx.x);
}

/* One CTA a tile of `tile` vectors and a pass (tile blockIdx % tiles), launched in
 * waves as a decode kernel's grid of (stream, head, split) CTAs is: the scheduler hands
 * each SM its next tile as it finishes one, and that read 1.5% faster on an H200 than
 * any persistent shape above (results/NOTES.md). The sink has `words` words. */
template <int UNROLL>
__global__ void read_tiles_kernel(const uint4 *__restrict__ p, int64_t n, int64_t tile, int words, unsigned *out)
{
    const int64_t tiles = (n + tile - 1) / tile;
    const int64_t begin = (blockIdx.x % tiles) * tile, end = begin + tile < n ? begin + tile : n;
    const unsigned acc = read_range<UNROLL>(p, begin, end);
    store_cta_xor(acc, out + blockIdx.x % words);
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* The kernels' own way of reading K/V (attn_core.cuh): 16-byte cp.async.cg copies (L2
 * only, no registers held while in flight) into a ring of STAGES shared-memory tiles
 * of VEC vectors a thread, STAGES - 1 tiles in flight, over the CTA's stretch. Each
 * thread reads back only what it copied itself, so no barrier is needed. */
template <int VEC, int STAGES>
__global__ void read_cp_async_kernel(const uint4 *__restrict__ p, int64_t n, int passes, unsigned *out)
{
    extern __shared__ uint4 ring[]; /* STAGES tiles of VEC * blockDim.x vectors */
    int64_t begin, end;
    cta_stretch(n, &begin, &end);
    const int64_t tile = (int64_t)VEC * blockDim.x;
    const int64_t tiles = end > begin ? (end - begin + tile - 1) / tile : 0;
    unsigned acc = 0;
    auto issue = [&](int64_t t) {
        if (t < tiles) {
            uint4 *stage = ring + (t % STAGES) * tile;
#pragma unroll
            for (int u = 0; u < VEC; ++u) {
                int64_t i = begin + t * tile + (int64_t)u * blockDim.x + threadIdx.x;
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                                 smem_u32(stage + u * blockDim.x + threadIdx.x)),
                             "l"(p + (i < end ? i : begin)), "r"(i < end ? 16 : 0)
                             : "memory");
            }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    };
    for (int pass = 0; pass < passes; ++pass) {
        for (int s = 0; s < STAGES - 1; ++s) issue(s);
        for (int64_t t = 0; t < tiles; ++t) {
            issue(t + STAGES - 1);
            asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 1) : "memory");
            const uint4 *stage = ring + (t % STAGES) * tile;
#pragma unroll
            for (int u = 0; u < VEC; ++u) {
                uint4 v = stage[u * blockDim.x + threadIdx.x];
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            }
        }
        asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    }
    store_cta_xor(acc, out + blockIdx.x);
}

/* Hopper's bulk copy (the TMA without a tensor map): one thread of the CTA streams its
 * stretch into a ring of STAGES chunks of chunk_bytes, each chunk's arrival counted by
 * its own transaction barrier, as a wgmma kernel's producer warp does. */
template <int STAGES>
__global__ void read_bulk_kernel(const uint4 *__restrict__ p, int64_t n, int passes, int chunk_bytes,
                                 unsigned *out)
{
    extern __shared__ __align__(128) unsigned char chunks_ring[]; /* STAGES chunks */
    __shared__ __align__(8) uint64_t bars[STAGES];
    if (threadIdx.x != 0) return;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    int64_t begin, end;
    cta_stretch(n, &begin, &end);
    const char *base = reinterpret_cast<const char *>(p);
    const int64_t bytes = end > begin ? (end - begin) * 16 : 0;
    const int64_t chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
    const int64_t total = chunks * passes;
    for (int s = 0; s < STAGES; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(&bars[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    auto issue = [&](int64_t c) {
        int s = (int)(c % STAGES);
        int64_t off = (c % chunks) * chunk_bytes;
        int len = (int)(bytes - off < chunk_bytes ? bytes - off : chunk_bytes);
        uint32_t bar = smem_u32(&bars[s]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(len) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                         smem_u32(chunks_ring + (size_t)s * chunk_bytes)),
                     "l"(base + begin * 16 + off), "r"(len), "r"(bar)
                     : "memory");
    };
    unsigned acc = 0;
    for (int64_t c = 0; c < total && c < STAGES; ++c) issue(c);
    for (int64_t c = 0; c < total; ++c) {
        int s = (int)(c % STAGES);
        asm volatile("{\n .reg .pred done;\n"
                     "WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     " @!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(&bars[s])),
                     "r"((int)((c / STAGES) & 1))
                     : "memory");
        acc ^= *reinterpret_cast<const unsigned *>(chunks_ring + (size_t)s * chunk_bytes);
        if (c + STAGES < total) issue(c + STAGES);
    }
    out[blockIdx.x] = acc;
#endif
}

/* Non-zero, varied words: nothing along the way can shortcut constant data. */
__global__ void pattern_kernel(uint32_t *p, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = ((uint32_t)i * 2654435761u) | 1u;
}

/* Values k/64 - 1 in [-1, 1): non-zero on average, sums over K = 8192 stay far
 * inside the fp16 range. */
__global__ void gemm_input_kernel(__half *p, int64_t n, uint32_t salt)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        uint32_t h = ((uint32_t)i ^ salt) * 2654435761u;
        p[i] = __float2half_rn((float)((h >> 25) & 127u) / 64.0f - 1.0f);
    }
}

/* How a shape reads: grid-stride loads, loads over each CTA's own stretch, cp.async
 * into a shared-memory ring, bulk copies into one, or one CTA a tile. */
enum read_path { READ_GRID_STRIDE, READ_STRETCH, READ_CP_ASYNC, READ_BULK, READ_TILES };
struct read_shape {
    read_path path;
    int threads, ctas_per_sm; /* tiles: a CTA a tile and a pass, ctas_per_sm an SM the sink's words */
    int unroll;               /* vectors in flight a thread (cp.async: a tile's vectors a thread); bulk: KiB a chunk */
    int stages;               /* cp.async and bulk: the ring's tiles or chunks; tiles: KiB a tile */
};

/* Around the shapes that won on an H100 (1024 x 2, plain loads: 3.09 TB/s) and an
 * H200 (4.54-4.65 TB/s): fewer and more bytes in flight per SM, and the ways the
 * kernels read K/V: cp.async rings, the wgmma kernels' bulk copies, and a grid of
 * short tiles in waves, which read faster than every persistent shape on an H200
 * and faster than the fused kernel's longest rows (results/NOTES.md). The best is
 * kept, so a shape that loses costs only its time. */
const read_shape READ_SHAPES[] = { /* unroll 16 only at 512 threads: its registers */
    {READ_GRID_STRIDE, 128, 16, 4}, {READ_GRID_STRIDE, 256, 8, 4}, {READ_GRID_STRIDE, 256, 8, 8},
    {READ_GRID_STRIDE, 512, 4, 4}, {READ_GRID_STRIDE, 512, 4, 8}, {READ_GRID_STRIDE, 512, 4, 16},
    {READ_GRID_STRIDE, 1024, 2, 4}, {READ_GRID_STRIDE, 1024, 2, 8}, {READ_GRID_STRIDE, 1024, 1, 8},
    {READ_STRETCH, 256, 8, 8}, {READ_STRETCH, 512, 4, 8}, {READ_STRETCH, 1024, 2, 8},
    {READ_CP_ASYNC, 128, 8, 4, 4}, {READ_CP_ASYNC, 256, 3, 4, 4}, {READ_CP_ASYNC, 256, 2, 4, 6},
    {READ_CP_ASYNC, 512, 2, 2, 4},
    {READ_BULK, 32, 1, 32, 6}, {READ_BULK, 32, 2, 16, 6}, {READ_BULK, 32, 3, 16, 4}, {READ_BULK, 32, 4, 8, 6},
    {READ_TILES, 256, 16, 8, 64}, {READ_TILES, 512, 16, 8, 128}, {READ_TILES, 512, 16, 8, 256},
    {READ_TILES, 1024, 16, 8, 512},
};
/* The widest grid of the shapes: the sink holds a word per CTA. */
const int SINK_CTAS_PER_SM = 16;
/* The shape of the L2 flush's read. */
const read_shape FLUSH_SHAPE = {READ_GRID_STRIDE, 512, 4, 4};

void describe_shape(const read_shape *sh, char *out, size_t size)
{
    switch (sh->path) {
    case READ_GRID_STRIDE:
        snprintf(out, size, "grid-stride loads, %d threads x %d CTAs an SM, %d in flight a thread", sh->threads,
                 sh->ctas_per_sm, sh->unroll);
        break;
    case READ_STRETCH:
        snprintf(out, size, "loads over each CTA's stretch, %d threads x %d CTAs an SM, %d in flight a thread",
                 sh->threads, sh->ctas_per_sm, sh->unroll);
        break;
    case READ_CP_ASYNC:
        snprintf(out, size, "cp.async ring over each CTA's stretch, %d threads x %d CTAs an SM, %d stages of %d B a thread",
                 sh->threads, sh->ctas_per_sm, sh->stages, 16 * sh->unroll);
        break;
    case READ_BULK:
        snprintf(out, size, "bulk copies over each CTA's stretch, %d CTAs an SM, %d chunks of %d KiB", sh->ctas_per_sm,
                 sh->stages, sh->unroll);
        break;
    case READ_TILES:
        snprintf(out, size, "loads, one CTA a %d KiB tile, %d threads, %d in flight a thread", sh->stages,
                 sh->threads, sh->unroll);
        break;
    }
}

/* Dynamic shared memory a shape's CTA needs, raised past the 48 KiB default. */
template <typename K> cudaError_t with_smem(K kernel, size_t bytes)
{
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

/* grid: a persistent shape's CTAs; a tiles shape launches a CTA a tile and a pass and
 * writes `grid` words of the sink. */
template <int MODE>
cudaError_t launch_read(const read_shape *sh, int grid, const uint4 *p, int64_t n, int passes, unsigned *out,
                        cudaStream_t s)
{
    cudaError_t err = cudaSuccess;
    size_t smem = 0;
    switch (sh->path) {
    case READ_STRETCH:
        if (sh->unroll == 8) read_chunk_kernel<8><<<grid, sh->threads, 0, s>>>(p, n, passes, out);
        else read_chunk_kernel<4><<<grid, sh->threads, 0, s>>>(p, n, passes, out);
        break;
    case READ_CP_ASYNC:
        smem = (size_t)sh->stages * sh->unroll * sh->threads * sizeof(uint4);
        if (sh->unroll == 4 && sh->stages == 4) {
            err = with_smem(read_cp_async_kernel<4, 4>, smem);
            if (err == cudaSuccess) read_cp_async_kernel<4, 4><<<grid, sh->threads, smem, s>>>(p, n, passes, out);
        } else if (sh->unroll == 4 && sh->stages == 6) {
            err = with_smem(read_cp_async_kernel<4, 6>, smem);
            if (err == cudaSuccess) read_cp_async_kernel<4, 6><<<grid, sh->threads, smem, s>>>(p, n, passes, out);
        } else if (sh->unroll == 2 && sh->stages == 4) {
            err = with_smem(read_cp_async_kernel<2, 4>, smem);
            if (err == cudaSuccess) read_cp_async_kernel<2, 4><<<grid, sh->threads, smem, s>>>(p, n, passes, out);
        } else {
            return cudaErrorInvalidValue;
        }
        break;
    case READ_BULK:
        smem = (size_t)sh->stages * sh->unroll * 1024;
        if (sh->stages == 4) {
            err = with_smem(read_bulk_kernel<4>, smem);
            if (err == cudaSuccess)
                read_bulk_kernel<4><<<grid, sh->threads, smem, s>>>(p, n, passes, sh->unroll * 1024, out);
        } else if (sh->stages == 6) {
            err = with_smem(read_bulk_kernel<6>, smem);
            if (err == cudaSuccess)
                read_bulk_kernel<6><<<grid, sh->threads, smem, s>>>(p, n, passes, sh->unroll * 1024, out);
        } else {
            return cudaErrorInvalidValue;
        }
        break;
    case READ_TILES: {
        const int64_t tile = (int64_t)sh->stages * 1024 / 16, tiles = (n + tile - 1) / tile;
        if (tiles * passes > INT32_MAX) return cudaErrorInvalidValue;
        read_tiles_kernel<8><<<(unsigned)(tiles * passes), sh->threads, 0, s>>>(p, n, tile, grid, out);
        break;
    }
    case READ_GRID_STRIDE:
        if (sh->unroll == 16) read_kernel<16, MODE><<<grid, sh->threads, 0, s>>>(p, n, passes, out);
        else if (sh->unroll == 8) read_kernel<8, MODE><<<grid, sh->threads, 0, s>>>(p, n, passes, out);
        else read_kernel<4, MODE><<<grid, sh->threads, 0, s>>>(p, n, passes, out);
        break;
    }
    return err != cudaSuccess ? err : cudaGetLastError();
}

/* Buffers and events shared by the measurements. */
struct bench_ctx {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    void *flush;
    size_t flush_bytes;
    int sms;
    unsigned *flush_sink;
};

/* Evicts what the previous repetition left in L2 by reading a buffer twice its size
 * through L2, as the timer does before each timed kernel (timing.cu: flush_l2): a
 * memset would leave an L2's worth of dirty lines, written back to DRAM while the
 * next timed read evicts them, which takes write bandwidth from that read and makes
 * the measured peak too low (and rows above 100% of it). */
cudaError_t flush_l2(const bench_ctx *c)
{
    return launch_read<LOAD_L2_ONLY>(&FLUSH_SHAPE, c->sms * FLUSH_SHAPE.ctas_per_sm, (const uint4 *)c->flush,
                                     (int64_t)(c->flush_bytes / 16), 1, c->flush_sink, c->stream);
}

cudaError_t elapsed_us(const bench_ctx *c, double *us)
{
    cudaError_t err = cudaEventSynchronize(c->stop);
    float ms = 0.0f;
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, c->start, c->stop);
    *us = 1000.0 * ms;
    return err;
}

double median_of(const double *v, int n)
{
    sample_summary_t s;
    return stats_summarize(v, n, &s) == 0 ? s.median : 0.0;
}

/* One timed launch of a shape, `passes` over the buffer; cold: L2 flushed before it. */
cudaError_t time_read(const bench_ctx *c, const read_shape *sh, int grid, const uint4 *buf, int64_t n, int passes,
                      bool cold, unsigned *sink, double *us)
{
    cudaError_t err = cold ? flush_l2(c) : cudaSuccess;
    if (err == cudaSuccess) err = cudaEventRecord(c->start, c->stream);
    if (err == cudaSuccess)
        err = cold ? launch_read<LOAD_PLAIN>(sh, grid, buf, n, passes, sink, c->stream)
                   : launch_read<LOAD_L2_ONLY>(sh, grid, buf, n, passes, sink, c->stream);
    if (err == cudaSuccess) err = cudaEventRecord(c->stop, c->stream);
    if (err == cudaSuccess) err = elapsed_us(c, us);
    return err;
}

/* The sustained read rate of DRAM: for each shape, the time of DRAM_PASSES passes over a
 * buffer far past L2 less the time of one pass (cold, medians of READ_REPS launches
 * each), so that a launch's ramp, tail and fixed costs cancel and the rate is the one a
 * long read tends to. A kernel row pays those costs in its own time, so no row can
 * pass the figure unless it reads in a better way than every shape here. */
cudaError_t measure_dram_read(const bench_ctx *c, const device_info_t *dev, const uint4 *buf, size_t bytes,
                              unsigned *sink, double *best_gbps, char *best_shape, size_t shape_size)
{
    int64_t n = (int64_t)(bytes / 16);
    *best_gbps = 0.0;
    for (size_t k = 0; k < sizeof READ_SHAPES / sizeof READ_SHAPES[0]; ++k) {
        const read_shape *sh = &READ_SHAPES[k];
        int grid = dev->sm_count * sh->ctas_per_sm;
        double one[READ_REPS], many[READ_REPS];
        /* One untimed pair first: module load and clock ramp. */
        for (int r = -1; r < READ_REPS; ++r) {
            double t1 = 0.0, tn = 0.0;
            cudaError_t err = time_read(c, sh, grid, buf, n, 1, true, sink, &t1);
            if (err == cudaSuccess) err = time_read(c, sh, grid, buf, n, DRAM_PASSES, true, sink, &tn);
            if (err != cudaSuccess) return err;
            if (r >= 0) one[r] = t1, many[r] = tn;
        }
        double extra_us = median_of(many, READ_REPS) - median_of(one, READ_REPS);
        double gbps = extra_us > 0.0 ? (double)(DRAM_PASSES - 1) * bytes / (extra_us * 1e3) : 0.0;
        if (gbps > *best_gbps) {
            *best_gbps = gbps;
            describe_shape(sh, best_shape, shape_size);
        }
    }
    return cudaSuccess;
}

/* A buffer L2 holds, read `passes` times a launch without a flush and past L1, so that
 * every timed pass is served by L2; grid-stride shapes without the hint. */
cudaError_t measure_l2_read(const bench_ctx *c, const device_info_t *dev, const uint4 *buf, size_t bytes,
                            int passes, unsigned *sink, double *best_gbps)
{
    int64_t n = (int64_t)(bytes / 16);
    *best_gbps = 0.0;
    for (size_t k = 0; k < sizeof READ_SHAPES / sizeof READ_SHAPES[0]; ++k) {
        const read_shape *sh = &READ_SHAPES[k];
        if (sh->path != READ_GRID_STRIDE) continue;
        double us[READ_REPS];
        for (int r = -1; r < READ_REPS; ++r) {
            double t = 0.0;
            cudaError_t err = time_read(c, sh, dev->sm_count * sh->ctas_per_sm, buf, n, passes, false, sink, &t);
            if (err != cudaSuccess) return err;
            if (r >= 0) us[r] = t;
        }
        double med = median_of(us, READ_REPS);
        double gbps = med > 0.0 ? (double)passes * bytes / (med * 1e3) : 0.0;
        if (gbps > *best_gbps) *best_gbps = gbps;
    }
    return cudaSuccess;
}

cudaError_t measure_copy(const bench_ctx *c, void *dst, const void *src, size_t bytes, double *gbps)
{
    double us[COPY_REPS];
    *gbps = 0.0;
    for (int r = -1; r < COPY_REPS; ++r) {
        cudaError_t err = flush_l2(c);
        if (err == cudaSuccess) err = cudaEventRecord(c->start, c->stream);
        if (err == cudaSuccess) err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream);
        if (err == cudaSuccess) err = cudaEventRecord(c->stop, c->stream);
        double t = 0.0;
        if (err == cudaSuccess) err = elapsed_us(c, &t);
        if (err != cudaSuccess) return err;
        if (r >= 0) us[r] = t;
    }
    double med = median_of(us, COPY_REPS);
    if (med > 0.0) *gbps = 2.0 * bytes / (med * 1e3);
    return cudaSuccess;
}

cudaError_t from_cublas(cublasStatus_t st)
{
    if (st == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
    if (st == CUBLAS_STATUS_ALLOC_FAILED) return cudaErrorMemoryAllocation;
    if (st == CUBLAS_STATUS_NOT_INITIALIZED) return cudaErrorInitializationError;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH) return cudaErrorNotSupported;
    if (st == CUBLAS_STATUS_INVALID_VALUE) return cudaErrorInvalidValue;
    return cudaErrorUnknown;
}

cudaError_t measure_gemm(const bench_ctx *c, const device_info_t *dev, double *tflops)
{
    const int64_t elems = (int64_t)GEMM_N * GEMM_N;
    __half *a = NULL, *b = NULL, *d = NULL;
    cublasHandle_t handle = NULL;
    const float alpha = 1.0f, beta = 0.0f;
    double us[GEMM_REPS];
    int grid = dev->sm_count * 4;
    cudaError_t err = cudaSuccess;
    *tflops = 0.0;

    TRY(cudaMalloc(&a, elems * sizeof(__half)));
    TRY(cudaMalloc(&b, elems * sizeof(__half)));
    TRY(cudaMalloc(&d, elems * sizeof(__half)));
    gemm_input_kernel<<<grid, 256, 0, c->stream>>>(a, elems, 0x1234u);
    TRY(cudaGetLastError());
    gemm_input_kernel<<<grid, 256, 0, c->stream>>>(b, elems, 0xabcdu);
    TRY(cudaGetLastError());
    TRY(from_cublas(cublasCreate(&handle)));
    TRY(from_cublas(cublasSetStream(handle, c->stream)));
    { /* a block: the gotos above jump past it */
        auto gemm = [&]() {
            return from_cublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &alpha, a,
                                            CUDA_R_16F, GEMM_N, b, CUDA_R_16F, GEMM_N, &beta, d, CUDA_R_16F, GEMM_N,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        };
        /* warm-up in batches of GEMM_REPS, each timed, until GEMM_WARMUP_S have passed */
        for (double warm_us = 0.0; warm_us < GEMM_WARMUP_S * 1e6;) {
            double batch_us = 0.0;
            TRY(cudaEventRecord(c->start, c->stream));
            for (int r = 0; r < GEMM_REPS; ++r)
                TRY(gemm());
            TRY(cudaEventRecord(c->stop, c->stream));
            TRY(elapsed_us(c, &batch_us));
            if (!(batch_us > 0.0)) break;
            warm_us += batch_us;
        }
        for (int r = 0; r < GEMM_REPS; ++r) {
            TRY(cudaEventRecord(c->start, c->stream));
            TRY(gemm());
            TRY(cudaEventRecord(c->stop, c->stream));
            TRY(elapsed_us(c, &us[r]));
        }
    }
    {
        double med = median_of(us, GEMM_REPS);
        if (med > 0.0) *tflops = 2.0 * GEMM_N * (double)GEMM_N * GEMM_N / (med * 1e6);
    }
done:
    if (handle) cublasDestroy(handle);
    cudaStreamSynchronize(c->stream);
    if (a) cudaFree(a);
    if (b) cudaFree(b);
    if (d) cudaFree(d);
    return err;
}

} // namespace

extern "C" cudaError_t peak_measure(const device_info_t *dev, peak_t *out)
{
    if (!dev || !out || dev->sm_count <= 0) return cudaErrorInvalidValue;
    memset(out, 0, sizeof *out);
    bench_ctx c = {NULL, NULL, NULL, NULL, 0, dev->sm_count, NULL};
    void *buf = NULL;
    unsigned *sink = NULL;
    size_t free_bytes = 0, total_bytes = 0, bytes = 0;
    int l2 = dev->l2_bytes > 0 ? dev->l2_bytes : (64 << 20);
    cudaError_t err = cudaSuccess;
    peak_t p;
    memset(&p, 0, sizeof p);

    c.flush_bytes = 2 * (size_t)l2;
    TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    /* A buffer far past L2 so that L2 hits add nothing visible; smaller when the
     * device is nearly full, refused when it could not be far past L2. */
    bytes = free_bytes > HEADROOM + c.flush_bytes ? (free_bytes - HEADROOM - c.flush_bytes) : 0;
    if (bytes > READ_BYTES_MAX) bytes = READ_BYTES_MAX;
    bytes &= ~(((size_t)1 << 20) - 1);
    if (bytes < 16 * (size_t)l2) { err = cudaErrorMemoryAllocation; goto done; }

    TRY(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    TRY(cudaEventCreate(&c.start));
    TRY(cudaEventCreate(&c.stop));
    TRY(cudaMalloc(&c.flush, c.flush_bytes));
    TRY(cudaMalloc(&buf, bytes));
    TRY(cudaMalloc(&sink, (size_t)dev->sm_count * SINK_CTAS_PER_SM * sizeof *sink));
    TRY(cudaMalloc(&c.flush_sink, (size_t)dev->sm_count * FLUSH_SHAPE.ctas_per_sm * sizeof *c.flush_sink));
    pattern_kernel<<<dev->sm_count * 4, 256, 0, c.stream>>>((uint32_t *)buf, (int64_t)(bytes / 4));
    TRY(cudaGetLastError());
    pattern_kernel<<<dev->sm_count * 4, 256, 0, c.stream>>>((uint32_t *)c.flush, (int64_t)(c.flush_bytes / 4));
    TRY(cudaGetLastError());

    TRY(measure_dram_read(&c, dev, (const uint4 *)buf, bytes, sink, &p.read_gbps, p.read_shape,
                          sizeof p.read_shape));
    /* a quarter of L2: resident whichever partition of it an address maps to */
    TRY(measure_l2_read(&c, dev, (const uint4 *)buf, (size_t)l2 / 4 & ~(((size_t)1 << 20) - 1), L2_PASSES, sink,
                        &p.l2_read_gbps));
    {
        size_t half = bytes / 2;
        size_t copy_bytes = half < COPY_BYTES_MAX ? half : COPY_BYTES_MAX;
        TRY(measure_copy(&c, (char *)buf + half, buf, copy_bytes, &p.copy_gbps));
    }
    /* The GEMM needs its own 384 MiB: give the read buffer back first. */
    TRY(cudaStreamSynchronize(c.stream));
    cudaFree(buf);
    buf = NULL;
    TRY(measure_gemm(&c, dev, &p.tc_tflops));
    *out = p;

done:
    if (c.stream) cudaStreamSynchronize(c.stream);
    if (buf) cudaFree(buf);
    if (sink) cudaFree(sink);
    if (c.flush_sink) cudaFree(c.flush_sink);
    if (c.flush) cudaFree(c.flush);
    if (c.start) cudaEventDestroy(c.start);
    if (c.stop) cudaEventDestroy(c.stop);
    if (c.stream) cudaStreamDestroy(c.stream);
    return err;
}
