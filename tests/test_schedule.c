/* How rows are shared without a GPU: the cost estimate, --shard's slices, and the
 * --devices checks (which devices, which CUDA_VISIBLE_DEVICES a worker gets). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>
#include "../harness/schedule.h"
#include "../bench/options.h"
#include "../bench/pool.h"

/* Costs with ties and zeros (unsupported rows), from a fixed generator. */
static void costs(double *c, int n, unsigned seed)
{
    for (int i = 0; i < n; ++i) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 7;
        c[i] = r == 0 ? 0.0 : (double)(r * r) * 1e-6;
    }
}

/* Over N shards every row is in exactly one, each shard lists its rows in grid order,
 * and no shard has more than one row more than another. */
static void every_row_lands_in_exactly_one_shard(void **state)
{
    (void)state;
    enum { MAX = 203 };
    double c[MAX];
    int rows[MAX], seen[MAX];
    const int sizes[] = {0, 1, 2, 7, 33, 64, 203};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        int n = sizes[s];
        costs(c, n, (unsigned)n + 1);
        for (int shards = 1; shards <= 9; ++shards) {
            memset(seen, 0, sizeof seen);
            int least = MAX, most = 0;
            for (int k = 0; k < shards; ++k) {
                int m = schedule_shard(c, n, k, shards, rows);
                assert_true(m >= 0);
                for (int i = 0; i < m; ++i) {
                    assert_true(rows[i] >= 0 && rows[i] < n);
                    seen[rows[i]]++;
                    if (i) assert_true(rows[i] > rows[i - 1]);
                }
                if (m < least) least = m;
                if (m > most) most = m;
            }
            for (int i = 0; i < n; ++i) assert_int_equal(seen[i], 1);
            assert_true(most - least <= 1);
        }
    }
}

/* The dearest rows go one to each shard, and the slices are the same on every call:
 * they depend on the costs alone. */
static void heavy_rows_spread_over_the_shards(void **state)
{
    (void)state;
    enum { N = 40, SHARDS = 4 };
    double c[N];
    for (int i = 0; i < N; ++i) c[i] = i < N - SHARDS ? 1.0 : 100.0 + i;   /* the last 4 dear */
    int rows[N], again[N];
    double load[SHARDS] = {0};
    for (int k = 0; k < SHARDS; ++k) {
        int m = schedule_shard(c, N, k, SHARDS, rows);
        int dear = 0;
        for (int i = 0; i < m; ++i) {
            dear += rows[i] >= N - SHARDS;
            load[k] += c[rows[i]];
        }
        assert_int_equal(dear, 1);
        assert_int_equal(schedule_shard(c, N, k, SHARDS, again), m);
        assert_memory_equal(rows, again, (size_t)m * sizeof *rows);
    }
    for (int k = 1; k < SHARDS; ++k) assert_true(fabs(load[k] - load[0]) < 10.0);
}

static void order_is_dearest_first_ties_by_index(void **state)
{
    (void)state;
    const double c[] = {1.0, 5.0, 1.0, NAN, 5.0, 0.0};
    int order[6];
    assert_int_equal(schedule_order(c, 6, order), 0);
    const int want[] = {1, 4, 0, 2, 3, 5};
    assert_memory_equal(order, want, sizeof want);
}

/* The estimate is the kernel's own bytes and FLOPs: it grows with the context, a
 * kernel's unsupported rows cost nothing, and bifurcated, which reads a shared context
 * once, costs less than fused on many streams. */
static void cost_follows_the_kernels_byte_model(void **state)
{
    (void)state;
    problem_t p = problem_default();
    const char *names[] = {"cublas", "fused", "cublas-bifurcated", "bifurcated", "auto"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        const attn_kernel_t *k = attn_kernel_find(names[i]);
        assert_non_null(k);
        problem_t small = p, large = p;
        large.ctx = 8 * p.ctx;
        double a = schedule_cost(&small, k), b = schedule_cost(&large, k);
        assert_true(isfinite(a) && a > 0);
        assert_true(b > 2 * a);
    }
    problem_t paged = p;
    paged.cache = CACHE_PAGED;
    assert_true(schedule_cost(&paged, attn_kernel_find("cublas")) == 0.0);
    problem_t wide = p;
    wide.beam = 64;
    assert_true(schedule_cost(&wide, attn_kernel_find("bifurcated")) <
                schedule_cost(&wide, attn_kernel_find("fused")) / 4);
}

static void devices_are_of_one_kind_and_exist(void **state)
{
    (void)state;
    const char keys[4][32] = {"h100", "h100", "a100", "h100"};
    int devices[DEVICES_MAX] = {0};
    int n = 0;
    char msg[256];
    assert_int_equal(pool_devices_check(keys, 2, true, devices, &n, msg, sizeof msg), 0);
    assert_int_equal(n, 2);
    assert_int_equal(devices[0], 0);
    assert_int_equal(devices[1], 1);

    n = 2, devices[0] = 3, devices[1] = 0;
    assert_int_equal(pool_devices_check(keys, 4, false, devices, &n, msg, sizeof msg), 0);
    n = 2, devices[0] = 0, devices[1] = 2;
    assert_int_equal(pool_devices_check(keys, 4, false, devices, &n, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "different kinds"));
    assert_non_null(strstr(msg, "a100"));
    assert_null(strchr(msg, '\n'));
    assert_int_equal(pool_devices_check(keys, 4, true, devices, &n, msg, sizeof msg), -1);
    n = 1, devices[0] = 4;
    assert_int_equal(pool_devices_check(keys, 4, false, devices, &n, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "no device 4"));
}

static void a_worker_sees_its_gpu_by_the_parents_numbering(void **state)
{
    (void)state;
    char v[64];
    assert_int_equal(pool_visible_device(NULL, 3, v, sizeof v), 0);
    assert_string_equal(v, "3");
    assert_int_equal(pool_visible_device("2,3", 1, v, sizeof v), 0);
    assert_string_equal(v, "3");
    assert_int_equal(pool_visible_device("GPU-8f2a,GPU-77c1", 0, v, sizeof v), 0);
    assert_string_equal(v, "GPU-8f2a");
    assert_int_equal(pool_visible_device("2,3", 2, v, sizeof v), -1);
    assert_int_equal(pool_visible_device("", 0, v, sizeof v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_lands_in_exactly_one_shard),
        cmocka_unit_test(heavy_rows_spread_over_the_shards),
        cmocka_unit_test(order_is_dearest_first_ties_by_index),
        cmocka_unit_test(cost_follows_the_kernels_byte_model),
        cmocka_unit_test(devices_are_of_one_kind_and_exist),
        cmocka_unit_test(a_worker_sees_its_gpu_by_the_parents_numbering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
