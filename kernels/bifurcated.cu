/* `bifurcated`: the bifurcated-attention paper's decomposition (its §4, Appendix E)
 * as fused kernels on the shared core of attn_core.cuh. Same math and FLOPs as
 * `fused`; the context K/V is read once per request instead of once per stream.
 *
 * One to three launches per step:
 *  1. Context part. Grid: one CTA per (request, kv head, context split, row tile).
 *     The M rows of a CTA are the W*p queries of the request that read this kv head
 *     (W streams x p heads). On Hopper at d = 128 (bif_wgmma_fits) that is the wgmma
 *     body (attn_wgmma.cuh, 128 rows per CTA); otherwise 64 rows per row tile
 *     (padded when W*p < 64) in the ROWSPLIT decomposition: each of the 4 warps owns
 *     16 rows and all 64 keys of a tile, so a K_c/V_c tile fetched into shared memory
 *     serves 64 queries. Row tiles of one
 *     (request, head, split) are adjacent in the grid and share L2.
 *     Context keys are split (split_plan_auto) when request x head x row-tile CTAs
 *     alone would not fill the GPU. Where the decode part of MHA outweighs the
 *     context work (bif_ctx_sms), the wgmma body runs as a persistent grid on only
 *     some of the SMs, each CTA taking several items in turn.
 *     --cache contiguous reads K_c/V_c [B, 2, g, m_c, d]; --cache paged reads the
 *     floor(m_c/S) full context blocks, shared by the request's W streams, through
 *     the block table of stream b*W.
 *  2. Decode part. Where the context part runs on the 128-key wgmma body and a
 *     stream's queries are p <= 8 rows (bif_dec_streamable), that body streams it
 *     too, in a warpgroup of its own beside the context part (attn_wgmma.cuh: decode
 *     tiles), one partial per 128 keys of each stream; else `fused`'s KEYSPLIT body per (stream,
 *     kv head) over the stream's own keys: K_d/V_d [B*W, 2, g, m_d, d] (contiguous) or, paged, every position
 *     from the partly filled last context block on (those blocks are per stream);
 *     indirection reads the source stream's decoded K/V. Beside a persistent
 *     context grid, the register-streaming body (attn_stream.cuh) on the SMs that
 *     grid leaves.
 *  3. The log-sum-exp merge of the context splits and decode splits of each
 *     (stream, head) into out: by the context CTA itself where it streams the decode
 *     part of its rows over an unsplit context (bif_folds_in_cta); by the decode
 *     part's last CTA of each (stream, kv head) where the decode part runs after the
 *     context part (mma.sync body); else (the decode part beside the wgmma body, its
 *     tiles over a split context, or many partials) a merge launch.
 * fp32 and head dims without a tensor-core instantiation run both parts on the
 * CUDA-core body.
 * An 8-bit cache (--kv-dtype fp8|int8) runs the mma.sync bodies on tiles of codes, on
 * Hopper too: the context part ROWSPLIT (bifurcated_kv8_ctx.cu), the decode part `fused`'s
 * KEYSPLIT after it (bifurcated_kv8_dec.cu), K's scale in the softmax scale and V's in
 * each partial, so the merges are unchanged (docs/KV-QUANT.md). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "attn_core.cuh"
#include "attn_wgmma.cuh"
#include "attn_stream.cuh"
#include "bifurcated_internal.h"

extern "C" const attn_kernel_t kernel_bifurcated;

template <typename T, int D>
static attn_kernel_fn ctx_fn_d(int addr)
{
    return addr == ADDR_PAGED ? attn_tc_kernel<tc_traits<T, D, 1, false, ADDR_PAGED>> : attn_tc_kernel<tc_traits<T, D, 1, false, ADDR_CTX>>;
}

template <typename T>
static attn_kernel_fn ctx_fn_t(int d, int addr)
{
    switch (d) {
    case 64: return ctx_fn_d<T, 64>(addr);
    case 80: return ctx_fn_d<T, 80>(addr);
    case 96: return ctx_fn_d<T, 96>(addr);
    case 128: return ctx_fn_d<T, 128>(addr);
    case 256: return ctx_fn_d<T, 256>(addr);
    default: return NULL;
    }
}

/* plan->variant: the decode part's chunk (a multiple of the key tile), with these bits
 * set when the context part runs on the wgmma body, with its wide key tiles, and when
 * that body streams the decode part itself (bif_dec_streamable). */
#define BIF_WGMMA 1
#define BIF_WIDE 2
#define BIF_DEC_IN_CTA 4
#define BIF_COPIER 8

/* The two sizes the context body is chosen by, at the measured peaks (or H200's
 * where none was measured, as under `verify`): the context part's tensor-core time
 * and its K_c/V_c read time, and the decode part's K_d/V_d read time. */
#define BIF_DEFAULT_BYTES_PER_US 4.5e6
#define BIF_DEFAULT_FLOPS_PER_US 8.5e8
static double bif_bytes_per_us(const device_info_t *dev)
{
    return dev->peak_read_gbps > 0 ? dev->peak_read_gbps * 1e3 : BIF_DEFAULT_BYTES_PER_US;
}
static double bif_ctx_flop_us(const problem_t *p, const device_info_t *dev)
{
    const double tc = dev->peak_tc_tflops > 0 ? dev->peak_tc_tflops * 1e6 : BIF_DEFAULT_FLOPS_PER_US;
    return 4.0 * p->batch * p->beam * p->heads * (double)p->ctx * p->head_dim / tc;
}
static double bif_dec_read_us(const problem_t *p, const device_info_t *dev)
{
    return (double)p->batch * p->beam * (problem_keys(p) - p->ctx) * io_kv_row_bytes(p) / bif_bytes_per_us(dev);
}

/* The wgmma body takes the context part on Hopper at d = 128, whatever W*p. Below
 * 64 rows its warpgroup computes padding, as the 64-row ROWSPLIT (mma.sync) body
 * does, and its TMA-fed pipeline still wins, with the side stream and merge launch
 * it brings, on every row of W*p = 1-63 but a few at long contexts, where the two are
 * about even. */
static bool bif_wgmma_fits(const problem_t *p, const device_info_t *dev)
{
    /* an 8-bit cache runs the mma.sync bodies (docs/KV-QUANT.md): the wgmma body reads
     * 16-bit tiles; a ragged batch (--ctx-dist) runs on the mma.sync body too, whose dense
     * grid ends each request's keys at its own length (ATTN_RAGGED_CTX, ATTN_RAGGED_DEC) */
    return dev && dev->cc == 90 && attn_tc_path(p) && p->head_dim == WG_D && p->kv_quant == KV_QUANT_NONE &&
           !problem_ragged(p);
}
static bool bif_wgmma(const attn_plan_t *plan) { return plan && (plan->variant & BIF_WGMMA); }
/* Whether the plan splits the SMs between the parts (bif_ctx_sms, only with the wgmma body). */
static bool bif_split(const attn_plan_t *plan) { return plan && plan->ctx_sms > 0; }
static bool bif_wide(const attn_plan_t *plan) { return plan && (plan->variant & BIF_WIDE); }
static bool bif_dec_in_cta(const attn_plan_t *plan) { return plan && (plan->variant & BIF_DEC_IN_CTA); }
static bool bif_copier(const attn_plan_t *plan) { return plan && (plan->variant & BIF_COPIER); }

/* Whether the wgmma body's tiles come through the TMA: on a contiguous cache, and on
 * a paged one with blocks of at least WG_TMA_MIN_BLOCK keys (a box or two per tile).
 * Smaller blocks take the cp.async ring (attn_wgmma.cuh says why). */
static bool bif_tma(const problem_t *p)
{
    return p->cache == CACHE_CONTIGUOUS || p->block_size >= WG_TMA_MIN_BLOCK;
}

extern "C" int bifurcated_streams_decode(const attn_plan_t *plan) { return bif_dec_in_cta(plan); }
static int bif_dec_keys(const problem_t *p);
extern "C" int bifurcated_decode_keys(const problem_t *p) { return bif_dec_keys(p); }
extern "C" int bifurcated_copies_decode(const attn_plan_t *plan) { return bif_copier(plan); }

extern "C" int bifurcated_context_on_wgmma(const attn_plan_t *plan)
{
    return !bif_wgmma(plan) ? 0 : bif_wide(plan) ? WG_KT_WIDE : WG_KT;
}

typedef void (*wgmma_ctx_fn)(const attn_params_t, const CUtensorMap, const CUtensorMap);

/* persist: the persistent grid of an SM split (contiguous cache only, bif_ctx_sms);
 * dec: the wide body streams the decode part (bif_dec_in_cta); copier: a thread of its
 * producer warpgroup copies the decode tiles (paged cache only, bif_copier) */
template <typename T>
static wgmma_ctx_fn wgmma_fn_t(int addr, bool tma, bool wide, bool persist, bool dec, bool copier)
{
    if (addr == ADDR_PAGED && !tma) return attn_wgmma_ctx_kernel<wg_traits<T, ADDR_PAGED, false>>;
    if (addr == ADDR_PAGED && wide && dec && copier)
        return attn_wgmma_ctx_kernel<wg_traits<T, ADDR_PAGED, true, WG_KT_WIDE, false, true, true>>;
    if (addr == ADDR_PAGED && wide)
        return dec ? attn_wgmma_ctx_kernel<wg_traits<T, ADDR_PAGED, true, WG_KT_WIDE, false, true>>
                   : attn_wgmma_ctx_kernel<wg_traits<T, ADDR_PAGED, true, WG_KT_WIDE>>;
    if (addr == ADDR_PAGED) return attn_wgmma_ctx_kernel<wg_traits<T, ADDR_PAGED, true>>;
    if (persist)
        return wide ? attn_wgmma_ctx_kernel<wg_traits<T, ADDR_CTX, true, WG_KT_WIDE, true>>
                    : attn_wgmma_ctx_kernel<wg_traits<T, ADDR_CTX, true, WG_KT, true>>;
    if (wide)
        return dec ? attn_wgmma_ctx_kernel<wg_traits<T, ADDR_CTX, true, WG_KT_WIDE, false, true>>
                   : attn_wgmma_ctx_kernel<wg_traits<T, ADDR_CTX, true, WG_KT_WIDE>>;
    return attn_wgmma_ctx_kernel<wg_traits<T, ADDR_CTX, true>>;
}
static wgmma_ctx_fn wgmma_pick(const problem_t *p, const attn_plan_t *plan)
{
    const int addr = p->cache == CACHE_PAGED ? ADDR_PAGED : ADDR_CTX;
    const bool tma = bif_tma(p), wide = bif_wide(plan), persist = bif_split(plan), dec = bif_dec_in_cta(plan);
    const bool copier = bif_copier(plan);
    return p->dtype == DTYPE_FP16 ? wgmma_fn_t<__half>(addr, tma, wide, persist, dec, copier)
                                  : wgmma_fn_t<__nv_bfloat16>(addr, tma, wide, persist, dec, copier);
}
static int wgmma_smem(bool wide) { return wide ? wg_shape_t<WG_KT_WIDE>::SMEM : wg_shape::SMEM; }
/* the decode tiles are the wide body's (bif_dec_streamable) */
static int wgmma_threads(bool wide, bool dec)
{
    return dec ? wg_threads<WG_KT_WIDE, true>() : wide ? wg_threads<WG_KT_WIDE, false>() : wg_threads<WG_KT, false>();
}

/* The context part's mma.sync instantiation (tensor-core path only; an 8-bit cache's in
 * bifurcated_kv8_ctx.cu). */
static attn_kernel_fn ctx_pick(const problem_t *p, int addr)
{
    if (p->kv_quant != KV_QUANT_NONE) return attn_rowsplit_kv8(p, addr);
    if (p->dtype == DTYPE_FP16) return ctx_fn_t<__half>(p->head_dim, addr);
    return ctx_fn_t<__nv_bfloat16>(p->head_dim, addr);
}

/* Keys of the context part: all of m_c, or on a paged cache the full context blocks
 * (of a ragged batch: the longest request's, which its grid spans). */
static int bif_ctx_keys_of(const problem_t *p, int ctx)
{
    return p->cache == CACHE_PAGED ? ctx / p->block_size * p->block_size : ctx;
}
static int bif_ctx_keys(const problem_t *p) { return bif_ctx_keys_of(p, p->ctx); }
/* Keys of a stream's decode part: m_d, and on a paged cache the rest of the partly
 * filled last context block (of a ragged batch: the most any request has). */
static int bif_dec_keys(const problem_t *p)
{
    int most = problem_keys(p) - bif_ctx_keys(p);
    for (int b = 0; problem_ragged(p) && p->cache == CACHE_PAGED && b < p->batch; ++b) {
        const int ctx = problem_ctx_len(p, b), keys = ctx + p->gen - bif_ctx_keys_of(p, ctx);
        if (keys > most) most = keys;
    }
    return most;
}

static int bif_ctx_rows_per_cta(const problem_t *p, bool wgmma)
{
    return wgmma ? WG_ROWS : attn_rows_per_cta(p, false);
}
static int bif_ctx_row_tiles(const problem_t *p, bool wgmma)
{
    int rows = bif_ctx_rows_per_cta(p, wgmma);
    return (p->beam * problem_group(p) + rows - 1) / rows;
}
static int bif_dec_row_tiles(const problem_t *p)
{
    int rows = attn_rows_per_cta(p, true);
    return (problem_group(p) + rows - 1) / rows;
}

/* The wide body streams the decode part itself, in a warpgroup of its own beside the
 * context part (wg_decode_warpgroup), so that the decode part's
 * DRAM traffic runs under the context part's tensor-core work; beside the wide CTA,
 * which holds the whole SM, a decode CTA found room only as context CTAs finished.
 * It takes a stream's queries as one 8-row group of its tile (p of 1, 2, 4 or 8) and
 * reads each tile of keys whole (no indirection, which moves single keys). */
static bool bif_dec_streamable(const problem_t *p)
{
    const int group = problem_group(p);
    return bif_tma(p) && !p->indirection && (group == 1 || group == 2 || group == 4 || group == 8) &&
           bif_dec_keys(p) > 0;
}

/* Wide (128-key) tiles take the whole SM. Where the wide body streams the decode part
 * itself (bif_dec_streamable) they pay off once the W*p rows fill both warpgroups of a
 * CTA (with one warpgroup idle, the 64-key body with the decode part beside it is
 * faster). Elsewhere the decode part runs on the SMs the context grid leaves and
 * frees, and wide tiles pay off where the decode part is small next to the context
 * part's tensor-core time, and wherever that time is large, whatever the decode part:
 * a lean decode CTA beside a 64-key context CTA overlaps little with it, and the
 * 64-key body's slower tensor-core work costs more. With a small context part and a
 * large decode part the 64-key body is faster. */
#define BIF_WIDE_MAX_DECODE_SHARE 0.25
#define BIF_WIDE_LARGE_CONTEXT_US 50.0
static bool bif_wide_fits(const problem_t *p, const device_info_t *dev)
{
    if (!bif_tma(p)) return false;
    if (bif_dec_streamable(p)) return p->beam * problem_group(p) >= WG_ROWS;
    const double ctx_us = bif_ctx_flop_us(p, dev);
    return bif_dec_read_us(p, dev) < BIF_WIDE_MAX_DECODE_SHARE * ctx_us || ctx_us >= BIF_WIDE_LARGE_CONTEXT_US;
}

/* The plan's split is the context part's; its variant the decode part's chunk. */
typedef struct bif_splits { split_plan_t ctx, dec; int ctx_slots, nslots; } bif_splits_t;

static bif_splits_t bif_resolve(const problem_t *p, const attn_plan_t *plan)
{
    bif_splits_t s;
    const int ck = bif_ctx_keys(p), dk = bif_dec_keys(p);
    if (plan && plan->split.splits >= 1 && plan->split.chunk >= 1) s.ctx = plan->split;
    else s.ctx = split_plan_fixed(ck, 1, ATTN_KEY_TILE);
    int chunk = plan ? plan->variant & ~(BIF_WGMMA | BIF_WIDE | BIF_DEC_IN_CTA | BIF_COPIER) : 0;
    if (chunk < 1) chunk = (dk + ATTN_KEY_TILE - 1) / ATTN_KEY_TILE * ATTN_KEY_TILE;
    if (bif_dec_in_cta(plan)) chunk = WG_KT_WIDE; /* a partial per wide tile of each stream's keys */
    s.dec.chunk = chunk;
    s.dec.splits = (dk + chunk - 1) / chunk;
    s.ctx_slots = ck > 0 ? s.ctx.splits : 0;
    s.nslots = s.ctx_slots + s.dec.splits;
    return s;
}

/* Where the 128-key body streams the decode part and the context is one split, each
 * context CTA holds every partial of its rows and writes their output itself
 * (wg_item::epilogue): no merge launch, and the context's partial never
 * reaches the workspace. */
static bool bif_folds_in_cta(const problem_t *p, const attn_plan_t *plan)
{
    return bif_dec_in_cta(plan) && bif_resolve(p, plan).ctx.splits == 1;
}

static kv_layout_t bif_layout(const problem_t *p)
{
    return p->cache == CACHE_PAGED ? LAYOUT_PAGED : LAYOUT_BIFURCATED;
}

/* The SM split (sm_split_plan) of the wgmma context part and an MHA decode part on
 * a contiguous cache: a persistent context grid holds ctx_sms SMs and works through
 * its items while the decode part streams on the others, in the register-streaming
 * body (attn_stream.cuh), and on all of them once the context part is done. On
 * the whole GPU the two parts take about their sum: a decode CTA fits beside a
 * 128-key context CTA in no resource, and beside a 64-key one it overlaps little.
 * The split pays where the decode part
 * is large next to the context part's tensor-core work: an SM of the streaming
 * body moves BIF_STREAM_SM_RATE times its even share of the measured bandwidth
 * (the KEYSPLIT body only about its share, so larger groups are never split).
 * Rates fitted on the H200: the context body at BIF_CTX_TC_EFFICIENCY(_WIDE) of the
 * measured GEMM rate, the streaming body at BIF_STREAM_BW_EFFICIENCY of the measured
 * read bandwidth alone on the GPU; and what a split costs by itself, BIF_SPLIT_US (the
 * wait for the context grid's launch-completion event, the persistent CTAs' item
 * changes), set so that a split runs only where the predicted gain is large enough to
 * hold on both GPUs: smaller predicted gains came out anywhere from a loss to a gain. */
#define BIF_CTX_TC_EFFICIENCY 0.45
#define BIF_CTX_TC_EFFICIENCY_WIDE 0.56
#define BIF_STREAM_SM_RATE 1.3
#define BIF_STREAM_BW_EFFICIENCY 0.94
#define BIF_SPLIT_US 80.0
static int bif_ctx_sms(const problem_t *p, const device_info_t *dev, long items, bool wide)
{
    if (p->cache != CACHE_CONTIGUOUS || problem_group(p) != 1 || p->head_dim != STREAM_D || dev->sm_count < 2)
        return 0;
    const int sms = dev->sm_count;
    const double tc = (dev->peak_tc_tflops > 0 ? dev->peak_tc_tflops * 1e6 : BIF_DEFAULT_FLOPS_PER_US) *
                      (wide ? BIF_CTX_TC_EFFICIENCY_WIDE : BIF_CTX_TC_EFFICIENCY) / sms;
    /* a warpgroup computes its 64 rows whether or not all of them are queries */
    const double rows = (double)((p->beam + WG_ROWS / 2 - 1) / (WG_ROWS / 2) * (WG_ROWS / 2));
    const double flops = 4.0 * p->batch * p->kv_heads * rows * bif_ctx_keys(p) * p->head_dim;
    const double bw = bif_bytes_per_us(dev);
    const double dec_bytes = (double)problem_streams(p) * bif_dec_keys(p) * io_kv_row_bytes(p);
    return sm_split_plan(items, flops / items / tc, dec_bytes, BIF_STREAM_SM_RATE * bw / sms,
                         BIF_STREAM_BW_EFFICIENCY * bw, sms, BIF_SPLIT_US)
        .sms;
}

/* The most context splits the wgmma body's planner takes. The planner fills the SMs
 * with (item, split) CTAs; with a single item (MQA at W <= 4) that would be 128 splits
 * of 256 keys at 32k, whose partials the merge folds at 128 per row: half as many run
 * faster, the merge's share falling by more than the grid's occupancy costs. With two
 * items or more the planner stays at or below it. */
#define BIF_WGMMA_MAX_SPLITS 64
#define BIF_DEC_ROOM_US 5.0 /* (bif_plan) */

/* Whether the decode tiles take the copier (wg_traits: COPIER), on a paged cache where
 * a CTA's decode tiles are at least its context tiles. There the decode warpgroup's
 * chain of tiles paces the step (it ends well after the context loop), and it runs
 * faster without the copies and look-ups in its registers; where the context loop
 * paces it, the producer's spills cost more. A contiguous cache's decode warpgroup
 * spills next to nothing either way. */
static bool bif_copier_fits(const problem_t *p, const split_plan_t *ctx)
{
    const int group = problem_group(p), rows = p->beam * group < WG_ROWS ? p->beam * group : WG_ROWS;
    const long dec = (long)(rows / group + ctx->splits - 1) / ctx->splits * ((bif_dec_keys(p) + WG_KT_WIDE - 1) / WG_KT_WIDE);
    return p->cache == CACHE_PAGED && dec >= (ctx->chunk + WG_KT_WIDE - 1) / WG_KT_WIDE;
}

static void bif_plan(const problem_t *p, const device_info_t *dev, attn_plan_t *plan)
{
    plan->runs = &kernel_bifurcated;
    const int ck = bif_ctx_keys(p);
    const bool wgmma = bif_wgmma_fits(p, dev);
    const bool wide = wgmma && bif_wide_fits(p, dev);
    long ctx_items = (long)p->batch * p->kv_heads * bif_ctx_row_tiles(p, wgmma);
    long dec_items = (long)problem_streams(p) * p->kv_heads * bif_dec_row_tiles(p);
    const bool in_cta = ck > 0 && wide && bif_dec_streamable(p);
    const split_plan_t dec = attn_split(p, dev, dec_items, bif_dec_keys(p), attn_ctas_per_sm(p, true, dev));
    /* A wide context CTA takes its SM's shared memory, so the decode part beside it on
     * the second stream (MQA-like groups) finds room only on the SMs the context grid
     * leaves, or waits for context CTAs to finish. Where its D CTAs are few, the context
     * splits fill the other S - D SMs: worth it while what that costs the context part,
     * its tensor-core time at the measured peak times D / (S - D), stays below
     * BIF_DEC_ROOM_US, about what a decode CTA takes; at a larger cost, making room
     * slows the step. */
    device_info_t room;
    const device_info_t *ctx_dev = dev;
    const long dec_ctas = dec_items * dec.splits;
    if (wide && !in_cta && dec_ctas < dev->sm_count &&
        bif_ctx_flop_us(p, dev) * dec_ctas / (dev->sm_count - dec_ctas) < BIF_DEC_ROOM_US) {
        room = *dev;
        room.sm_count = dev->sm_count - (int)dec_ctas;
        ctx_dev = &room;
    }
    plan->split = ck > 0 ? attn_split(p, ctx_dev, ctx_items, ck, wgmma ? 1 : attn_ctas_per_sm(p, false, dev),
                                      wide ? WG_KT_WIDE : ATTN_KEY_TILE)
                         : split_plan_fixed(1, 1, ATTN_KEY_TILE);
    if (wgmma && p->splits == 0 && plan->split.splits > BIF_WGMMA_MAX_SPLITS)
        plan->split = split_plan_fixed(ck, BIF_WGMMA_MAX_SPLITS, wide ? WG_KT_WIDE : ATTN_KEY_TILE);
    plan->variant = dec.chunk | (wgmma ? BIF_WGMMA : 0) | (wide ? BIF_WIDE : 0) | (in_cta ? BIF_DEC_IN_CTA : 0) |
                    (in_cta && bif_copier_fits(p, &plan->split) ? BIF_COPIER : 0);
    plan->ctx_sms = wgmma && ck > 0 && !in_cta ? bif_ctx_sms(p, dev, ctx_items * plan->split.splits, wide) : 0;
}

/* Partials, then one completion counter per (stream, kv head, decode row tile). */
static size_t bif_counters_offset(const problem_t *p, const attn_plan_t *plan)
{
    return attn_partials_bytes(p, bif_resolve(p, plan).nslots);
}

static size_t bif_workspace_bytes(const problem_t *p, const attn_plan_t *plan)
{
    size_t partials = bif_counters_offset(p, plan);
    if (!partials) return 0;
    return partials + (size_t)problem_streams(p) * p->kv_heads * bif_dec_row_tiles(p) * sizeof(unsigned int);
}

/* With the wgmma context body the decode part runs beside it on a second stream:
 * a lean decode CTA shares each SM with a 64-key context CTA, and behind the wide
 * body it takes the SMs the context grid leaves and those its CTAs free first
 * (run after it instead, a large MHA decode part adds its whole time); with an SM
 * split (bif_ctx_sms) it streams on the SMs the persistent context grid leaves. With the
 * mma.sync body the decode part runs after it, and its last CTA of each (stream,
 * kv head) merges every partial (attn_tail_merge_fits), which saves the merge
 * launch. */
static bool bif_concurrent(const problem_t *p, const attn_plan_t *plan)
{
    return bif_wgmma(plan) && bif_ctx_keys(p) > 0 && !bif_dec_in_cta(plan);
}

/* The decode part's ring: lean beside the context part, so that it fits on its SMs. Setup
 * and launch must pick the same instantiation. */
static int bif_dec_ring(const problem_t *p, const attn_plan_t *plan)
{
    return bif_concurrent(p, plan) ? ATTN_RING_LEAN : ATTN_RING_DEFAULT;
}

static size_t bif_private_bytes(const problem_t *p, const attn_plan_t *plan)
{
    (void)p; (void)plan;
    return 0;
}

static attn_io_t bif_io(const problem_t *p, const attn_plan_t *plan)
{
    attn_io_t io;
    const bif_splits_t s = bif_resolve(p, plan);
    double partials = (double)bif_counters_offset(p, plan);
    if (bif_folds_in_cta(p, plan)) partials *= (double)s.dec.splits / s.nslots; /* the decode tiles' alone */
    /* paged: the per-stream copies of a partly filled last context block are read
     * by the decode part, stream by stream */
    double kv = p->cache == CACHE_PAGED ? io_kv_bytes_stored(p) : io_kv_bytes_unique(p);
    io.bytes = kv + io_qo_bytes(p) + io_table_bytes(p);
    io.unique_bytes = io_kv_bytes_unique(p) + io_qo_bytes(p) + io_table_bytes(p);
    io.flops = io_flops(p);
    io.workspace_bytes = 2.0 * partials; /* partials written, read back */
    return io;
}

static int bif_ctx_addr(const problem_t *p) { return p->cache == CACHE_PAGED ? ADDR_PAGED : ADDR_CTX; }
static int bif_dec_addr(const problem_t *p) { return p->cache == CACHE_PAGED ? ADDR_PAGED : ADDR_DEC; }

/* With the wgmma context body, the decode part runs beside it on a second stream:
 * the context part is bound by tensor-core work, the decode part (W streams' own
 * K/V, MHA's largest traffic) by memory, so on one SM a context CTA and a lean
 * decode CTA use different units. Fork and join are events, so the step stays one
 * capturable sequence on the caller's stream. */
typedef struct bif_state {
    CUtensorMap ctx_map; /* the wgmma body's TMA view of K_c/V_c or the paged pool */
    CUtensorMap dec_map; /* and of K_d/V_d, where it streams the decode part (contiguous) */
    cudaStream_t side;
    cudaEvent_t fork, started, join; /* started: every CTA of the context grid has begun */
} bif_state_t;

/* A TMA view of matrices of [rows, d] elements at base, in boxes 64 elements (128
 * bytes, the widest the 128-byte swizzle takes) wide and box_rows rows, zero past the
 * last row:
 *  - the context (bif_encode_ctx_map): contiguous, K_c/V_c [B, 2, g, m_c, d] as B*2*g
 *    matrices of m_c rows in boxes of a key tile; paged (bif_tma), the pool
 *    [blocks, 2, g, S, d] as blocks*2*g matrices of S rows in boxes of a key tile or a
 *    block, the smaller;
 *  - the decoded keys the wide body streams (contiguous): K_d/V_d [B*W, 2, g, m_d, d]
 *    as B*W*2*g matrices of m_d rows in boxes of a key tile. */
static cudaError_t bif_encode_map(const void *base, int d, cuuint64_t rows, cuuint64_t matrices, int box_rows,
                                  CUtensorMap *map)
{
    const cuuint64_t esize = 2;
    cuuint64_t dims[3] = {(cuuint64_t)d, rows, matrices};
    cuuint64_t strides[2] = {dims[0] * esize, dims[0] * dims[1] * esize};
    cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1};
    cuuint32_t elem[3] = {1, 1, 1};
    /* through the runtime's driver entry point, so the binary needs no libcuda to start
     * (CPU-only machines run its tests) */
    typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                  const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    void *sym = NULL;
    cudaDriverEntryPointQueryResult found;
    cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &sym, 12000, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !sym) return cudaErrorNotSupported;
    encode_fn encode = reinterpret_cast<encode_fn>(sym);
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, const_cast<void *>(base), dims, strides, box, elem,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
static cudaError_t bif_encode_ctx_map(const attn_args_t *a, int key_tile, CUtensorMap *map)
{
    const problem_t *p = &a->problem;
    if (p->cache == CACHE_PAGED)
        return bif_encode_map(a->kv, p->head_dim, p->block_size, (cuuint64_t)a->num_blocks * 2 * p->kv_heads,
                              p->block_size < key_tile ? p->block_size : key_tile, map);
    return bif_encode_map(a->kv_ctx, p->head_dim, p->ctx, (cuuint64_t)p->batch * 2 * p->kv_heads, key_tile, map);
}
static cudaError_t bif_encode_dec_map(const attn_args_t *a, CUtensorMap *map)
{
    const problem_t *p = &a->problem;
    return bif_encode_map(a->kv_dec, p->head_dim, p->gen, (cuuint64_t)problem_streams(p) * 2 * p->kv_heads,
                          WG_KT_WIDE, map);
}

static void bif_teardown(attn_args_t *a)
{
    bif_state_t *st = static_cast<bif_state_t *>(a->state);
    if (!st) return;
    if (st->join) cudaEventDestroy(st->join);
    if (st->started) cudaEventDestroy(st->started);
    if (st->fork) cudaEventDestroy(st->fork);
    if (st->side) cudaStreamDestroy(st->side);
    free(st);
    a->state = NULL;
}

static cudaError_t bif_setup(attn_args_t *a)
{
    const problem_t *p = &a->problem;
    const bool concurrent = bif_concurrent(p, &a->plan);
    cudaError_t err = attn_setup_keysplit(p, bif_dec_addr(p), bif_dec_ring(p, &a->plan));
    if (err != cudaSuccess) return err;
    if (!attn_tc_path(p)) return attn_setup_keysplit(p, bif_ctx_addr(p), ATTN_RING_DEFAULT);
    const bool wgmma = bif_wgmma(&a->plan), wide = bif_wide(&a->plan);
    const void *fn =
        wgmma ? (const void *)wgmma_pick(p, &a->plan)
              : (const void *)ctx_pick(p, bif_ctx_addr(p));
    if (!fn) return cudaErrorInvalidValue;
    err = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               wgmma ? wgmma_smem(wide) : attn_smem_bytes(p, false));
    if (err != cudaSuccess || !wgmma || bif_ctx_keys(p) == 0) return err;
    /* The largest carveout, so that a lean decode CTA fits beside a context CTA
     * (attn_setup_keysplit sets the same on the decode body). */
    err = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (err != cudaSuccess) return err;
    /* CUtensorMap must be 64-byte aligned */
    bif_state_t *st = static_cast<bif_state_t *>(aligned_alloc(64, (sizeof(bif_state_t) + 63) / 64 * 64));
    if (!st) return cudaErrorMemoryAllocation;
    memset(st, 0, sizeof *st);
    a->state = st;
    err = bif_tma(p) ? bif_encode_ctx_map(a, wide ? WG_KT_WIDE : WG_KT, &st->ctx_map) : cudaSuccess;
    if (err == cudaSuccess && bif_dec_in_cta(&a->plan) && p->cache == CACHE_CONTIGUOUS)
        err = bif_encode_dec_map(a, &st->dec_map);
    if (err != cudaSuccess || !concurrent) {
        if (err != cudaSuccess) bif_teardown(a);
        return err;
    }
    err = cudaStreamCreateWithFlags(&st->side, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&st->fork, cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&st->started, cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&st->join, cudaEventDisableTiming);
    if (err != cudaSuccess) bif_teardown(a);
    return err;
}

/* The wgmma context part: a CTA per item, or with an SM split a persistent grid of
 * plan.ctx_sms CTAs whose launch-completion event (`started`: every CTA has begun)
 * the decode part waits for. Launched together, the decode part's small CTAs would take
 * SMs first and the context CTAs find room only as whole SMs drained. */
static cudaError_t bif_launch_wgmma(const attn_args_t *a, const attn_params_t *cp, int64_t ctas, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const bif_state_t *st = static_cast<const bif_state_t *>(a->state);
    const bool wide = bif_wide(&a->plan);
    wgmma_ctx_fn fn = wgmma_pick(p, &a->plan);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeLaunchCompletionEvent;
    attr.val.launchCompletionEvent.event = st->started;
    attr.val.launchCompletionEvent.flags = 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(bif_split(&a->plan) && ctas > a->plan.ctx_sms ? a->plan.ctx_sms : ctas));
    cfg.blockDim = dim3(wgmma_threads(wide, bif_dec_in_cta(&a->plan)));
    cfg.dynamicSmemBytes = (size_t)wgmma_smem(wide);
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = bif_split(&a->plan) ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, fn, *cp, st->ctx_map, st->dec_map);
}

/* The decode part of an SM split, one warp per (stream, kv head, split). */
static cudaError_t bif_launch_stream(const problem_t *p, attn_params_t dp, cudaStream_t stream)
{
    typedef void (*stream_fn)(const attn_params_t);
    stream_fn fn = p->dtype == DTYPE_FP16 ? attn_stream_kernel<__half, ADDR_DEC> : attn_stream_kernel<__nv_bfloat16, ADDR_DEC>;
    dp.rows_per_cta = 1;
    dp.row_tiles = 1;
    const int64_t ctas = (attn_items(dp) + STREAM_WARPS - 1) / STREAM_WARPS;
    if (ctas > INT_MAX) return cudaErrorInvalidConfiguration;
    fn<<<(unsigned)ctas, STREAM_THREADS, 0, stream>>>(dp);
    return cudaGetLastError();
}

static cudaError_t bif_launch(attn_args_t *a, cudaStream_t stream)
{
    const problem_t *p = &a->problem;
    const bif_splits_t s = bif_resolve(p, &a->plan);
    const bool paged = p->cache == CACHE_PAGED;
    if (s.nslots > 1 && !a->workspace) return cudaErrorInvalidValue;
    attn_params_t P = attn_params_base(a, s.nslots);
    bif_state_t *st = s.ctx_slots > 0 ? static_cast<bif_state_t *>(a->state) : NULL;
    const bool concurrent = bif_concurrent(p, &a->plan), in_cta = bif_dec_in_cta(&a->plan);
    const bool fold = bif_folds_in_cta(p, &a->plan);
    if ((concurrent || in_cta) && !st) return cudaErrorInvalidValue;
    cudaStream_t dec_stream = concurrent ? st->side : stream;
    const bool split = concurrent && bif_split(&a->plan);
    cudaError_t err;
    if (concurrent) {
        err = cudaEventRecord(st->fork, stream);
        if (err == cudaSuccess) err = cudaStreamWaitEvent(st->side, st->fork, 0);
        if (err != cudaSuccess) return err;
    }

    if (s.ctx_slots > 0) {
        attn_params_t cp = P;
        cp.kv = paged ? a->kv : a->kv_ctx;
        cp.vstride = paged ? kv_paged_offset(&cp.geom, 0, 1, 0, 0) : kv_ctx_offset(&cp.geom, 0, 1, 0, 0);
        cp.units = p->batch;
        cp.splits = s.ctx.splits;
        cp.chunk = s.ctx.chunk;
        const bool wgmma = bif_wgmma(&a->plan);
        cp.rows_per_cta = bif_ctx_rows_per_cta(p, wgmma);
        cp.row_tiles = bif_ctx_row_tiles(p, wgmma);
        cp.rows_per_unit = p->beam * problem_group(p);
        cp.streams_per_unit = p->beam;
        cp.addr_stream_mult = p->beam; /* paged: the request's first stream's table row */
        cp.key_begin = 0;
        cp.key_end = bif_ctx_keys(p);
        cp.slot_base = 0;
        cp.dec_keys = in_cta ? bif_dec_keys(p) : 0;
        cp.fold = fold;
        cp.ragged = problem_ragged(p) ? ATTN_RAGGED_CTX : ATTN_RAGGED_NONE;
        const int64_t ctas = attn_items(cp);
        if (ctas > INT_MAX) return cudaErrorInvalidConfiguration;
        if (wgmma) {
            err = bif_launch_wgmma(a, &cp, ctas, stream);
        } else if (attn_tc_path(p)) {
            attn_kernel_fn fn = ctx_pick(p, bif_ctx_addr(p));
            if (!fn) return cudaErrorInvalidValue;
            fn<<<(unsigned)ctas, ATTN_THREADS, attn_smem_bytes(p, false), stream>>>(cp);
            err = cudaGetLastError();
        } else {
            err = attn_launch_keysplit(p, bif_ctx_addr(p), &cp, stream, ATTN_RING_DEFAULT);
        }
        if (err != cudaSuccess) return err;
    }

    /* the merge behind the wgmma body with decode tiles (Hopper): its programmatic
     * dependent, set up while the context grid's last CTAs finish (attn_launch_merge) */
    if (in_cta) return fold ? cudaSuccess : attn_launch_merge(p, &P, stream, true);

    attn_params_t dp = P;
    dp.kv = paged ? a->kv : a->kv_dec;
    dp.vstride = paged ? kv_paged_offset(&dp.geom, 0, 1, 0, 0) : kv_dec_offset(&dp.geom, 0, 1, 0, 0);
    dp.units = problem_streams(p);
    dp.splits = s.dec.splits;
    dp.chunk = s.dec.chunk;
    dp.rows_per_cta = attn_rows_per_cta(p, true);
    dp.row_tiles = bif_dec_row_tiles(p);
    dp.rows_per_unit = problem_group(p);
    dp.streams_per_unit = 1;
    dp.addr_stream_mult = 1;
    dp.key_begin = bif_ctx_keys(p);
    dp.key_end = problem_keys(p);
    dp.slot_base = s.ctx_slots;
    dp.ragged = problem_ragged(p) ? ATTN_RAGGED_DEC : ATTN_RAGGED_NONE;
    const bool tail_merge = !concurrent && s.nslots > 1 && attn_tail_merge_fits(p, s.nslots);
    if (tail_merge)
        dp.counters = reinterpret_cast<unsigned int *>(static_cast<char *>(a->workspace) +
                                                       bif_counters_offset(p, &a->plan));
    if (split) {
        /* the decode part's CTAs take the SMs the persistent context grid leaves */
        err = cudaStreamWaitEvent(dec_stream, st->started, 0);
        if (err == cudaSuccess) err = bif_launch_stream(p, dp, dec_stream);
    } else {
        err = attn_launch_keysplit(p, bif_dec_addr(p), &dp, dec_stream, bif_dec_ring(p, &a->plan));
    }
    if (err == cudaSuccess && concurrent) {
        err = cudaEventRecord(st->join, st->side);
        if (err == cudaSuccess) err = cudaStreamWaitEvent(stream, st->join, 0);
    }
    if (err != cudaSuccess || s.nslots == 1 || tail_merge) return err;
    /* behind the decode part's grid on this stream, or behind the join */
    return attn_launch_merge(p, &P, stream, !concurrent);
}

extern "C" const attn_kernel_t kernel_bifurcated = {
    "bifurcated",
    "bifurcated attention: context read once per request for all W*p queries (wgmma on Hopper at "
    "d 128, else mma.sync), decode part per stream (streamed "
    "by the 128-key wgmma part between its context tiles where p <= 8, else beside it on a second "
    "stream or on the SMs a persistent context grid leaves), log-sum-exp merge",
    "contiguous (split context/decoded buffers), paged (shared context blocks); fp16, bf16 (tensor cores at "
    "d 64/80/96/128/256), fp32; d multiple of 8 up to 256; any h/g, W; indirection; --multi-block, --splits; "
    "--kv-dtype fp8|int8 with --kv-scale tensor|head (both parts on mma.sync at d 64/128/256, Hopper too; "
    "CUDA cores elsewhere); --step append; ragged --ctx-dist (on the mma.sync body)",
    attn_core_unsupported,
    bif_layout,
    bif_plan,
    bif_workspace_bytes,
    bif_private_bytes,
    bif_io,
    bif_setup,
    bif_launch,
    bif_teardown,
    NULL, /* not a peer */
    1,    /* runs --step append */
};
