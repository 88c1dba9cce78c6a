/* The problem the CPU tests build their cases from: problem_default() with the
 * shape given, and on a paged cache a block size; the paged form must validate. */
#ifndef ATTNBENCH_TEST_PROBLEM_H
#define ATTNBENCH_TEST_PROBLEM_H

#include <stdio.h>
#include <string.h>
#include "../harness/layouts.h"
#include "../problem/device_info.h"
#include "../problem/problem.h"
#include "../reference/reference.h"

/* p must validate. */
static inline void test_validate(problem_t *p)
{
    char msg[256];
    assert_int_equal(problem_validate(p, msg, sizeof msg), 0);
}

static inline problem_t test_problem(int batch, int beam, int heads, int kv_heads, int head_dim, int ctx,
                                     int gen)
{
    problem_t p = problem_default();
    p.batch = batch;
    p.beam = beam;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.head_dim = head_dim;
    p.ctx = ctx;
    p.gen = gen;
    return p;
}

static inline problem_t test_paged_problem(int batch, int beam, int heads, int kv_heads, int head_dim,
                                           int ctx, int gen, int block_size)
{
    problem_t p = test_problem(batch, beam, heads, kv_heads, head_dim, ctx, gen);
    p.cache = CACHE_PAGED;
    p.block_size = block_size;
    test_validate(&p);
    return p;
}

/* The reference's source of p's logical inputs of this seed in this layout. */
static inline ref_source_t test_logical_source(const problem_t *p, kv_layout_t layout, uint64_t seed)
{
    ref_source_t src;
    memset(&src, 0, sizeof src);
    src.p = p;
    src.geom = kv_geometry_make(p, layout);
    src.seed = seed;
    return src;
}

/* An H100 as the planners see it: its SMs, memory and round peaks. */
static inline device_info_t test_h100(void)
{
    device_info_t d;
    memset(&d, 0, sizeof d);
    snprintf(d.gpu, sizeof d.gpu, "h100");
    d.cc = 90;
    d.sm_count = 132;
    d.smem_per_block_optin = 227 * 1024;
    d.smem_per_sm = 228 * 1024;
    d.l2_bytes = 50 << 20;
    d.peak_read_gbps = 3090;
    d.peak_tc_tflops = 800;
    d.peak_l2_gbps = 7000;
    return d;
}

#endif
