/* The per-row log-sum-exp fold of kernels/state_merge.h, which every merge of the
 * kernels applies (state_merge.cuh): the same code the GPU runs, checked on the CPU
 * against a one-pass softmax in double. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "../problem/logical_data.h"
#include "../kernels/state_merge.h"

/* Deterministic uniform values in [lo, hi). */
static double uniform(uint64_t *state, double lo, double hi)
{
    *state = splitmix64(*state);
    return lo + (hi - lo) * (double)(*state >> 11) / 9007199254740992.0;
}

#define MERGE_KEYS 1500
#define MERGE_D 64

/* Softmax-weighted sum in double, the way the reference computes it. */
static void one_pass(const float *logit, const float *v, int n, double *out)
{
    double mx = -INFINITY, denom = 0.0, acc[MERGE_D] = {0};
    for (int i = 0; i < n; ++i) mx = fmax(mx, logit[i]);
    for (int i = 0; i < n; ++i) {
        double w = exp(logit[i] - mx);
        denom += w;
        for (int x = 0; x < MERGE_D; ++x) acc[x] += w * v[i * MERGE_D + x];
    }
    for (int x = 0; x < MERGE_D; ++x) out[x] = acc[x] / denom;
}

/* Partial state of keys [begin, end) in float, as one split of a kernel computes it. */
static void chunk_state(const float *logit, const float *v, int begin, int end, float *m, float *l,
                        float *acc)
{
    *m = -INFINITY;
    *l = 0.0f;
    memset(acc, 0, MERGE_D * sizeof *acc);
    for (int i = begin; i < end; ++i) *m = fmaxf(*m, logit[i]);
    for (int i = begin; i < end; ++i) {
        float w = expf(logit[i] - *m);
        *l += w;
        for (int x = 0; x < MERGE_D; ++x) acc[x] += w * v[i * MERGE_D + x];
    }
}

static double rel_l2(const double *want, const float *m_acc, float l)
{
    double diff2 = 0.0, ref2 = 0.0;
    for (int x = 0; x < MERGE_D; ++x) {
        double got = (double)m_acc[x] / l, d = got - want[x];
        diff2 += d * d;
        ref2 += want[x] * want[x];
    }
    return sqrt(diff2 / ref2);
}

/* One state folded into another: lse_fold with a batch of one. */
static void fold1(float *m, float *l, float *acc, float m2, float l2, const float *acc2, int d)
{
    lse_fold(m, l, acc, d, &m2, &l2, acc2, 1);
}

#define FOLD_BATCH 16 /* as the tail merge folds (TAIL_MERGE_BATCH) */

/* Chunks [bounds[c], bounds[c+1]) folded in batches of 1..FOLD_BATCH states, the
 * batch sizes drawn from rng, with `empties` empty states slipped into each batch
 * that has room (absent slots of the tail merge's last batch). */
static void fold_batches(const float *logit, const float *v, const int *bounds, int n, uint64_t *rng, int empties,
                         float *m, float *l, float *acc)
{
    static float pacc[FOLD_BATCH * MERGE_D];
    float pm[FOLD_BATCH], pl[FOLD_BATCH];
    *m = -INFINITY;
    *l = 0.0f;
    memset(acc, 0, MERGE_D * sizeof *acc);
    for (int c = 0; c + 1 < n;) {
        int want = 1 + (int)uniform(rng, 0.0, FOLD_BATCH - empties);
        int k = 0;
        for (; k < want && c + 1 < n; ++k, ++c)
            chunk_state(logit, v, bounds[c], bounds[c + 1], &pm[k], &pl[k], pacc + k * MERGE_D);
        for (int e = 0; e < empties && k < FOLD_BATCH; ++e, ++k) {
            pm[k] = -INFINITY;
            pl[k] = 0.0f;
            memset(pacc + k * MERGE_D, 0, MERGE_D * sizeof *pacc);
        }
        lse_fold(m, l, acc, MERGE_D, pm, pl, pacc, k);
    }
}

static void test_lse_fold_equals_one_pass(void **state)
{
    (void)state;
    static float logit[MERGE_KEYS], v[MERGE_KEYS * MERGE_D];
    const double spreads[] = {1.0, 8.0, 300.0}; /* mild, peaked, and logits far beyond expf's range */
    for (int trial = 0; trial < 12; ++trial) {
        uint64_t rng = 1000 + (uint64_t)trial;
        double spread = spreads[trial % 3];
        for (int i = 0; i < MERGE_KEYS; ++i) logit[i] = (float)uniform(&rng, -spread, spread);
        for (int i = 0; i < MERGE_KEYS * MERGE_D; ++i) v[i] = (float)uniform(&rng, -1.0, 1.0);
        double want[MERGE_D];
        one_pass(logit, v, MERGE_KEYS, want);

        /* random chunk boundaries */
        int bounds[64], n = 0, at = 0;
        bounds[n++] = 0;
        while (at < MERGE_KEYS && n < 63) {
            at += 1 + (int)uniform(&rng, 0.0, 200.0);
            if (at > MERGE_KEYS) at = MERGE_KEYS;
            bounds[n++] = at;
        }
        if (bounds[n - 1] != MERGE_KEYS) bounds[n++] = MERGE_KEYS;
        assert_true(n > 3);

        /* one state at a time, front to back and back to front */
        float m = -INFINITY, l = 0.0f, acc[MERGE_D] = {0};
        float rm = -INFINITY, rl = 0.0f, racc[MERGE_D] = {0};
        float cm, cl, cacc[MERGE_D];
        for (int c = 0; c + 1 < n; ++c) {
            chunk_state(logit, v, bounds[c], bounds[c + 1], &cm, &cl, cacc);
            fold1(&m, &l, acc, cm, cl, cacc, MERGE_D);
        }
        for (int c = n - 2; c >= 0; --c) {
            chunk_state(logit, v, bounds[c], bounds[c + 1], &cm, &cl, cacc);
            fold1(&rm, &rl, racc, cm, cl, cacc, MERGE_D);
        }
        assert_true(isfinite(l) && l >= 1.0f);
        assert_true(rel_l2(want, acc, l) < 1e-5);
        assert_true(rel_l2(want, racc, rl) < 1e-5);

        /* in batches, as the tail merge folds, with and without empty states among them */
        for (int empties = 0; empties <= 3; empties += 3) {
            float bm, bl, bacc[MERGE_D];
            fold_batches(logit, v, bounds, n, &rng, empties, &bm, &bl, bacc);
            assert_true(isfinite(bl) && bl >= 1.0f);
            assert_true(rel_l2(want, bacc, bl) < 1e-5);
        }

        /* a fold that dropped a chunk is caught by the same check */
        float dm = -INFINITY, dl = 0.0f, dacc[MERGE_D] = {0};
        for (int c = 1; c + 1 < n; ++c) {
            chunk_state(logit, v, bounds[c], bounds[c + 1], &cm, &cl, cacc);
            fold1(&dm, &dl, dacc, cm, cl, cacc, MERGE_D);
        }
        (void)dm;
        if (spread < 100.0) assert_true(rel_l2(want, dacc, dl) > 1e-5);
    }
}

static void test_lse_fold_empty_is_identity(void **state)
{
    (void)state;
    const float acc0[4] = {0.5f, -1.25f, 3.0f, 0.0f}, zero[4] = {0};
    float m = 1.5f, l = 2.75f, acc[4];
    memcpy(acc, acc0, sizeof acc);
    fold1(&m, &l, acc, -INFINITY, 0.0f, zero, 4); /* state + empty */
    assert_true(m == 1.5f && l == 2.75f);
    assert_memory_equal(acc, acc0, sizeof acc);

    float em = -INFINITY, el = 0.0f, eacc[4] = {0};
    fold1(&em, &el, eacc, 1.5f, 2.75f, acc0, 4); /* empty + state */
    assert_true(em == 1.5f && el == 2.75f);
    assert_memory_equal(eacc, acc0, sizeof eacc);

    /* empty + a batch of empties stays empty, no NaN */
    const float pm[3] = {-INFINITY, -INFINITY, -INFINITY}, pl[3] = {0}, pacc[12] = {0};
    float bm = -INFINITY, bl = 0.0f, bacc[4] = {0};
    lse_fold(&bm, &bl, bacc, 4, pm, pl, pacc, 3);
    assert_true(bm == -INFINITY && bl == 0.0f);
    for (int x = 0; x < 4; ++x) assert_true(bacc[x] == 0.0f);
    /* a batch of nothing leaves the state as it was */
    lse_fold(&m, &l, acc, 4, pm, pl, pacc, 0);
    assert_true(m == 1.5f && l == 2.75f);
    assert_memory_equal(acc, acc0, sizeof acc);
}

/* States with different maxima: each is rescaled by exp(its max - the largest). */
static void test_lse_fold_hand_values(void **state)
{
    (void)state;
    float m = 0.0f, l = 1.0f, acc[2] = {1.0f, 2.0f};
    const float acc2[2] = {4.0f, -2.0f};
    fold1(&m, &l, acc, 2.0f, 3.0f, acc2, 2);
    const double a = exp(-2.0);
    assert_true(m == 2.0f);
    assert_true(fabs(l - (1.0 * a + 3.0)) < 1e-6);
    assert_true(fabs(acc[0] - (1.0 * a + 4.0)) < 1e-6);
    assert_true(fabs(acc[1] - (2.0 * a - 2.0)) < 1e-6);

    /* a batch of two against a running state: max 3, weights e^-3 (running), e^-2, 1 */
    float bm = 0.0f, bl = 1.0f, bacc[1] = {1.0f};
    const float pm[2] = {1.0f, 3.0f}, pl[2] = {2.0f, 0.5f}, pacc[2] = {-1.0f, 6.0f};
    lse_fold(&bm, &bl, bacc, 1, pm, pl, pacc, 2);
    const double w0 = exp(-3.0), w1 = exp(-2.0);
    assert_true(bm == 3.0f);
    assert_true(fabs(bl - (1.0 * w0 + 2.0 * w1 + 0.5)) < 1e-6);
    assert_true(fabs(bacc[0] - (1.0 * w0 - 1.0 * w1 + 6.0)) < 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lse_fold_equals_one_pass),
        cmocka_unit_test(test_lse_fold_empty_is_identity),
        cmocka_unit_test(test_lse_fold_hand_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
