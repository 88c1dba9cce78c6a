#include "schedule.h"

#include <stdlib.h>
#include <string.h>

/* The GPU the cost model plans for: an H100 SXM, whatever this machine holds (or
 * lacks), so that every machine slices a sweep the same way. */
static const device_info_t nominal = {
    .name = "nominal", .gpu = "nominal", .cc = 90, .sm_count = 132,
    .smem_per_block_optin = 227 * 1024, .smem_per_sm = 228 * 1024, .l2_bytes = 50 << 20,
    .free_bytes = (size_t)80 << 30, .total_bytes = (size_t)80 << 30,
    .peak_read_gbps = 3000.0, .peak_tc_tflops = 800.0, .peak_l2_gbps = 7000.0,
};

double schedule_cost(const problem_t *p, const attn_kernel_t *k)
{
    if (attn_kernel_unsupported(k, p)) return 0.0;
    attn_io_t io;
    if (k->peer || !k->plan || !k->io) {
        io.bytes = io_kv_bytes_stored(p) + io_qo_bytes(p) + io_table_bytes(p);
        io.workspace_bytes = 0.0;
        io.flops = io_flops(p);
    } else {
        attn_plan_t plan;
        memset(&plan, 0, sizeof plan);
        plan.runs = k;
        plan.split = split_plan_fixed(problem_keys(p), 1, 1);
        k->plan(p, &nominal, &plan);
        if (!plan.runs) plan.runs = k;
        io = k->io(p, &plan);
    }
    return (io.bytes + io.workspace_bytes) / (nominal.peak_read_gbps * 1e9) +
           io.flops / (nominal.peak_tc_tflops * 1e12);
}

typedef struct ranked {
    double cost;
    int index;
} ranked_t;

static int dearest_first(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int schedule_order(const double *cost, int n, int *order)
{
    ranked_t *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r) return -1;
    for (int i = 0; i < n; ++i) r[i] = (ranked_t){cost[i] == cost[i] ? cost[i] : 0.0, i};
    qsort(r, (size_t)n, sizeof *r, dearest_first);
    for (int i = 0; i < n; ++i) order[i] = r[i].index;
    free(r);
    return 0;
}

static int ascending(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int schedule_shard(const double *cost, int n, int shard, int shards, int *out)
{
    /* no fallback order where memory runs out: another machine would slice differently */
    int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order || schedule_order(cost, n, order) != 0) {
        free(order);
        return -1;
    }
    int k = 0;
    for (int r = 0; r < n; ++r) {
        int round = r / shards, pos = r % shards;
        int to = round % 2 == 0 ? pos : shards - 1 - pos;   /* the snake */
        if (to == shard) out[k++] = order[r];
    }
    free(order);
    qsort(out, (size_t)k, sizeof *out, ascending);
    return k;
}
